//===- Utils.h - helpers shared by the gacc passes --------------*- C++ -*-===//
//
// Small IR helpers used by several gacc passes: recognizing fills, building
// the ops that combine partials, flattening tensors into buckets, cleanup.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_UTILS_H
#define GACC_TRANSFORMS_UTILS_H

#include "gacc/Analysis/BatchAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Threading.h"

#include <functional>

namespace mlir::gacc {

/// Returns true when `value` is a `linalg.fill` of the constant `scalar`.
bool isFillOf(Value value, TypedAttr scalar);

/// Returns the combiner of `op`, an op marked `gacc.combine`.
Combiner getCombiner(Operation *op);

/// Creates the elementwise op that combines two partials with `combiner`,
/// marked `gacc.combine`.
Value createCombine(OpBuilder &builder, Location loc, Combiner combiner,
                    Value lhs, Value rhs);

/// How a float constant stands for the sample count B of a batch.
enum class SampleCountForm { Count, Reciprocal };

/// Returns how `cst` stands for the sample count `batchSize`: a float
/// constant (scalar or splat) equal to B or 1/B that no comparison, min or
/// max reads (a clamp bound such as ReLU6's 6 is not a count). The rule by
/// which gacc-runtime-batch-size and buildStepForBatchSize recognize sample
/// counts used as values.
std::optional<SampleCountForm> matchSampleCount(arith::ConstantOp cst,
                                                int64_t batchSize);

/// Returns the `gacc.sample_count` argument of `func` (runtime-batch-size),
/// appending it as `tensor<i64>` if the function has none.
BlockArgument getOrAddSampleCountArgument(func::FuncOp func);

/// Replaces `tensor.dim` of static dimensions with constants.
void foldStaticDims(func::FuncOp func);

/// Erases ops of `block` (not nested ones) that are trivially dead.
void eraseDeadOps(Block &block);

/// Reshapes a ranked tensor into a 1-D tensor of the same elements.
Value flattenTensor(OpBuilder &builder, Location loc, Value value);

/// Returns the value that `view` is a view of, through any chain of
/// single-result view-like ops (`memref.subview`, `memref.view`,
/// `memref.cast`, reshapes, ...).
Value getViewRoot(Value view);

/// Reshapes a 1-D tensor into `type` (the inverse of flattenTensor).
Value unflattenTensor(OpBuilder &builder, Location loc, Value flat,
                      RankedTensorType type);

/// Extracts elements [offset, offset + size) of the 1-D tensor `source`.
Value extractFlatSlice(OpBuilder &builder, Location loc, Value source,
                       int64_t offset, int64_t size);

/// Inserts the 1-D tensor `source` into the 1-D tensor `dest` at `offset`.
Value insertFlatSlice(OpBuilder &builder, Location loc, Value source,
                      Value dest, int64_t offset);

/// Builds, next to `func`, the same step written for `size` samples (the
/// "eager" view of one micro-batch): batch arguments and per-sample values
/// have `size` samples, and the sample-count constants B and 1/B become size
/// and 1/size, as a user's step for that batch would normalize. Used by
/// gacc-check for the eager "loss ÷ m" recipe.
FailureOr<func::FuncOp> buildStepForBatchSize(func::FuncOp func,
                                              const BatchAnalysis &analysis,
                                              int64_t size, StringRef name);

/// Fails with an error at the first `gacc.micro_batch` op of `func` when the
/// step has already been split into micro-batch regions (gacc-pipeline run
/// twice), instead of letting the batch analysis reject the region op.
LogicalResult verifyNotMicroBatched(func::FuncOp func);

/// Declared first in a gacc pass's runOnOperation: when the pass returns
/// without having reported an error, verifies the IR it produced and turns a
/// verifier failure into "internal error: pass 'gacc-x' produced invalid IR;
/// please report it ..." at the failing op's location, with the verifier's
/// message as a note, and fails the pass through `signalFailure`. So a gacc
/// bug never reaches the user as a raw upstream verifier message (the pass
/// manager's own verifier then sees valid IR or a failed pass).
///
/// `markVerified`, when given, runs once the IR verified. Passes give
///   [this] {
///     getAnalysisManager().invalidate({});
///     markAllAnalysesPreserved();
///   }
/// which drops every cached analysis itself (the pass changed the IR) and
/// tells the pass manager that nothing changed, so that its verifier does
/// not check the same IR a second time: verifying a step with m explicit
/// regions costs more than most passes that run on it.
class PassResultVerifier {
public:
  PassResultVerifier(Operation *op, StringRef passArgument,
                     std::function<void()> signalFailure,
                     std::function<void()> markVerified = nullptr);
  ~PassResultVerifier();
  PassResultVerifier(const PassResultVerifier &) = delete;
  PassResultVerifier &operator=(const PassResultVerifier &) = delete;

private:
  Operation *op;
  std::string passArgument;
  std::function<void()> signalFailure;
  std::function<void()> markVerified;
  uint64_t thread;
  bool sawError = false;
  std::optional<ScopedDiagnosticHandler> errorWatch;
};

/// In a gacc pass's runOnOperation: verifies the pass's result once with a
/// PassResultVerifier; when it verifies, the pass drops its cached analyses
/// and marks all preserved, so the pass manager does not verify the same IR
/// a second time (upstream's verifier was two thirds of the compile time of
/// deep graphs).
#define GACC_VERIFY_PASS_RESULT()                                              \
  ::mlir::gacc::PassResultVerifier gaccPassResultVerifier(                     \
      getOperation(), getArgument(), [this] { signalPassFailure(); },          \
      [this] {                                                                 \
        getAnalysisManager().invalidate({});                                   \
        markAllAnalysesPreserved();                                            \
      })

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_UTILS_H
