//===- LossScale.cpp - mixed-precision loss scaling -------------*- C++ -*-===//
//
// The gacc-loss-scale pass: PyTorch GradScaler's recipe, compiled into the
// micro-batched step, before gacc-sink-all-reduce. Each region's gradient
// contributions are multiplied by the scale S before they enter their
// accumulator (the backward is linear in the loss seed, so this is the seed
// scaled by S; the first region's init too), the graph's sum/average
// all-reduces of an accumulator reduce it scaled and are unscaled once after
// it, every other use of an accumulator (an epilogue, a metric) reads it
// unscaled, one found-inf flag over the unscaled gradients is reduced
// across ranks with max, the parameter and state updates keep their old
// values when the flag is set, and a dynamic scale is updated (backoff on
// overflow, growth after growth-interval clean steps). The loss and metrics
// are never scaled.
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Transforms/LossScaleMode.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
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
  Value elementwise(Location loc, Value tensor, Value factor);

  OpBuilder *builder = nullptr;
  /// The scale as a rank-0 f32 tensor (an argument or a constant): every use
  /// is a linalg operand, so no scalar crosses from device memory to host
  /// code on the CUDA path.
  Value scaleTensor;
  /// The element types values are multiplied by S in.
  llvm::SetVector<Type> scaledTypes;
};

/// Converts the f32 `value` to `type` inside a linalg body.
static Value convertFloat(OpBuilder &b, Location loc, Value value, Type type) {
  auto target = cast<FloatType>(type);
  auto source = cast<FloatType>(value.getType());
  if (target == source)
    return value;
  if (target.getWidth() < source.getWidth())
    return arith::TruncFOp::create(b, loc, target, value);
  return arith::ExtFOp::create(b, loc, target, value);
}

/// Builds a linalg.generic on rank-0 tensors `inputs` with results of
/// `resultTypes` (rank 0), whose body `fn` maps the scalars.
static SmallVector<Value> scalarGeneric(
    OpBuilder &b, Location loc, ValueRange inputs, TypeRange resultTypes,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> fn) {
  SmallVector<Value> inits;
  for (Type type : resultTypes) {
    auto tensor = cast<RankedTensorType>(type);
    inits.push_back(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{},
                                            tensor.getElementType()));
  }
  AffineMap none = AffineMap::get(0, 0, b.getContext());
  SmallVector<AffineMap> maps(inputs.size() + inits.size(), none);
  auto generic = linalg::GenericOp::create(
      b, loc, resultTypes, inputs, inits, maps, ArrayRef<utils::IteratorType>{},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, fn(nb, l, args));
      });
  return SmallVector<Value>(generic.getResults());
}
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

/// Whether `value` is a linalg.fill of a constant float zero (either sign).
static bool isZeroFill(Value value) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// Whether `op` is a sum or average all-reduce (linear: it commutes with
/// the scale).
static bool isLinearAllReduce(Operation *op) {
  auto allReduce = dyn_cast<shard::AllReduceOp>(op);
  return allReduce &&
         allReduce.getInput().getType() == allReduce.getResult().getType() &&
         (allReduce.getReduction() == shard::ReductionKind::Sum ||
          allReduce.getReduction() == shard::ReductionKind::Average);
}

