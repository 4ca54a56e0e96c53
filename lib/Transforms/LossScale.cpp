//===- LossScale.cpp - mixed-precision loss scaling -------------*- C++ -*-===//
//
// The gacc-loss-scale pass: PyTorch GradScaler's recipe, compiled into the
// micro-batched step. Each region's gradient contributions are multiplied by
// the scale S before they enter their accumulator (the backward is linear in
// the loss seed, so this is the seed scaled by S), the scaled accumulators
// are all-reduced as before, every gradient is unscaled once after its
// all-reduce, one found-inf flag over the unscaled gradients is reduced
// across ranks with max, the parameter and state updates keep their old
// values when the flag is set, and a dynamic scale is updated (backoff on
// overflow, growth after growth-interval clean steps). The loss and metrics
// are never scaled.
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

#define DEBUG_TYPE "gacc-loss-scale"

namespace mlir::gacc {
#define GEN_PASS_DEF_LOSSSCALEPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// Which kinds of step results a value flows into.
struct Reach {
  bool loss = false, metric = false, grad = false, update = false;
  bool any() const { return loss || metric || grad || update; }
};

struct LossScalePass : public gacc::impl::LossScalePassBase<LossScalePass> {
  using LossScalePassBase::LossScalePassBase;
  void runOnOperation() override;

private:
  LogicalResult runOnFunction(func::FuncOp func, bool dynamic, double init);
  Reach reachOf(func::FuncOp func, Value value);
  LogicalResult scaleContribution(linalg::LinalgOp op, unsigned result);
  Value scaleOf(Type elementType);
  Value elementwise(Location loc, Value tensor, Value scalar);

  OpBuilder *builder = nullptr;
  /// The f32 scale (a scalar) and its conversions to other float types.
  DenseMap<Type, Value> scales;
  /// Where scale conversions are created (before the first region).
  Operation *prologueEnd = nullptr;
};
} // namespace

Reach LossScalePass::reachOf(func::FuncOp func, Value value) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Reach reach;
  SmallVector<Value> worklist{value};
  DenseSet<Operation *> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *owner = use.getOwner();
      if (owner == ret.getOperation()) {
        unsigned j = use.getOperandNumber();
        if (func.getResultAttr(j, GaccDialect::kLossAttrName))
          reach.loss = true;
        else if (func.getResultAttr(j, GaccDialect::kMetricAttrName))
          reach.metric = true;
        else if (func.getResultAttr(j, GaccDialect::kGradAttrName))
          reach.grad = true;
        else
          reach.update = true;
        continue;
      }
      Operation *top = body.findAncestorOpInBlock(*owner);
      if (top && seen.insert(top).second)
        llvm::append_range(worklist, top->getResults());
    }
  }
  return reach;
}

Value LossScalePass::scaleOf(Type elementType) {
  if (Value cached = scales.lookup(elementType))
    return cached;
  OpBuilder::InsertionGuard guard(*builder);
  builder->setInsertionPointAfter(prologueEnd);
  Value f32 = scales.lookup(builder->getF32Type());
  Location loc = f32.getLoc();
  auto type = cast<FloatType>(elementType);
  Value converted =
      type.getWidth() < 32
          ? arith::TruncFOp::create(*builder, loc, type, f32).getResult()
          : arith::ExtFOp::create(*builder, loc, type, f32).getResult();
  prologueEnd = converted.getDefiningOp();
  scales[elementType] = converted;
  return converted;
}

/// Returns `tensor * scalar`, elementwise.
Value LossScalePass::elementwise(Location loc, Value tensor, Value scalar) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Value empty = tensor::EmptyOp::create(*builder, loc, type.getShape(),
                                        type.getElementType());
  AffineMap id = builder->getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      *builder, loc, type, ValueRange{tensor}, ValueRange{empty},
      ArrayRef<AffineMap>{id, id}, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value product = arith::MulFOp::create(b, l, args[0], scalar);
        linalg::YieldOp::create(b, l, product);
      });
  return generic.getResult(0);
}

