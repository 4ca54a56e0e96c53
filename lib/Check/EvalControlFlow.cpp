//===- EvalControlFlow.cpp - calls, scf and affine with LibTorch ----------===//
//
// The LibTorch evaluator (TorchEvaluator.cpp) on control flow outside
// payloads: func.call (a nested evaluator for the callee), the blocks of
// regions, scf.if/for/while/index_switch/execute_region on scalar conditions
// and bounds (schedules on the step counter, loops over state), and
// affine.apply/min/max on index scalars or elementwise inside payloads.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorImpl.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

using namespace mlir;
using namespace mlir::gacc::torch_eval;

/// The function `call` calls; throws when it has no body.
static func::FuncOp getCallee(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (!callee || callee.isExternal())
    unsupported("the callee has no body");
  return callee;
}

LogicalResult Evaluator::evalCall(func::CallOp op) {
  func::FuncOp callee = getCallee(op);
  SmallVector<Tensor> args =
      llvm::map_to_vector(op.getOperands(), [&](Value v) { return get(v); });
  std::unique_ptr<Evaluator> nested = makeCallee();
  FailureOr<SmallVector<Tensor>> results = nested->run(callee, args);
  if (failed(results))
    return failure();
  for (auto [result, t] : llvm::zip_equal(op.getResults(), *results))
    set(result, t);
  return success();
}

LogicalResult Evaluator::evalBlock(Block &block,
                                   SmallVectorImpl<Tensor> &yielded) {
  llvm::DenseSet<Operation *> live = getLiveOps(block);
  for (Operation &inner : block) {
    if (!live.contains(&inner))
      continue;
    if (inner.hasTrait<OpTrait::IsTerminator>()) {
      yielded.clear();
      for (Value v : inner.getOperands())
        yielded.push_back(get(v));
      return success();
    }
    if (failed(evalOp(&inner, nullptr)))
      return failure();
  }
  unsupported("a block without a terminator");
}

/// The value of an integer or index scalar.
static int64_t scalarInt(const Tensor &t) {
  if (t.dim() != 0 ||
      !at::isIntegralType(t.scalar_type(), /*includeBool=*/true))
    unsupported("expected an integer scalar");
  return t.item<int64_t>();
}

LogicalResult Evaluator::evalIf(scf::IfOp op) {
  Tensor condition = get(op.getCondition());
  if (condition.dim() != 0)
    unsupported("expected a scalar condition");
  Region &region =
      condition.item<bool>() ? op.getThenRegion() : op.getElseRegion();
  SmallVector<Tensor> yielded;
  if (!region.empty() && failed(evalBlock(region.front(), yielded)))
    return failure();
  for (auto [result, t] : llvm::zip_equal(op.getResults(), yielded))
    set(result, t);
  return success();
}

LogicalResult Evaluator::evalFor(scf::ForOp op) {
  if (op.getUnsignedCmp())
    unsupported("loops with an unsigned comparison are not supported");
  int64_t lower = scalarInt(get(op.getLowerBound()));
  int64_t upper = scalarInt(get(op.getUpperBound()));
  int64_t step = scalarInt(get(op.getStep()));
  if (step <= 0)
    unsupported("the loop's step is not positive");
  constexpr uint64_t kMaxTrips = uint64_t(1) << 20;
  uint64_t trips =
      upper > lower
          ? (static_cast<uint64_t>(upper) - static_cast<uint64_t>(lower) - 1) /
                    static_cast<uint64_t>(step) +
                1
          : 0;
  if (trips > kMaxTrips)
    unsupported("loops of more than 2^20 iterations are not supported");
  SmallVector<Tensor> carried =
      llvm::map_to_vector(op.getInitArgs(), [&](Value v) { return get(v); });
  Value iv = op.getInductionVar();
  for (uint64_t i = 0; i < trips; ++i) {
    int64_t index = lower + static_cast<int64_t>(i) * step;
    set(iv, at::scalar_tensor(index, at::TensorOptions(dtypeOf(iv.getType()))));
    for (auto [arg, t] : llvm::zip_equal(op.getRegionIterArgs(), carried))
      set(arg, t);
    if (failed(evalBlock(*op.getBody(), carried)))
      return failure();
  }
  for (auto [result, t] : llvm::zip_equal(op.getResults(), carried))
    set(result, t);
  return success();
}