/// Returns `tensor * factor`, elementwise (`factor`: a rank-0 f32 tensor).
Value LossScalePass::elementwise(Location loc, Value tensor, Value factor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Value empty = tensor::EmptyOp::create(*builder, loc, type.getShape(),
                                        type.getElementType());
  AffineMap id = builder->getMultiDimIdentityMap(type.getRank());
  AffineMap none = AffineMap::get(type.getRank(), 0, builder->getContext());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      *builder, loc, type, ValueRange{tensor, factor}, ValueRange{empty},
      ArrayRef<AffineMap>{id, none, id}, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value scalar = convertFloat(b, l, args[1], args[0].getType());
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
      Value other = factor == mul.getLhs() ? mul.getRhs() : mul.getLhs();
      // A named op widened to an f32 accumulator multiplies extf(a) *
      // extf(b): scaling the input scales its extension.
      if (auto ext = factor.getDefiningOp<arith::ExtFOp>();
          ext && ext->getBlock() == block && ext->hasOneUse())
        factor = ext.getIn();
      auto arg = dyn_cast<BlockArgument>(factor);
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
      scaledTypes.insert(getElementTypeOrSelf(input->get().getType()));
      input->set(elementwise(op.getLoc(), input->get(), scaleTensor));
      return success();
    }
  }
  // A plain sum of an input (`acc + in`, linalg.reduce): scale the input.
  if (auto arg = dyn_cast<BlockArgument>(term);
      arg && arg.getOwner() == block && arg.hasOneUse() &&
      arg.getArgNumber() < static_cast<unsigned>(op.getNumDpsInputs()) &&
      op.getNumDpsInits() == 1) {
    OpOperand *input = op.getDpsInputOperand(arg.getArgNumber());
    if (isa<RankedTensorType>(input->get().getType())) {
      OpBuilder::InsertionGuard guard(*builder);
      builder->setInsertionPoint(op);
      scaledTypes.insert(getElementTypeOrSelf(input->get().getType()));
      input->set(elementwise(op.getLoc(), input->get(), scaleTensor));
      return success();
    }
  }
  // The scale becomes one more (broadcast) input of the generic.
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !isa<FloatType>(term.getType()))
    return op.emitOpError("accumulates a gradient term that loss-scale can "
                          "scale only in a linalg.generic");
  OpBuilder::InsertionGuard guard(*builder);
  builder->setInsertionPoint(generic);
  SmallVector<Value> inputs(generic.getInputs());
  inputs.push_back(scaleTensor);
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  maps.insert(maps.begin() + generic.getNumDpsInputs(),
              AffineMap::get(generic.getNumLoops(), 0, builder->getContext()));
  auto rebuilt = linalg::GenericOp::create(
      *builder, generic.getLoc(), generic.getResultTypes(), inputs,
      generic.getOutputs(), maps, generic.getIteratorTypesArray());
  rebuilt->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
  rebuilt.getRegion().takeBody(generic.getRegion());
  Block &rebuiltBlock = rebuilt.getRegion().front();
  BlockArgument scaleArg = rebuiltBlock.insertArgument(
      generic.getNumDpsInputs(), builder->getF32Type(), generic.getLoc());
  builder->setInsertionPoint(add);
  scaledTypes.insert(term.getType());
  Value factor = convertFloat(*builder, add.getLoc(), scaleArg, term.getType());
  auto scaled = arith::MulFOp::create(*builder, add.getLoc(), term, factor);
  add->replaceUsesOfWith(term, scaled);
  generic->replaceAllUsesWith(rebuilt->getResults());
  generic->erase();
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
  for (auto allReduce : body.getOps<shard::AllReduceOp>())
    if (allReduce->hasAttr(GaccDialect::kBucketAttrName))
      return allReduce.emitOpError(
          "is a bucket of gacc-sink-all-reduce; run gacc-loss-scale before "
          "it (a bucket mixes gradients with other values)");
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

  // S and 1/S (rank-0 tensors), before the first region.
  b.setInsertionPoint(regions.front());
  scaleTensor =
      dynamic ? scaleArg
              : arith::ConstantOp::create(
                    b, loc,
                    DenseElementsAttr::get(scalarF32, b.getF32FloatAttr(init)))
                    .getResult();
  Value inverse =
      scalarGeneric(b, loc, scaleTensor, scalarF32,
                    [&](OpBuilder &nb, Location l, ValueRange args) {
                      Value one = arith::ConstantOp::create(
                          nb, l, nb.getF32FloatAttr(1.0));
                      return SmallVector<Value>{
                          arith::DivFOp::create(nb, l, one, args[0])};
                    })
          .front();

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
      auto op = produced
                    ? dyn_cast<DestinationStyleOpInterface>(produced.getOwner())
                    : DestinationStyleOpInterface();
      if (!op || !op->hasAttr(kPartialAttrName))
        return region.emitOpError()
               << "yields gradient #" << i
               << " not from a gacc.partial reduction; loss-scale expects "
                  "the form gacc-micro-batch produces";
      // The first region's accumulator starts from the step's own init
      // (a weight-decay term as `outs`, say): it is unscaled with the
      // rest, so it is scaled too. Later regions continue the scaled
      // accumulator or start from the combiner's identity.
      OpOperand *init = op.getDpsInitOperand(produced.getResultNumber());
      if (region == regions.front() && !isZeroFill(init->get())) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(op);
        init->set(elementwise(op->getLoc(), init->get(), scaleTensor));
      }
      // An embedding gradient adds its updates: they are scaled.
      if (auto scatter = dyn_cast<gacc::ScatterAddOp>(op.getOperation())) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(scatter);
        scaledTypes.insert(
            getElementTypeOrSelf(scatter.getUpdates().getType()));
        scatter.getUpdatesMutable().assign(
            elementwise(scatter.getLoc(), scatter.getUpdates(), scaleTensor));
        continue;
      }
      if (failed(scaleContribution(cast<linalg::LinalgOp>(op.getOperation()),
                                   produced.getResultNumber())))
        return failure();
    }
  }

  // S is converted to the type it multiplies in: 65536 (the default) is
  // inf in f16, and so would every scaled value be.
  for (Type type : scaledTypes) {
    auto floatType = dyn_cast<FloatType>(type);
    if (!floatType)
      continue;
    APFloat value(init);
    bool losesInfo = false;
    value.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                  &losesInfo);
    if (value.isInfinity())
      func.emitWarning() << "the loss scale " << init << " overflows " << type
                         << ": every value scaled in " << type << " is inf, "
                         << (dynamic ? "so steps are skipped until the scale "
                                       "has backed off below its largest value"
                                     : "so every step is skipped")
                         << " (set loss-scale-init, e.g. 1024)";
  }

  // 2. Unscale each accumulator once. A sum or average all-reduce of it
  // (GradScaler with DDP: the scaled gradients are reduced) stays scaled and
  // its result is multiplied by 1/S; every other use (an epilogue such as a
  // weight-decay term, a metric, the result itself) reads the accumulator
  // multiplied by 1/S right after the regions. gacc-sink-all-reduce buckets
  // those all-reduces afterwards.
  SmallVector<Value> unscaled;
  shard::AllReduceOp flagTemplate;
  auto unscale = [&](Value v) -> FailureOr<Value> {
    auto type = cast<RankedTensorType>(v.getType());
    if (!isa<FloatType>(type.getElementType()))
      return func.emitOpError("has a non-float gradient accumulator; "
                              "loss-scale supports float gradients only");
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(v);
    Value u = elementwise(loc, v, inverse);
    unscaled.push_back(u);
    return u;
  };
  for (unsigned i : gradientPartials) {
    Value acc = last->getResult(i);
    // All-reduces of the accumulator, directly or of its truncation (an
    // accumulate-type accumulator): the latter are rebuilt on the
    // accumulator, as gacc-sink-all-reduce reduces them, so that 1/S is
    // applied before the truncation.
    SmallVector<shard::AllReduceOp> reduced;
    for (Operation *user : llvm::make_early_inc_range(acc.getUsers())) {
      if (isLinearAllReduce(user)) {
        reduced.push_back(cast<shard::AllReduceOp>(user));
        continue;
      }
      auto trunc = dyn_cast<arith::TruncFOp>(user);
      if (!trunc || trunc.getIn() != acc || trunc->getBlock() != &body)
        continue;
      for (Operation *truncUser :
           llvm::make_early_inc_range(trunc->getUsers())) {
        if (!isLinearAllReduce(truncUser))
          continue;
        auto narrow = cast<shard::AllReduceOp>(truncUser);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(narrow);
        auto wide = shard::AllReduceOp::create(
            b, narrow.getLoc(), acc.getType(), narrow.getGridAttr(),
            narrow.getGridAxesAttr(), acc, narrow.getReductionAttr());
        wide->setDiscardableAttrs(narrow->getDiscardableAttrDictionary());
        FailureOr<Value> u = unscale(wide.getResult());
        if (failed(u))
          return failure();
        b.setInsertionPointAfterValue(*u);
        Value narrowed =
            arith::TruncFOp::create(b, narrow.getLoc(), narrow.getType(), *u);
        narrow.getResult().replaceAllUsesWith(narrowed);
        narrow->erase();
        flagTemplate = flagTemplate ? flagTemplate : wide;
      }
      if (trunc->use_empty())
        trunc->erase();
    }
    for (shard::AllReduceOp allReduce : reduced) {
      FailureOr<Value> u = unscale(allReduce.getResult());
      if (failed(u))
        return failure();
      allReduce.getResult().replaceAllUsesExcept(*u, u->getDefiningOp());
      flagTemplate = flagTemplate ? flagTemplate : allReduce;
    }
    bool otherUses = !llvm::all_of(acc.getUsers(), isLinearAllReduce);
    if (!otherUses)
      continue;
    FailureOr<Value> u = unscale(acc);
    if (failed(u))
      return failure();
    acc.replaceUsesWithIf(*u, [&](OpOperand &use) {
      return use.getOwner() != u->getDefiningOp() &&
             !isLinearAllReduce(use.getOwner());
    });
  }
  // The found-inf flag is reduced over the grid of the gradients'
  // collectives (those above, else any collective a gradient reaches).
  if (!flagTemplate)
    for (unsigned i : gradientPartials) {
      SmallVector<Value> worklist{last->getResult(i)};
      DenseSet<Operation *> seen;
      while (!worklist.empty() && !flagTemplate) {
        for (Operation *user : worklist.pop_back_val().getUsers()) {
          if (auto allReduce = dyn_cast<shard::AllReduceOp>(user)) {
            flagTemplate = allReduce;
            break;
          }
          if (user != ret.getOperation() && seen.insert(user).second)
            llvm::append_range(worklist, user->getResults());
        }
      }
    }

  // 3. The found-inf flag over the unscaled gradients.
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

  // 4. Guard the updates: old parameters and state on overflow, elementwise
  // with the flag as a broadcast operand.
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
    auto type = dyn_cast<RankedTensorType>(results[j].getType());
    if (i < 0 || i >= numArgs || !type || func.getArgument(i).getType() != type)
      return func.emitOpError()
             << "result #" << j << " updates argument #" << i
             << " of another type; loss-scale cannot keep the old value";
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    AffineMap none = AffineMap::get(type.getRank(), 0, context);
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    Value empty =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    results[j] =
        linalg::GenericOp::create(
            b, loc, type, ValueRange{func.getArgument(i), results[j], flag},
            ValueRange{empty}, ArrayRef<AffineMap>{id, id, none, id}, iterators,
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value zeroF =
                  arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0));
              Value found = arith::CmpFOp::create(
                  nb, l, arith::CmpFPredicate::OGT, args[2], zeroF);
              linalg::YieldOp::create(
                  nb, l,
                  arith::SelectOp::create(nb, l, found, args[0], args[1])
                      .getResult());
            })
            .getResult(0);
  }

  // 5. The dynamic scale's update (GradScaler's _amp_update_scale_).
  if (dynamic) {
    SmallVector<Value> updated = scalarGeneric(
        b, loc, ValueRange{scaleArg, trackerArg, flag},
        TypeRange{scalarF32, scalarI64},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value s = args[0], t = args[1];
          auto cstF = [&](double v) {
            return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v))
                .getResult();
          };
          auto cstI = [&](int64_t v) {
            return arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(v))
                .getResult();
          };
          Value found = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                              args[2], cstF(0.0));
          Value backedOff =
              arith::MulFOp::create(nb, l, s, cstF(backoffFactor.getValue()));
          Value next = arith::AddIOp::create(nb, l, t, cstI(1));
          Value due =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, next,
                                    cstI(growthInterval.getValue()));
          Value grown =
              arith::MulFOp::create(nb, l, s, cstF(growthFactor.getValue()));
          Value grownFinite = arith::CmpFOp::create(
              nb, l, arith::CmpFPredicate::OLT,
              math::AbsFOp::create(nb, l, grown),
              cstF(std::numeric_limits<double>::infinity()));
          Value grow = arith::AndIOp::create(nb, l, due, grownFinite);
          Value clean = arith::SelectOp::create(nb, l, grow, grown, s);
          Value cleanTracker =
              arith::SelectOp::create(nb, l, due, cstI(0), next);
          return SmallVector<Value>{
              arith::SelectOp::create(nb, l, found, backedOff, clean),
              arith::SelectOp::create(nb, l, found, cstI(0), cleanTracker)};
        });
    llvm::append_range(results, updated);
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