/// Scales what reduction `op` adds into its accumulator `result` by S: for
/// a contraction `acc + a * b` one input is scaled (so GEMMs stay GEMMs),
/// otherwise the added term inside the body.
LogicalResult LossScalePass::scaleContribution(linalg::LinalgOp op,
                                               unsigned result) {
  Block *block = op.getBlock();
  auto yield = cast<linalg::YieldOp>(block->getTerminator());
  OpOperand *init = op.getDpsInitOperand(result);
  BlockArgument out = op.getMatchingBlockArgument(init);
  auto add = yield.getOperand(result).getDefiningOp<arith::AddFOp>();
  if (!add || (add.getLhs() != out && add.getRhs() != out) ||
      add.getLhs() == add.getRhs())
    return op.emitOpError("accumulates a gradient other than by arith.addf "
                          "into its output; loss-scale cannot scale it");
  Value term = add.getLhs() == out ? add.getRhs() : add.getLhs();
  auto mul = term.getDefiningOp<arith::MulFOp>();
  if (op.getNumDpsInits() == 1 && mul && mul->hasOneUse()) {
    for (Value factor : {mul.getLhs(), mul.getRhs()}) {
      auto arg = dyn_cast<BlockArgument>(factor);
      Value other = factor == mul.getLhs() ? mul.getRhs() : mul.getLhs();
      if (!arg || arg.getOwner() != block || factor == other ||
          !arg.hasOneUse() ||
          arg.getArgNumber() >= static_cast<unsigned>(op.getNumDpsInputs()))
        continue;
      OpOperand *input = op.getDpsInputOperand(arg.getArgNumber());
      auto type = dyn_cast<RankedTensorType>(input->get().getType());
      if (!type || !isa<FloatType>(type.getElementType()))
        continue;
      OpBuilder::InsertionGuard guard(*builder);
      builder->setInsertionPoint(op);
      input->set(elementwise(op.getLoc(), input->get(),
                             scaleOf(type.getElementType())));
      return success();
    }
  }
  OpBuilder::InsertionGuard guard(*builder);
  builder->setInsertionPoint(add);
  auto scaled = arith::MulFOp::create(*builder, add.getLoc(), term,
                                      scaleOf(term.getType()));
  add->replaceUsesOfWith(term, scaled);
  return success();
}

