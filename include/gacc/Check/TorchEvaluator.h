//===- TorchEvaluator.h - evaluate a step with LibTorch ---------*- C++ -*-===//
//
// Evaluates an untransformed gacc training-step function op by op with
// LibTorch. This is the reference gacc-check compares compiled steps against:
// the evaluation runs in the graph's own types (float32 reference) or with
// every floating-point value in float64 (the accurate reference), and it is
// differentiable, so LibTorch autograd of the loss gives the gradients the
// graph's backward should have computed.
//
// Torch headers are slow to compile: include this header only where torch
// tensors are needed.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_CHECK_TORCHEVALUATOR_H
#define GACC_CHECK_TORCHEVALUATOR_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <torch/types.h>

namespace mlir::gacc {

/// Evaluates `func` (the ORIGINAL, untransformed training step) op by op with
/// LibTorch on `args` (one tensor per function argument, already in the dtype
/// the function expects, except: when `computeType` is kFloat64 every
/// floating-point value -- arguments, constants, intermediates -- is computed
/// in float64 instead of its MLIR float type; with kFloat32 the graph's own
/// types are used: f32 stays f32, bf16 stays bf16). Arguments of another dtype
/// of the same kind (float/integer) are converted (differentiably); a shape
/// mismatch is an error. Returns one tensor per function result, or failure
/// after emitting an error diagnostic at the op it cannot evaluate ("cannot
/// evaluate 'OPNAME' with LibTorch: <reason>") -- never a wrong number.
///
/// The evaluation is differentiable: when arguments require grad, torch
/// autograd works through the results.
///
/// Supported: func.return/func.call; arith and math (scalars inside linalg
/// bodies and elementwise on tensors; bitcasts between types of one width);
/// linalg structured ops, named (matmul, batch_matmul, transpose, broadcast,
/// reduce, map, fill, copy, the convolutions and poolings with strides and
/// dilations, ...) and generic, with any affine indexing maps on inputs
/// (projected permutations and constant indices are views, anything else,
/// e.g. `d2 + d5`, a gather) and projected permutations with constant indices
/// on outputs (keepdim `(d0, 0)`), reductions by a recognized combiner (add,
/// mul, max, min) or arg-max/min select, and linalg.index; linalg.softmax;
/// gacc.scatter_add (index_add; an index outside the rows is an error);
/// tensor.empty/extract_slice/insert_slice/collapse_shape/expand_shape/cast/
/// dim/extract (also with computed indices inside payloads, where an
/// out-of-bounds read is poison that a select may discard)/insert/
/// from_elements/splat/concat/pad/generate/bitcast/rank/reshape; dense and
/// dense_resource constants; ml_program.global_load_const (and global_load of
/// a global never stored); shard.all_reduce (identity: one rank). Ops whose
/// results are unused and that have no side effects are not evaluated.
FailureOr<SmallVector<torch::Tensor>>
evaluateWithTorch(func::FuncOp func, ArrayRef<torch::Tensor> args,
                  torch::ScalarType computeType);

/// The torch dtype that holds values of the MLIR scalar type `type` (float,
/// integer, index) when computing in `computeType` (kFloat64 maps every float
/// type to kDouble; kFloat32 keeps f16/bf16/f32/f64). Integers map to the
/// signed torch integer of their width (i1 -> kBool, index -> kLong). Returns
/// std::nullopt for types torch cannot hold.
/// Evaluates `func` on several data-parallel ranks at once, in lockstep: one
/// argument list per rank; a `shard.all_reduce` combines the ranks' operands
/// (sum, average, max, min, product) as the data-parallel run would. With
/// one rank this is evaluateWithTorch. Returns the results of every rank.
FailureOr<SmallVector<SmallVector<torch::Tensor>>>
evaluateWithTorchOnRanks(func::FuncOp func,
                         ArrayRef<SmallVector<torch::Tensor>> rankArgs,
                         torch::ScalarType computeType);

std::optional<torch::ScalarType>
getTorchDType(Type type, torch::ScalarType computeType = torch::kFloat32);

/// The torch dtype of the element type of `type` (a shaped type, or a scalar
/// type standing for a 0-dim tensor).
std::optional<torch::ScalarType>
getTorchElementDType(Type type,
                     torch::ScalarType computeType = torch::kFloat32);

/// The MLIR scalar type for a torch dtype (kFloat -> f32, kBFloat16 -> bf16,
/// kLong -> i64, kBool -> i1, ...), or a null type.
Type getMlirElementType(torch::ScalarType dtype, MLIRContext *context);

/// The torch shape of `type`: the shape of a ranked tensor (dynamic dimensions
/// as ShapedType::kDynamic), {} for a scalar type; std::nullopt for unranked
/// or other types.
std::optional<SmallVector<int64_t>> getTorchShape(Type type);

/// The MLIR ranked tensor type of `tensor` (shape and dtype), or a null type
/// when its dtype has no MLIR equivalent.
RankedTensorType getMlirTensorType(const torch::Tensor &tensor,
                                   MLIRContext *context);

/// Whether `tensor` can stand for a value of `type` when computing in
/// `computeType`: same dtype (see getTorchElementDType) and same shape (a
/// dynamic dimension matches any size).
bool matchesType(const torch::Tensor &tensor, Type type,
                 torch::ScalarType computeType = torch::kFloat32);

} // namespace mlir::gacc

#endif // GACC_CHECK_TORCHEVALUATOR_H