std::optional<LossScaleMode>
mlir::gacc::parseLossScaleMode(const std::string &text, double init,
                               std::string &error) {
  StringRef mode = text;
  LossScaleMode parsed;
  parsed.scale = init;
  if (mode == "none")
    return parsed;
  if (mode == "dynamic") {
    parsed.kind = LossScaleKind::Dynamic;
  } else if (mode == "static") {
    parsed.kind = LossScaleKind::Static;
  } else if (mode.consume_front("static=")) {
    parsed.kind = LossScaleKind::Static;
    if (mode.getAsDouble(parsed.scale)) {
      error =
          "expected a number in loss-scale=static=S, got '" + mode.str() + "'";
      return std::nullopt;
    }
  } else {
    error = "unknown loss-scale='" + text +
            "' (expected none, static, static=S or dynamic)";
    return std::nullopt;
  }
  if (!(parsed.scale > 0) || !std::isfinite(parsed.scale)) {
    std::string value;
    llvm::raw_string_ostream os(value);
    os << parsed.scale;
    error = "expected a positive finite loss scale, got " + value;
    return std::nullopt;
  }
  return parsed;
}

void LossScalePass::runOnOperation() {
  std::string error;
  std::optional<LossScaleMode> mode =
      parseLossScaleMode(lossScale, lossScaleInit, error);
  if (!mode) {
    getOperation().emitError() << error;
    return signalPassFailure();
  }
  if (mode->kind == LossScaleKind::None)
    return;
  bool dynamic = mode->kind == LossScaleKind::Dynamic;
  double init = mode->scale;
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