LogicalResult LossScalePass::runOnFunction(func::FuncOp func, bool dynamic,
                                           double init) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<gacc::MicroBatchOp> regions;
  for (Operation &op : body)
    if (auto region = dyn_cast<gacc::MicroBatchOp>(op))
      regions.push_back(region);
  if (regions.empty())
    return func.emitOpError("has no gacc.micro_batch regions; run "
                            "gacc-loss-scale after gacc-micro-batch");
  MLIRContext *context = func.getContext();
  OpBuilder b(context);
  builder = &b;
  Location loc = func.getLoc();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto scalarF32 = RankedTensorType::get({}, f32);
  auto scalarI64 = RankedTensorType::get({}, i64);

  // The step state: scale and growth tracker, at the end of the signature.
  unsigned numArgs = func.getNumArguments();
  unsigned numResults = func.getNumResults();
  Value scaleArg, trackerArg;
  if (dynamic) {
    auto stateAttrs = b.getDictionaryAttr(
        b.getNamedAttr(GaccDialect::kStateAttrName, b.getUnitAttr()));
    if (failed(func.insertArgument(numArgs, scalarF32, stateAttrs, loc)) ||
        failed(func.insertArgument(numArgs + 1, scalarI64, stateAttrs, loc)))
      return func.emitOpError("cannot add the loss-scale state arguments");
    scaleArg = func.getArgument(numArgs);
    trackerArg = func.getArgument(numArgs + 1);
  }

  // S (f32 scalar) and 1/S, before the first region.
  b.setInsertionPoint(regions.front());
  Value scale = dynamic
                    ? tensor::ExtractOp::create(b, loc, scaleArg, ValueRange{})
                          .getResult()
                    : arith::ConstantOp::create(b, loc, b.getF32FloatAttr(init))
                          .getResult();
  scales[f32] = scale;
  prologueEnd = scale.getDefiningOp();

  // Gradient partials: results of the last region that reach a gradient or
  // an update and not the loss.
  gacc::MicroBatchOp last = regions.back();
  SmallVector<unsigned> gradientPartials;
  for (OpResult result : last->getResults()) {
    Reach reach = reachOf(func, result);
    if (reach.loss && (reach.grad || reach.update))
      return last.emitOpError()
             << "result #" << result.getResultNumber()
             << " reaches both the loss and a gradient or update; "
                "loss-scale cannot tell whether to scale it";
    if (reach.loss || !(reach.grad || reach.update))
      continue;
    gradientPartials.push_back(result.getResultNumber());
  }
  if (gradientPartials.empty())
    return func.emitOpError("has no gradient accumulators to scale; "
                            "loss-scale needs gacc.grad or gacc.param_out "
                            "results computed from partials");

  // 1. Scale each region's contributions.
  for (gacc::MicroBatchOp region : regions) {
    auto yield = cast<gacc::YieldOp>(region.getBody().front().getTerminator());
    for (unsigned i : gradientPartials) {
      auto produced = dyn_cast<OpResult>(yield.getOperand(i));
      auto op = produced ? dyn_cast<linalg::LinalgOp>(produced.getOwner())
                         : linalg::LinalgOp();
      if (!op || !op->hasAttr(kPartialAttrName))
        return region.emitOpError()
               << "yields gradient #" << i
               << " not from a gacc.partial reduction; loss-scale expects "
                  "the form gacc-micro-batch produces";
      if (failed(scaleContribution(op, produced.getResultNumber())))
        return failure();
    }
  }

  // 2. Where the gradients are final: the views of bucket all-reduces that
  // reach gradients, and gradient partials that no all-reduce touches.
  b.setInsertionPointAfter(prologueEnd);
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0));
  Value inverse = arith::DivFOp::create(b, loc, one, scale);
  SmallVector<Value> finals;
  shard::AllReduceOp flagTemplate;
  for (Operation &op : body) {
    auto allReduce = dyn_cast<shard::AllReduceOp>(op);
    if (!allReduce || !allReduce->hasAttr(GaccDialect::kBucketAttrName))
      continue;
    flagTemplate = flagTemplate ? flagTemplate : allReduce;
    for (Operation *user : allReduce->getUsers()) {
      Reach reach = reachOf(func, user->getResult(0));
      if (reach.loss || !(reach.grad || reach.update))
        continue;
      if (!isa<tensor::ExtractSliceOp>(user))
        return user->emitOpError("reads a bucket other than as a slice; "
                                 "loss-scale cannot unscale it");
      finals.push_back(user->getResult(0));
    }
  }
  for (unsigned i : gradientPartials) {
    Value acc = last->getResult(i);
    bool bucketed = false;
    SmallVector<Value> worklist{acc};
    DenseSet<Operation *> seen;
    while (!worklist.empty() && !bucketed) {
      for (Operation *user : worklist.pop_back_val().getUsers()) {
        if (isa<shard::AllReduceOp>(user)) {
          bucketed = true;
          break;
        }
        if (user != ret.getOperation() && seen.insert(user).second)
          llvm::append_range(worklist, user->getResults());
      }
    }
    if (!bucketed)
      finals.push_back(acc);
  }

  // 3. Unscale each once, and reduce the found-inf flag over them.
  SmallVector<Value> unscaled;
  for (Value v : finals) {
    auto type = cast<RankedTensorType>(v.getType());
    auto elementType = dyn_cast<FloatType>(type.getElementType());
    if (!elementType)
      return func.emitOpError("has a non-float gradient accumulator; "
                              "loss-scale supports float gradients only");
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(v);
    Value factor =
        elementType == f32
            ? inverse
            : (elementType.getWidth() < 32
                   ? arith::TruncFOp::create(b, loc, elementType, inverse)
                         .getResult()
                   : arith::ExtFOp::create(b, loc, elementType, inverse)
                         .getResult());
    Value u = elementwise(loc, v, factor);
    v.replaceAllUsesExcept(u, u.getDefiningOp());
    unscaled.push_back(u);
  }
  b.setInsertionPoint(ret);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value flag =
      linalg::FillOp::create(
          b, loc, zero,
          tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, f32).getResult())
          .getResult(0);
  for (Value u : unscaled) {
    auto type = cast<RankedTensorType>(u.getType());
    auto elementType = cast<FloatType>(type.getElementType());
    SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(type.getRank()),
                                AffineMap::get(type.getRank(), 0, context)};
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::reduction);
    flag =
        linalg::GenericOp::create(
            b, loc, flag.getType(), ValueRange{u}, ValueRange{flag}, maps,
            iterators,
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value x = args[0];
              Value isNan =
                  arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNO, x, x);
              Value magnitude = math::AbsFOp::create(nb, l, x);
              Value inf = arith::ConstantOp::create(
                  nb, l,
                  nb.getFloatAttr(
                      elementType,
                      APFloat::getInf(elementType.getFloatSemantics())));
              Value isInf = arith::CmpFOp::create(
                  nb, l, arith::CmpFPredicate::OEQ, magnitude, inf);
              Value bad = arith::OrIOp::create(nb, l, isNan, isInf);
              Value oneF =
                  arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1.0));
              Value next = arith::SelectOp::create(nb, l, bad, oneF, args[1]);
              linalg::YieldOp::create(nb, l, next);
            })
            .getResult(0);
  }
  // One flag for all ranks: max over the data-parallel grid.
  if (flagTemplate)
    flag = shard::AllReduceOp::create(
        b, loc, flag.getType(), flagTemplate.getGridAttr(),
        flagTemplate.getGridAxesAttr(), flag,
        shard::ReductionKindAttr::get(context, shard::ReductionKind::Max));
  Value flagValue = tensor::ExtractOp::create(b, loc, flag, ValueRange{});
  Value found =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, flagValue, zero);

  // 4. Guard the updates: old parameters and state on overflow.
  SmallVector<Value> results(ret.getOperands());
  for (unsigned j = 0; j < numResults; ++j) {
    IntegerAttr index = func.getResultAttrOfType<IntegerAttr>(
        j, GaccDialect::kParamOutAttrName);
    if (!index)
      index = func.getResultAttrOfType<IntegerAttr>(
          j, GaccDialect::kStateOutAttrName);
    if (!index)
      continue;
    int64_t i = index.getInt();
    if (i < 0 || i >= numArgs ||
        func.getArgument(i).getType() != results[j].getType())
      return func.emitOpError()
             << "result #" << j << " updates argument #" << i
             << " of another type; loss-scale cannot keep the old value";
    results[j] =
        arith::SelectOp::create(b, loc, found, func.getArgument(i), results[j]);
  }

  // 5. The dynamic scale's update (GradScaler's _amp_update_scale_).
  if (dynamic) {
    Value s = tensor::ExtractOp::create(b, loc, scaleArg, ValueRange{});
    Value t = tensor::ExtractOp::create(b, loc, trackerArg, ValueRange{});
    auto cstF = [&](double v) {
      return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v))
          .getResult();
    };
    auto cstI = [&](int64_t v) {
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v))
          .getResult();
    };
    Value backedOff =
        arith::MulFOp::create(b, loc, s, cstF(backoffFactor.getValue()));
    Value next = arith::AddIOp::create(b, loc, t, cstI(1));
    Value due = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, next,
                                      cstI(growthInterval.getValue()));
    Value grown =
        arith::MulFOp::create(b, loc, s, cstF(growthFactor.getValue()));
    Value grownFinite = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OLT, math::AbsFOp::create(b, loc, grown),
        cstF(std::numeric_limits<double>::infinity()));
    Value grow = arith::AndIOp::create(b, loc, due, grownFinite);
    Value clean = arith::SelectOp::create(b, loc, grow, grown, s);
    Value cleanTracker = arith::SelectOp::create(b, loc, due, cstI(0), next);
    Value newScale = arith::SelectOp::create(b, loc, found, backedOff, clean);
    Value newTracker =
        arith::SelectOp::create(b, loc, found, cstI(0), cleanTracker);
    results.push_back(
        tensor::FromElementsOp::create(b, loc, scalarF32, newScale));
    results.push_back(
        tensor::FromElementsOp::create(b, loc, scalarI64, newTracker));
    for (unsigned k = 0; k < 2; ++k) {
      auto attrs = b.getDictionaryAttr(b.getNamedAttr(
          GaccDialect::kStateOutAttrName, b.getI64IntegerAttr(numArgs + k)));
      if (failed(func.insertResult(
              numResults + k, k ? Type(scalarI64) : Type(scalarF32), attrs)))
        return func.emitOpError("cannot add the loss-scale state results");
    }
  }
  ret->setOperands(results);
  return success();
}

