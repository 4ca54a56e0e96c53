//===- FuseAccumulation.cpp - accumulate in place ---------------*- C++ -*-===//
//
// The gacc-fuse-accumulation pass. After gacc-micro-batch every region yields
// its partials and `gacc.combine` ops add them up after the regions. This pass
// turns each such chain into an accumulator: the reduction of region k > 0
// takes region k-1's result as its `outs` operand (instead of an identity
// fill), so it computes acc += partial in place, and the combine ops go away.
// With accumulate-type=f32 the chain of a bf16/f16 partial accumulates in f32
// and is truncated once after the final region.
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "gacc-fuse-accumulation"

namespace mlir::gacc {
#define GEN_PASS_DEF_FUSEACCUMULATIONPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// One link of an accumulator chain: the reduction (a linalg op or a
/// gacc.scatter_add) inside a region that produces result `resultNumber` of
/// `op`.
struct ChainLink {
  gacc::MicroBatchOp region;
  DestinationStyleOpInterface op;
  unsigned resultNumber;
  OpOperand &init() { return *op.getDpsInitOperand(resultNumber); }
};

/// The accumulator chain of region result `index`, one link per region.
struct AccumulatorChain {
  unsigned index;
  SmallVector<ChainLink> links;
};
} // namespace

/// Returns the chains of all partial results of `regions`.
static SmallVector<AccumulatorChain>
collectChains(MutableArrayRef<gacc::MicroBatchOp> regions) {
  SmallVector<AccumulatorChain> chains;
  unsigned numResults = regions.front().getNumResults();
  for (unsigned i = 0; i < numResults; ++i) {
    AccumulatorChain chain{i, {}};
    for (gacc::MicroBatchOp region : regions) {
      auto yield = cast<gacc::YieldOp>(region.getBody().front().back());
      auto result = dyn_cast<OpResult>(yield.getOperand(i));
      auto op = result
                    ? dyn_cast<DestinationStyleOpInterface>(result.getOwner())
                    : DestinationStyleOpInterface();
      if (!op || !op->hasAttr(kPartialAttrName))
        break;
      chain.links.push_back({region, op, result.getResultNumber()});
    }
    if (chain.links.size() == regions.size())
      chains.push_back(std::move(chain));
  }
  return chains;
}

/// Re-reads each link's op from its region's yield: widening another chain
/// may have replaced an op that produces several partials (a variadic
/// linalg.reduce generalized), which leaves the cached op erased.
static void refreshLinks(AccumulatorChain &chain) {
  for (ChainLink &link : chain.links) {
    auto yield = cast<gacc::YieldOp>(link.region.getBody().front().back());
    auto produced = cast<OpResult>(yield.getOperand(chain.index));
    link.op = cast<DestinationStyleOpInterface>(produced.getOwner());
    link.resultNumber = produced.getResultNumber();
  }
}

/// Chains the links of `chain` through their inits and removes the combine
/// ops. Returns false (and changes nothing) when the chain does not have the
/// shape gacc-micro-batch produces.
static bool fuseChain(AccumulatorChain &chain, RewriterBase &rewriter) {
  MutableArrayRef<ChainLink> links = chain.links;
  gacc::MicroBatchOp first = links.front().region;
  Value running = first.getResult(chain.index);
  // Find the combine ops: c1 = comb(r0, r1), c2 = comb(c1, r2), ...
  SmallVector<Operation *> combines;
  for (ChainLink &link : llvm::drop_begin(chain.links)) {
    Value next = link.region.getResult(chain.index);
    Operation *combine = nullptr;
    for (Operation *user : running.getUsers())
      if (user->hasAttr(GaccDialect::kCombineAttrName) &&
          user->getOperand(0) == running && user->getOperand(1) == next)
        combine = user;
    if (!combine || !running.hasOneUse() || !next.hasOneUse())
      return false;
    Operation *fill = link.init().get().getDefiningOp();
    if (!isa_and_nonnull<linalg::FillOp>(fill))
      return false;
    combines.push_back(combine);
    running = combine->getResult(0);
  }
  // Rewire: region k's reduction starts from region k-1's accumulator.
  for (auto [k, link] : llvm::enumerate(chain.links)) {
    if (k == 0)
      continue;
    Value previous = links[k - 1].region.getResult(chain.index);
    Operation *fill = link.init().get().getDefiningOp();
    rewriter.modifyOpInPlace(link.op, [&] { link.init().set(previous); });
    if (fill->use_empty())
      rewriter.eraseOp(fill);
  }
  Value last = links.back().region.getResult(chain.index);
  rewriter.replaceAllUsesWith(combines.back()->getResult(0), last);
  for (Operation *combine : llvm::reverse(combines))
    rewriter.eraseOp(combine);
  return true;
}

