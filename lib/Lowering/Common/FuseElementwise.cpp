//===- FuseElementwise.cpp - fusion that spares GEMMs -----------*- C++ -*-===//
//
// The gacc-fuse-elementwise pass: upstream's elementwise fusion without its
// reshape propagation, so the GEMMs that gacc-contraction-to-matmul formed
// stay linalg.matmul and reach BLAS / cuBLAS. A producer with several uses
// is fused too when its other uses all come after the consumer in the same
// block: the fused op also yields the producer's results and takes over
// those uses, so the work is done once, in one loop nest (a bias add fused
// with its ReLU, the pre-activation kept for the backward pass).
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "gacc-fuse-elementwise"

namespace mlir::gacc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
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
