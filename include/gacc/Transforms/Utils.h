//===- Utils.h - helpers shared by the gacc passes --------------*- C++ -*-===//
//
// Helpers of the gradient-accumulation transforms that know what a training
// step is: combining partials, sample counts, flattening tensors into
// buckets, refusing a step that is already micro-batched. IR helpers that
// know nothing of gacc are in gacc/Support/IRUtils.h, the verification of a
// pass's result in gacc/Support/VerifyPassResult.h.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_UTILS_H
#define GACC_TRANSFORMS_UTILS_H

#include "gacc/Analysis/BatchAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::gacc {

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

/// Whether a batch argument of `func` has a dynamic sample dimension
/// (`tensor<?x...>`, before gacc-prepare-step specializes it).
bool hasDynamicSampleDimension(func::FuncOp func);

/// Returns the `gacc.sample_count` argument of `func` (runtime-batch-size),
/// appending it as `tensor<i64>` if the function has none.
BlockArgument getOrAddSampleCountArgument(func::FuncOp func);

/// Reshapes a ranked tensor into a 1-D tensor of the same elements.
Value flattenTensor(OpBuilder &builder, Location loc, Value value);

/// Reshapes a 1-D tensor into `type` (the inverse of flattenTensor).
Value unflattenTensor(OpBuilder &builder, Location loc, Value flat,
                      RankedTensorType type);

/// Extracts elements [offset, offset + size) of the 1-D tensor `source`.
Value extractFlatSlice(OpBuilder &builder, Location loc, Value source,
                       int64_t offset, int64_t size);

/// Inserts the 1-D tensor `source` into the 1-D tensor `dest` at `offset`.
Value insertFlatSlice(OpBuilder &builder, Location loc, Value source,
                      Value dest, int64_t offset);

/// Fails with an error at the first `gacc.micro_batch` op of `func` when the
/// step has already been split into micro-batch regions (gacc-pipeline run
/// twice), instead of letting the batch analysis reject the region op.
LogicalResult verifyNotMicroBatched(func::FuncOp func);

/// Inlines every function that `func` calls, at any depth, so that the
/// training step is one function (inlined ops keep a CallSiteLoc naming the
/// call). A call of an external declaration, a recursive call, a call of a
/// multi-block function or an indirect call is an error at the call (with
/// notes for the chain of calls that reached it), and nothing is changed.
/// Private callees left without uses are erased.
LogicalResult inlineStepCalls(func::FuncOp func);

/// Makes the scalar arguments and results of `func` (`f32`, `i64`, `index`,
/// any float or integer) rank-0 tensors: an argument is read with
/// `tensor.extract`, a result returned through `tensor.from_elements`. An
/// `index` becomes `tensor<i64>` (with `arith.index_cast`). Roles stay on
/// their positions.
LogicalResult boxScalarBoundary(func::FuncOp func);

/// Raises every perfect `scf.for` nest of `func`'s body that reads a value
/// computed from a batch argument into the `linalg.generic` it writes out
/// (the rules are in gacc/Analysis/LoopNest.h); other loops stay. Returns
/// whether it raised any.
bool raiseLoopNests(func::FuncOp func);

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_UTILS_H