LogicalResult Evaluator::evalWhile(scf::WhileOp op) {
  constexpr uint64_t kMaxTrips = uint64_t(1) << 20;
  SmallVector<Tensor> carried =
      llvm::map_to_vector(op.getInits(), [&](Value v) { return get(v); });
  Block &before = op.getBefore().front();
  Block &after = op.getAfter().front();
  for (uint64_t trip = 0;; ++trip) {
    if (trip > kMaxTrips)
      unsupported("loops of more than 2^20 iterations are not supported");
    for (auto [arg, t] : llvm::zip_equal(before.getArguments(), carried))
      set(arg, t);
    // scf.condition's operands: the condition, then what it forwards.
    SmallVector<Tensor> forwarded;
    if (failed(evalBlock(before, forwarded)))
      return failure();
    Tensor condition = forwarded.front();
    if (condition.dim() != 0)
      unsupported("expected a scalar condition");
    forwarded.erase(forwarded.begin());
    if (!condition.item<bool>()) {
      for (auto [result, t] : llvm::zip_equal(op.getResults(), forwarded))
        set(result, t);
      return success();
    }
    for (auto [arg, t] : llvm::zip_equal(after.getArguments(), forwarded))
      set(arg, t);
    if (failed(evalBlock(after, carried)))
      return failure();
  }
}

LogicalResult Evaluator::evalIndexSwitch(scf::IndexSwitchOp op) {
  int64_t selector = scalarInt(get(op.getArg()));
  Region *region = &op.getDefaultRegion();
  for (auto [value, caseRegion] :
       llvm::zip_equal(op.getCases(), op.getCaseRegions()))
    if (value == selector) {
      region = &caseRegion;
      break;
    }
  SmallVector<Tensor> yielded;
  if (failed(evalBlock(region->front(), yielded)))
    return failure();
  for (auto [result, t] : llvm::zip_equal(op.getResults(), yielded))
    set(result, t);
  return success();
}

LogicalResult Evaluator::evalExecuteRegion(scf::ExecuteRegionOp op) {
  if (!op.getRegion().hasOneBlock())
    unsupported("an scf.execute_region of several blocks");
  SmallVector<Tensor> yielded;
  if (failed(evalBlock(op.getRegion().front(), yielded)))
    return failure();
  for (auto [result, t] : llvm::zip_equal(op.getResults(), yielded))
    set(result, t);
  return success();
}

/// The values of `expr` for index tensors `dims` and `symbols` (broadcast).
static Tensor evalAffineExpr(AffineExpr expr, ArrayRef<Tensor> dims,
                             ArrayRef<Tensor> symbols) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dims[dim.getPosition()];
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr))
    return symbols[symbol.getPosition()];
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return at::scalar_tensor(constant.getValue(), at::TensorOptions(at::kLong));
  auto binary = cast<AffineBinaryOpExpr>(expr);
  Tensor lhs = evalAffineExpr(binary.getLHS(), dims, symbols);
  Tensor rhs = evalAffineExpr(binary.getRHS(), dims, symbols);
  if (binary.getKind() != AffineExprKind::Add &&
      binary.getKind() != AffineExprKind::Mul && at::any(rhs <= 0).item<bool>())
    unsupported("affine division or modulo by a value that is not positive");
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    return lhs + rhs;
  case AffineExprKind::Mul:
    return lhs * rhs;
  case AffineExprKind::FloorDiv:
    return at::div(lhs, rhs, "floor");
  case AffineExprKind::CeilDiv:
    return at::neg(at::div(at::neg(lhs), rhs, "floor"));
  case AffineExprKind::Mod:
    return at::remainder(lhs, rhs);
  default:
    unsupported("unsupported affine expression " + toString(expr));
  }
}

void Evaluator::evalAffine(Operation *op) {
  AffineMap map;
  ValueRange operands;
  if (auto apply = dyn_cast<affine::AffineApplyOp>(op)) {
    map = apply.getAffineMap();
    operands = apply.getMapOperands();
  } else if (auto min = dyn_cast<affine::AffineMinOp>(op)) {
    map = min.getAffineMap();
    operands = min.getMapOperands();
  } else {
    auto max = cast<affine::AffineMaxOp>(op);
    map = max.getAffineMap();
    operands = max.getMapOperands();
  }
  SmallVector<Tensor> values = llvm::map_to_vector(operands, [&](Value v) {
    Tensor t = get(v);
    if (!at::isIntegralType(t.scalar_type(), /*includeBool=*/false))
      unsupported("expected index operands");
    return t.to(at::kLong);
  });
  ArrayRef<Tensor> all(values);
  ArrayRef<Tensor> dims = all.take_front(map.getNumDims());
  ArrayRef<Tensor> symbols = all.drop_front(map.getNumDims());
  Tensor value;
  for (AffineExpr expr : map.getResults()) {
    Tensor r = evalAffineExpr(expr, dims, symbols);
    if (!value.defined())
      value = r;
    else if (isa<affine::AffineMinOp>(op))
      value = at::minimum(value, r);
    else
      value = at::maximum(value, r);
  }
  if (!value.defined())
    unsupported("an affine map without results");
  set(op->getResult(0), value.clone());
}
