//===- TorchEvaluator.cpp - evaluate a training step with LibTorch --------===//
//
// An interpreter of training-step functions on LibTorch tensors. Every SSA
// value of the function is a torch tensor (scalars are 0-dim tensors). A
// linalg structured op is evaluated on whole tensors: each operand is
// broadcast to the iteration space by its indexing map (a view for projected
// permutations and constant indices, a gather for any other affine map, e.g.
// convolution windows), the payload is evaluated once with torch's elementwise
// ops, reductions are recognized by their combiner (add -> sum, mul -> prod,
// max/min -> amax/amin, arg-max/min selects), and outputs with constant
// indices (keepdim `(d0, 0)`) are written at those positions. Everything is a
// torch op, so the evaluation is differentiable.
//
// Anything the evaluator cannot represent exactly is an error at the op, never
// an approximation.
//
// This file is the driver: it binds the arguments, skips dead ops, runs each
// op through the evaluator of its family (EvalArithMath.cpp, EvalTensor.cpp,
// EvalLinalg.cpp, EvalControlFlow.cpp; EvalRanks.cpp evaluates several ranks
// in lockstep) and checks what it computed; it also holds the public type
// helpers. EvaluatorImpl.h declares what the files share.
//
//===----------------------------------------------------------------------===//

#include "gacc/Check/TorchEvaluator.h"

#include "EvaluatorImpl.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <ATen/ATen.h>

#include <optional>

using namespace mlir;
using namespace mlir::gacc::torch_eval;

//===----------------------------------------------------------------------===//
// Type conversion helpers (public).
//===----------------------------------------------------------------------===//

