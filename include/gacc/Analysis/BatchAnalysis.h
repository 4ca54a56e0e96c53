//===- BatchAnalysis.h - batch dataflow analysis ----------------*- C++ -*-===//
//
// The batch dataflow analysis of DESIGN.md §2: follows the sample dimension
// from the `gacc.batch` arguments through every op of a training step and
// classifies each value as invariant, per-sample, partial, prologue statistic,
// epilogue, or (when allowed) micro-batch statistic.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_ANALYSIS_BATCHANALYSIS_H
#define GACC_ANALYSIS_BATCHANALYSIS_H

#include "gacc/Dialect/Gacc/IR/StepSignature.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::gacc {

/// The class of a value (and of the op that defines it).
enum class BatchClass {
  /// Does not depend on batch contents: computed once before the regions.
  Invariant,
  /// Carries the sample dimension: computed in each region on its slice.
  PerSample,
  /// A reduction over the sample dimension with a splittable combiner.
  Partial,
  /// Depends on partials: computed once after the final region.
  Epilogue,
  /// A parameter-free batch statistic that flows back into per-sample work:
  /// computed over the whole batch before the regions.
  Prologue,
  /// A parameter-dependent batch statistic accepted with
  /// `allow-micro-batch-statistics`: computed inside each region on the
  /// region's samples (PyTorch's per-micro-batch semantics).
  MicroBatchStatistic,
};

/// How the partial results of a reduction combine: the body's combining op
/// (MaxF: arith.maximumf, NaN-propagating; MaxNumF: arith.maxnumf, which
/// ignores a NaN operand; likewise for min).
enum class Combiner { None, AddF, AddI, MaxF, MinF, MaxNumF, MinNumF };

/// Returns the combiner that `op` (a reduction body's combining op, or an op
/// marked `gacc.combine`) applies, or None.
Combiner getCombiner(Operation *op);

/// Returns a short lowercase name for `kind` ("per-sample", ...).
StringRef stringifyBatchClass(BatchClass kind);

/// What the analysis knows about one value.
struct BatchValueInfo {
  BatchClass kind = BatchClass::Invariant;
  /// PerSample: the dimension of the value that carries samples.
  int64_t dim = -1;
  /// PerSample: elements per sample along `dim` (a [B, T] batch collapsed to
  /// [B * T] has factor T).
  int64_t factor = 1;
  /// Whether the value depends on a `gacc.param` argument.
  bool dependsOnParam = false;
  /// PerSample and Partial: the batch argument the samples come from.
  int64_t originArg = -1;
};

/// What the analysis knows about one op.
struct BatchOpInfo {
  BatchClass kind = BatchClass::Invariant;
  /// PerSample and Partial linalg ops: the loop dimension over samples and
  /// the elements per sample along it.
  int64_t loopDim = -1;
  int64_t factor = 1;
  /// Partial: the combiner of each result.
  SmallVector<Combiner> combiners;
};

/// Options of the analysis.
struct BatchAnalysisOptions {
  bool allowMicroBatchStatistics = false;
};

/// The batch dataflow analysis of one training-step function.
class BatchAnalysis {
public:
  /// Analyzes `func`. Emits a diagnostic naming the offending op and returns
  /// failure when the step is outside the supported contract.
  static FailureOr<BatchAnalysis> run(func::FuncOp func,
                                      const BatchAnalysisOptions &options);

  /// The number of samples of the rank's batch (B).
  int64_t getBatchSize() const { return batchSize; }

  const BatchValueInfo &getInfo(Value value) const;
  const BatchOpInfo &getInfo(Operation *op) const;
  BatchClass getClass(Value value) const { return getInfo(value).kind; }
  BatchClass getClass(Operation *op) const { return getInfo(op).kind; }

private:
  BatchAnalysis() = default;
  int64_t batchSize = 0;
  DenseMap<Value, BatchValueInfo> values;
  DenseMap<Operation *, BatchOpInfo> ops;
  friend class BatchAnalysisBuilder;
};

/// Checks the role attributes of `func` against each other: a `gacc.loss`
/// result, at least one batch argument, one sample count for all batch
/// arguments. Emits diagnostics.
LogicalResult verifyStepRoles(func::FuncOp func);

} // namespace mlir::gacc

#endif // GACC_ANALYSIS_BATCHANALYSIS_H