/// Rebuilds `op` so that result `i` accumulates in `accType`; the other
/// results keep their type. Returns the new op, or null when the body does
/// not have the expected `combine(out, value)` shape.
static DestinationStyleOpInterface
widenAccumulator(RewriterBase &rewriter, DestinationStyleOpInterface dpsOp,
                 unsigned i, Value newInit) {
  rewriter.setInsertionPoint(dpsOp);
  if (auto scatter = dyn_cast<gacc::ScatterAddOp>(dpsOp.getOperation())) {
    // The rows are added in the accumulator's type.
    auto updatesType = cast<RankedTensorType>(scatter.getUpdates().getType());
    Type wideType = getElementTypeOrSelf(newInit.getType());
    Value updates = arith::ExtFOp::create(rewriter, scatter.getLoc(),
                                          updatesType.clone(wideType),
                                          scatter.getUpdates());
    auto wide = gacc::ScatterAddOp::create(
        rewriter, scatter.getLoc(), TypeRange{newInit.getType()}, updates,
        scatter.getIndices(), newInit);
    wide->setDiscardableAttrs(scatter->getDiscardableAttrDictionary());
    rewriter.replaceOp(scatter, wide);
    return wide;
  }
  auto op = dyn_cast<linalg::LinalgOp>(dpsOp.getOperation());
  if (!op)
    return {};
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation())) {
    // Named contractions cast their operands to the output type themselves.
    auto wide = linalg::MatmulOp::create(
        rewriter, op.getLoc(), TypeRange{newInit.getType()}, matmul.getInputs(),
        ValueRange{newInit});
    // Its maps too (a transposed or broadcast operand: the weight
    // gradient's X^T dY contracts over the samples), which the builder
    // sets to the defaults.
    wide.setIndexingMapsAttr(matmul.getIndexingMapsAttr());
    wide->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, wide);
    return wide;
  }
  linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return {};
    generic = *generalized;
    generic->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  }
  Block *body = generic.getBody();
  OpOperand *init = generic.getDpsInitOperand(i);
  BlockArgument outArg = generic.getMatchingBlockArgument(init);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  Operation *combiner = yield.getOperand(i).getDefiningOp();
  if (!combiner || !outArg.hasOneUse() || combiner->getNumOperands() != 2 ||
      getCombiner(combiner) == Combiner::None)
    return {};
  Type wideType = getElementTypeOrSelf(newInit.getType());
  // Widen in place: the out argument, the combiner, and the init.
  rewriter.setInsertionPoint(combiner);
  for (OpOperand &operand : combiner->getOpOperands())
    if (operand.get() != outArg && operand.get().getType() != wideType) {
      Value ext = arith::ExtFOp::create(rewriter, combiner->getLoc(), wideType,
                                        operand.get());
      rewriter.modifyOpInPlace(combiner, [&] { operand.set(ext); });
    }
  rewriter.modifyOpInPlace(combiner,
                           [&] { combiner->getResult(0).setType(wideType); });
  rewriter.modifyOpInPlace(generic, [&] {
    outArg.setType(wideType);
    init->set(newInit);
    generic->getResult(i).setType(newInit.getType());
  });
  return generic;
}

/// Keeps the accumulators of `chain` in `accType` and truncates the final
/// value once after the regions.
static LogicalResult widenChain(AccumulatorChain &chain, FloatType accType,
                                RewriterBase &rewriter) {
  auto type = cast<RankedTensorType>(
      chain.links.front().region.getResult(chain.index).getType());
  auto elemType = dyn_cast<FloatType>(type.getElementType());
  if (!elemType || elemType.getWidth() >= accType.getWidth())
    return success();
  auto wideType = RankedTensorType::get(type.getShape(), accType);
  for (auto [k, link] : llvm::enumerate(chain.links)) {
    Value init = link.init().get();
    Value newInit;
    rewriter.setInsertionPoint(link.op);
    if (k > 0) {
      newInit = chain.links[k - 1].region.getResult(chain.index);
    } else if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
      Value empty = tensor::EmptyOp::create(rewriter, fill.getLoc(),
                                            type.getShape(), accType);
      Value scalar = arith::ExtFOp::create(rewriter, fill.getLoc(), accType,
                                           fill.getInputs()[0]);
      newInit = linalg::FillOp::create(rewriter, fill.getLoc(), scalar, empty)
                    .getResult(0);
    } else {
      newInit =
          arith::ExtFOp::create(rewriter, link.op->getLoc(), wideType, init);
    }
    DestinationStyleOpInterface wide =
        widenAccumulator(rewriter, link.op, link.resultNumber, newInit);
    if (!wide)
      return link.op->emitOpError()
             << "cannot keep this accumulator in " << accType
             << ": expected a reduction body of the form "
                "'combine(out, value)'";
    link.op = wide;
    auto yield = cast<gacc::YieldOp>(link.region.getBody().front().back());
    rewriter.modifyOpInPlace(yield, [&] {
      yield->setOperand(chain.index, wide->getResult(link.resultNumber));
    });
    rewriter.modifyOpInPlace(link.region, [&] {
      link.region.getResult(chain.index).setType(wideType);
    });
  }
  gacc::MicroBatchOp last = chain.links.back().region;
  Value acc = last.getResult(chain.index);
  rewriter.setInsertionPointAfter(last);
  auto trunc = arith::TruncFOp::create(rewriter, last.getLoc(), type, acc);
  rewriter.replaceAllUsesExcept(acc, trunc.getResult(), trunc);
  return success();
}

namespace {
struct FuseAccumulationPass
    : public gacc::impl::FuseAccumulationPassBase<FuseAccumulationPass> {
  using FuseAccumulationPassBase::FuseAccumulationPassBase;

  void runOnOperation() override {
    ChangedOps changes;
    GACC_VERIFY_PASS_CHANGES(changes);
    ChangeTrackingRewriter rewriter(&getContext(), changes);
    FloatType accType;
    if (accumulateType == "f32") {
      accType = Float32Type::get(&getContext());
    } else if (!accumulateType.empty()) {
      getOperation().emitError()
          << "unsupported accumulate-type '" << accumulateType
          << "'; expected f32 or nothing";
      return signalPassFailure();
    }
    WalkResult result = getOperation().walk([&](func::FuncOp func) {
      SmallVector<gacc::MicroBatchOp> regions(
          func.getBody().getOps<gacc::MicroBatchOp>());
      if (regions.empty())
        return WalkResult::advance();
      SmallVector<AccumulatorChain> chains = collectChains(regions);
      for (AccumulatorChain &chain : chains) {
        refreshLinks(chain);
        if (regions.size() > 1 && !fuseChain(chain, rewriter))
          continue;
        if (accType && failed(widenChain(chain, accType, rewriter)))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