std::optional<torch::ScalarType>
mlir::gacc::getTorchDType(Type type, torch::ScalarType computeType) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    if (computeType == torch::kFloat64)
      return torch::kFloat64;
    if (floatType.isF16())
      return torch::kFloat16;
    if (floatType.isBF16())
      return torch::kBFloat16;
    if (floatType.isF32())
      return torch::kFloat32;
    if (floatType.isF64())
      return torch::kFloat64;
    return std::nullopt;
  }
  if (isa<IndexType>(type))
    return torch::kInt64;
  if (auto intType = dyn_cast<IntegerType>(type)) {
    switch (intType.getWidth()) {
    case 1:
      return torch::kBool;
    case 8:
      return intType.isUnsigned() ? torch::kUInt8 : torch::kInt8;
    case 16:
      return torch::kInt16;
    case 32:
      return torch::kInt32;
    case 64:
      return torch::kInt64;
    default:
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<torch::ScalarType>
mlir::gacc::getTorchElementDType(Type type, torch::ScalarType computeType) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return getTorchDType(shaped.getElementType(), computeType);
  return getTorchDType(type, computeType);
}

Type mlir::gacc::getMlirElementType(torch::ScalarType dtype,
                                    MLIRContext *context) {
  Builder b(context);
  switch (dtype) {
  case torch::kFloat16:
    return b.getF16Type();
  case torch::kBFloat16:
    return b.getBF16Type();
  case torch::kFloat32:
    return b.getF32Type();
  case torch::kFloat64:
    return b.getF64Type();
  case torch::kBool:
    return b.getI1Type();
  case torch::kInt8:
    return b.getI8Type();
  case torch::kUInt8:
    return IntegerType::get(context, 8, IntegerType::Unsigned);
  case torch::kInt16:
    return b.getI16Type();
  case torch::kInt32:
    return b.getI32Type();
  case torch::kInt64:
    return b.getI64Type();
  default:
    return Type();
  }
}

std::optional<SmallVector<int64_t>> mlir::gacc::getTorchShape(Type type) {
  if (auto ranked = dyn_cast<RankedTensorType>(type))
    return SmallVector<int64_t>(ranked.getShape());
  if (isa<ShapedType>(type))
    return std::nullopt;
  if (type.isIntOrIndexOrFloat())
    return SmallVector<int64_t>();
  return std::nullopt;
}

RankedTensorType mlir::gacc::getMlirTensorType(const torch::Tensor &tensor,
                                               MLIRContext *context) {
  Type elementType = getMlirElementType(tensor.scalar_type(), context);
  if (!elementType)
    return RankedTensorType();
  return RankedTensorType::get(
      ArrayRef<int64_t>(tensor.sizes().data(), tensor.sizes().size()),
      elementType);
}

bool mlir::gacc::matchesType(const torch::Tensor &tensor, Type type,
                             torch::ScalarType computeType) {
  if (!tensor.defined())
    return false;
  std::optional<torch::ScalarType> dtype =
      getTorchElementDType(type, computeType);
  std::optional<SmallVector<int64_t>> shape = getTorchShape(type);
  if (!dtype || !shape || tensor.scalar_type() != *dtype ||
      tensor.dim() != static_cast<int64_t>(shape->size()))
    return false;
  for (auto [i, size] : llvm::enumerate(*shape))
    if (!ShapedType::isDynamic(size) && tensor.size(i) != size)
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// The evaluator: arguments, dead ops, dispatch.
//===----------------------------------------------------------------------===//

LogicalResult Evaluator::bind(func::FuncOp func, ArrayRef<Tensor> args) {
  if (func.isExternal())
    return emitFail(func) << "the function has no body";
  if (!llvm::hasSingleElement(func.getBody()))
    return emitFail(func) << "only single-block functions are supported";
  if (args.size() != func.getNumArguments())
    return emitFail(func) << "the function has " << func.getNumArguments()
                          << " arguments, but " << args.size()
                          << " tensors were given";
  Block &entry = func.front();
  for (auto [i, arg] : llvm::enumerate(args)) {
    Type type = func.getArgumentTypes()[i];
    std::optional<at::ScalarType> dtype =
        gacc::getTorchElementDType(type, computeType);
    std::optional<SmallVector<int64_t>> shape = gacc::getTorchShape(type);
    if (!dtype || !shape)
      return emitFail(func) << "argument #" << i << " has type " << type
                            << ", which has no LibTorch equivalent";
    if (!arg.defined())
      return emitFail(func) << "argument #" << i << " is an undefined tensor";
    Tensor t = arg;
    bool shapeOk = t.dim() == static_cast<int64_t>(shape->size());
    for (auto [d, size] : llvm::enumerate(*shape))
      shapeOk = shapeOk && (ShapedType::isDynamic(size) || t.size(d) == size);
    if (!shapeOk)
      return emitFail(func) << "argument #" << i << " has shape "
                            << toString(t.sizes()) << ", but the function "
                            << "expects " << type;
    if (t.scalar_type() != *dtype) {
      bool bothFloat =
          at::isFloatingType(t.scalar_type()) && at::isFloatingType(*dtype);
      bool bothInt = at::isIntegralType(t.scalar_type(), false) &&
                     at::isIntegralType(*dtype, false);
      if (!bothFloat && !bothInt)
        return emitFail(func)
               << "argument #" << i << " has dtype "
               << c10::toString(t.scalar_type()) << ", but the function "
               << "expects " << type << " (dtype " << c10::toString(*dtype)
               << ")";
      t = t.to(*dtype);
    }
    set(entry.getArgument(i), t);
  }
  return success();
}

llvm::DenseSet<Operation *> mlir::gacc::torch_eval::getLiveOps(Block &block) {
  llvm::DenseSet<Operation *> live;
  for (Operation &op : llvm::reverse(block)) {
    bool isLive =
        op.hasTrait<OpTrait::IsTerminator>() || !isMemoryEffectFree(&op);
    for (Value result : op.getResults()) {
      for (Operation *user : result.getUsers()) {
        Operation *ancestor = block.findAncestorOpInBlock(*user);
        isLive |= !ancestor || live.contains(ancestor);
      }
    }
    if (isLive)
      live.insert(&op);
  }
  return live;
}

FailureOr<SmallVector<Tensor>> Evaluator::run(func::FuncOp func,
                                              ArrayRef<Tensor> args) {
  if (failed(bind(func, args)))
    return failure();
  Block &entry = func.front();
  llvm::DenseSet<Operation *> live = getLiveOps(entry);
  for (Operation &op : entry) {
    if (!live.contains(&op))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Tensor> results;
      for (Value v : ret.getOperands())
        results.push_back(values.lookup(v));
      return results;
    }
    if (failed(evalOp(&op, nullptr)))
      return failure();
  }
  return emitFail(func) << "the function does not end with func.return";
}

LogicalResult Evaluator::evalOp(Operation *op, Payload *payload) {
  try {
    if (failed(evalOpImpl(op, payload)))
      return failure();
    // Guard against evaluator bugs: every result has the dtype (and, outside
    // payloads, the shape) of its MLIR type.
    for (OpResult result : op->getResults()) {
      auto it = values.find(result);
      if (it == values.end())
        unsupported("internal error: result #" +
                    Twine(result.getResultNumber()) + " was not computed");
      const Tensor &t = it->second;
      if (!t.defined() && result.use_empty())
        continue; // an unused result that was not computed
      if (!t.defined() || t.scalar_type() != dtypeOf(result.getType()) ||
          (!payload && !gacc::matchesType(t, result.getType(), computeType)))
        unsupported("internal error: result #" +
                    Twine(result.getResultNumber()) + " has dtype " +
                    c10::toString(t.scalar_type()) + " and shape " +
                    toString(t.sizes()) + ", but its type is " +
                    toString(result.getType()));
    }
    return success();
  } catch (const Unsupported &e) {
    return emitFail(op) << e.what();
  } catch (const c10::Error &e) {
    return emitFail(op) << "LibTorch error: " << e.what_without_backtrace();
  } catch (const std::exception &e) {
    return emitFail(op) << e.what();
  }
}

LogicalResult Evaluator::evalOpImpl(Operation *op, Payload *payload) {
  auto isSupportedType = [](Type type) {
    return !isa<ShapedType>(type) || isa<RankedTensorType>(type);
  };
  if (!llvm::all_of(op->getOperandTypes(), isSupportedType) ||
      !llvm::all_of(op->getResultTypes(), isSupportedType))
    unsupported("only scalars and ranked tensors are supported");
  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    evalConstant(constant);
    return success();
  }
  if (isa<math::SincosOp, arith::MulUIExtendedOp, arith::MulSIExtendedOp,
          arith::AddUIExtendedOp>(op)) {
    evalTwoResults(op);
    return success();
  }
  if (dialect == "arith" || dialect == "math") {
    evalArithMath(op);
    return success();
  }
  if (isa<affine::AffineApplyOp, affine::AffineMinOp, affine::AffineMaxOp>(
          op)) {
    evalAffine(op);
    return success();
  }
  if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    if (!payload)
      unsupported("linalg.index outside a linalg payload");
    uint64_t dim = index.getDim();
    if (dim >= payload->loopSizes.size())
      unsupported("loop dimension out of range");
    SmallVector<int64_t> shape(payload->loopSizes.size(), 1);
    shape[dim] = payload->loopSizes[dim];
    set(index.getResult(),
        at::arange(payload->loopSizes[dim], at::TensorOptions(at::kLong))
            .reshape(toAt(shape)));
    return success();
  }
  if (dialect == "tensor") {
    if (!payload && isa<tensor::GenerateOp, tensor::PadOp>(op))
      return evalRegionTensorOp(op);
    evalTensorOp(op, payload);
    return success();
  }
  if (payload)
    unsupported("operation inside a linalg payload");
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
    Tensor input = get(softmax.getInput());
    set(softmax.getResult()[0],
        at::softmax(input, static_cast<int64_t>(softmax.getDimension()))
            .to(dtypeOf(softmax.getResult()[0].getType())));
    return success();
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return evalLinalg(linalgOp);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return evalIf(ifOp);
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    return evalFor(forOp);
  if (auto whileOp = dyn_cast<scf::WhileOp>(op))
    return evalWhile(whileOp);
  if (auto switchOp = dyn_cast<scf::IndexSwitchOp>(op))
    return evalIndexSwitch(switchOp);
  if (auto executeOp = dyn_cast<scf::ExecuteRegionOp>(op))
    return evalExecuteRegion(executeOp);
  if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
    if (acrossRanks)
      unsupported("a collective that the ranks do not reach in lockstep "
                  "(only in the function body or in functions it calls)");
    // One rank: every reduction kind is the identity.
    set(allReduce.getResult(),
        get(allReduce.getInput()).to(dtypeOf(allReduce.getResult().getType())));
    return success();
  }
  if (auto call = dyn_cast<func::CallOp>(op))
    return evalCall(call);
  if (auto scatter = dyn_cast<gacc::ScatterAddOp>(op)) {
    evalScatterAdd(scatter);
    return success();
  }
  if (dialect == "ml_program") {
    evalGlobalLoad(op);
    return success();
  }
  unsupported("unsupported operation");
}

FailureOr<SmallVector<torch::Tensor>>
mlir::gacc::evaluateWithTorch(func::FuncOp func, ArrayRef<torch::Tensor> args,
                              torch::ScalarType computeType) {
  if (computeType != torch::kFloat32 && computeType != torch::kFloat64)
    return emitFail(func) << "the compute type must be kFloat32 or kFloat64";
  return Evaluator(computeType, 0).run(func, args);
}