void LossScalePass::runOnOperation() {
  StringRef mode = lossScale;
  bool dynamic = false;
  double init = lossScaleInit;
  if (mode == "none")
    return;
  if (mode == "dynamic") {
    dynamic = true;
  } else if (mode == "static") {
  } else if (mode.consume_front("static=")) {
    if (mode.getAsDouble(init)) {
      getOperation().emitError()
          << "expected a number in loss-scale=static=S, got '" << mode << "'";
      return signalPassFailure();
    }
  } else {
    getOperation().emitError()
        << "unknown loss-scale='" << lossScale
        << "' (expected none, static, static=S or dynamic)";
    return signalPassFailure();
  }
  if (!(init > 0) || !std::isfinite(init)) {
    getOperation().emitError()
        << "expected a positive finite loss scale, got " << init;
    return signalPassFailure();
  }
  if (dynamic && (!(growthFactor > 1.0) || !std::isfinite(growthFactor) ||
                  !(backoffFactor > 0.0) || !(backoffFactor < 1.0) ||
                  growthInterval < 1)) {
    getOperation().emitError()
        << "expected loss-scale-growth-factor > 1, loss-scale-backoff-factor "
           "in (0, 1) and loss-scale-growth-interval >= 1";
    return signalPassFailure();
  }
  func::FuncOp func = findTrainingStep(getOperation(), entry);
  if (!func || failed(runOnFunction(func, dynamic, init)))
    return signalPassFailure();
}
