//===- ExpandDivisions.cpp - ceil/floor divisions as arithmetic -----------===//
//
// The gacc-expand-divisions pass of the CPU and CUDA lowerings: upstream's
// ceil/floor division expansion, without arith-expand-ops' rewrite of
// maximumf/minimumf into cmpf + select, which loses IEEE maximum's -0 < +0;
// and math.clampf, isinf and isnormal, which no upstream conversion lowers to
// LLVM, as arith.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "gacc-expand-divisions"

namespace mlir::gacc {
#define GEN_PASS_DEF_EXPANDDIVISIONSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;

namespace {
/// math.isinf (`|x| == inf`) and math.isnormal (`smallest normal <= |x| <
/// inf`; false for NaN, zero and subnormals) as ordered compares.
template <typename OpTy> struct ExpandFloatClass : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type type = op.getOperand().getType();
    auto floatType = dyn_cast<FloatType>(getElementTypeOrSelf(type));
    if (!floatType)
      return failure();
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    auto constant = [&](const APFloat &value) -> Value {
      TypedAttr attr = rewriter.getFloatAttr(floatType, value);
      if (auto shaped = dyn_cast<ShapedType>(type))
        attr = DenseElementsAttr::get(shaped, attr);
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    Value magnitude = math::AbsFOp::create(rewriter, loc, op.getOperand());
    Value inf = constant(APFloat::getInf(semantics));
    if (isa<math::IsInfOp>(op.getOperation())) {
      rewriter.replaceOpWithNewOp<arith::CmpFOp>(op, arith::CmpFPredicate::OEQ,
                                                 magnitude, inf);
      return success();
    }
    Value notSmall = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OGE, magnitude,
        constant(APFloat::getSmallestNormalized(semantics)));
    Value finite = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OLT, magnitude, inf);
    rewriter.replaceOpWithNewOp<arith::AndIOp>(op, notSmall, finite);
    return success();
  }
};

/// math.clampf(x, lo, hi) as minimumf(maximumf(x, lo), hi), what torch's
/// clamp computes. (Upstream's expansion in LLVM 22 follows its op
/// documentation, maxf(minf(x, lo), hi), which is `hi` for every x < hi.)
struct ExpandClampF : OpRewritePattern<math::ClampFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::ClampFOp op,
                                PatternRewriter &rewriter) const override {
    Value lower = arith::MaximumFOp::create(
        rewriter, op.getLoc(), op.getValue(), op.getMin(), op.getFastmath());
    rewriter.replaceOpWithNewOp<arith::MinimumFOp>(op, lower, op.getMax(),
                                                   op.getFastmath());
    return success();
  }
};

struct ExpandDivisionsPass
    : public mlir::gacc::impl::ExpandDivisionsPassBase<ExpandDivisionsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    RewritePatternSet patterns(&getContext());
    arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    patterns.add<ExpandClampF, ExpandFloatClass<math::IsInfOp>,
                 ExpandFloatClass<math::IsNormalOp>>(&getContext());
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace
