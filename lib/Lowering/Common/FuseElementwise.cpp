//===- FuseElementwise.cpp - fusion that spares GEMMs -----------*- C++ -*-===//
//
// The gacc-fuse-elementwise pass: upstream's elementwise fusion without its
// reshape propagation, so the GEMMs that gacc-contraction-to-matmul formed
// stay linalg.matmul and reach BLAS / cuBLAS. A producer with several uses
// is fused too when its other uses all come after the consumer in the same
// block: the fused op also yields the producer's results and takes over
// those uses, so the work is done once, in one loop nest (a bias add fused
// with its ReLU, the pre-activation kept for the backward pass). Before the
// fusion, a ReLU mask of the backward pass that tests the pre-activation
// (`z > 0`) tests the ReLU's result instead (the same bits), so that the
// pre-activation need not be kept at all (ReadReluMaskFromResult).
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Common/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "gacc-fuse-elementwise"

namespace mlir::gacc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "gacc/Lowering/Common/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// Whether `value` is a floating-point constant +0.0 or -0.0.
bool isZero(Value value) { return matchPattern(value, m_AnyZeroFloat()); }

/// Whether `value`, computed in a body from its argument `x`, is a ReLU of
/// `x`: x where x > 0, +-0 where x <= 0, and NaN or +-0 where x is NaN.
/// The forms frontends write: maximumf / maxnumf with zero (either order),
/// select(cmpf P x 0, x, 0) with P ogt, ugt, oge or uge (torch-mlir: ugt).
bool isReluOf(Value value, Value x) {
  Operation *op = value.getDefiningOp();
  if (!op)
    return false;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op))
    return (op->getOperand(0) == x && isZero(op->getOperand(1))) ||
           (op->getOperand(1) == x && isZero(op->getOperand(0)));
  auto select = dyn_cast<arith::SelectOp>(op);
  if (!select || select.getTrueValue() != x || !isZero(select.getFalseValue()))
    return false;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!cmp || cmp.getLhs() != x || !isZero(cmp.getRhs()))
    return false;
  using P = arith::CmpFPredicate;
  P predicate = cmp.getPredicate();
  return predicate == P::OGT || predicate == P::UGT || predicate == P::OGE ||
         predicate == P::UGE;
}

/// Whether every use of `arg` is `cmpf ogt arg, 0` or `cmpf ule arg, 0`
/// (or the same with the operands swapped: olt / uge): the tests whose
/// result is the same for x and for any ReLU of x (x > 0 exactly where the
/// ReLU is > 0, NaN and +-0 included).
bool onlyTestsPositive(BlockArgument arg) {
  if (arg.use_empty())
    return false;
  using P = arith::CmpFPredicate;
  for (OpOperand &use : arg.getUses()) {
    auto cmp = dyn_cast<arith::CmpFOp>(use.getOwner());
    if (!cmp)
      return false;
    P predicate = cmp.getPredicate();
    bool lhs = cmp.getLhs() == arg && isZero(cmp.getRhs()) &&
               (predicate == P::OGT || predicate == P::ULE);
    bool rhs = cmp.getRhs() == arg && isZero(cmp.getLhs()) &&
               (predicate == P::OLT || predicate == P::UGE);
    if (!lhs && !rhs)
      return false;
  }
  return true;
}

/// The result of a ReLU of `z` computed before `consumer` in its block: an
/// elementwise generic (identity maps, z's type) whose one input is `z` and
/// whose body yields a ReLU of it; null if there is none.
Value reluResultBefore(Value z, Operation *consumer) {
  for (Operation *user : z.getUsers()) {
    auto relu = dyn_cast<linalg::GenericOp>(user);
    if (!relu || relu == consumer || relu->getBlock() != consumer->getBlock() ||
        !relu->isBeforeInBlock(consumer) || relu.getNumDpsInputs() != 1 ||
        relu->getNumResults() != 1 || relu.getDpsInputs()[0] != z ||
        relu->getResult(0).getType() != z.getType() ||
        relu.getNumParallelLoops() != relu.getNumLoops() ||
        !llvm::all_of(relu.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity(); }))
      continue;
    Block *body = relu.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    if (isReluOf(yield.getOperand(0), body->getArgument(0)))
      return relu->getResult(0);
  }
  return {};
}

/// A backward pass's ReLU mask written on the pre-activation z (`dz = z > 0
/// ? da : 0`, as hand-written graphs do; PyTorch's threshold_backward reads
/// the ReLU's result already) reads the ReLU's result instead when that is
/// computed before it: the test gives the same bits, and z is then dead
/// after its ReLU, so the fused bias add + ReLU (often a GEMM's epilogue)
/// writes one tensor instead of two and the pre-activation is not kept
/// until the backward pass.
void readReluMaskFromResult(linalg::GenericOp consumer) {
  for (OpOperand *operand : consumer.getDpsInputOperands()) {
    if (!onlyTestsPositive(consumer.getMatchingBlockArgument(operand)))
      continue;
    if (Value relu = reluResultBefore(operand->get(), consumer)) {
      LLVM_DEBUG(llvm::dbgs() << "mask reads the ReLU's result: "
                              << consumer->getLoc() << "\n");
      operand->set(relu);
    }
  }
}

/// Fuses a producer with several uses into the consumer of `operand` when
/// the consumer reads the producer only through `operand` and every other
/// use comes after the consumer in its block: the fused op, placed at the
/// consumer, yields the producer's results for those uses and the producer
/// goes away. Upstream's pattern would keep the producer for them and so
/// compute its values twice.
struct FuseMultiUseProducer : public OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool isFusable(OpOperand &operand) {
    auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
    if (!producer || producer->hasOneUse() ||
        !linalg::areElementwiseOpsFusable(&operand))
      return false;
    // The fused op also yields the producer's whole result for its other
    // uses, written through the consumer's map of it: a map that does not
    // reach every element (a constant `(d0) -> (d0, 0)`, a diagonal
    // `(d0) -> (d0, d0)`) would leave the rest unwritten.
    AffineMap map = cast<linalg::LinalgOp>(operand.getOwner())
                        .getMatchingIndexingMap(&operand);
    if (!map.isPermutation())
      return false;
    Operation *consumer = operand.getOwner();
    Block *block = consumer->getBlock();
    if (producer->getBlock() != block)
      return false;
    for (OpOperand &use : producer->getUses()) {
      if (&use == &operand)
        continue;
      // A use inside the consumer (its body reading the producer's tensor)
      // is the consumer itself.
      Operation *user = block->findAncestorOpInBlock(*use.getOwner());
      if (!user || user == consumer || !consumer->isBeforeInBlock(user))
        return false;
    }
    return true;
  }

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand &operand : consumer->getOpOperands()) {
      if (!isFusable(operand))
        continue;
      Operation *producer = operand.get().getDefiningOp();
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (failed(fused))
        return rewriter.notifyMatchFailure(consumer, "fusion failed");
      for (auto [original, replacement] : fused->replacements)
        rewriter.replaceAllUsesWith(original, replacement);
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

struct FuseElementwisePass
    : public gacc::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    // Before the fusion, which would make the bias add yield the
    // pre-activation for the mask.
    getOperation()->walk(
        [](linalg::GenericOp generic) { readReluMaskFromResult(generic); });
    RewritePatternSet patterns(&getContext());
    // Upstream's pattern only for producers with a single use (for others
    // it would compute the producer twice); FuseMultiUseProducer for the
    // rest.
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *operand) {
          Operation *producer = operand->get().getDefiningOp();
          return producer && producer->hasOneUse();
        });
    patterns.add<FuseMultiUseProducer>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
