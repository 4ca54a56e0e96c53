//===- ExpandNarrowFloats.cpp - bf16/f16 casts as integer code ---*- C++ -*-=//
//
// The gacc-expand-narrow-floats pass: after arithmetic on bf16 and f16 has
// been emulated in f32 (arith-emulate-unsupported-floats,
// math-extend-to-supported-types), the remaining `arith.extf` /
// `arith.truncf` to and from the narrow types become integer arithmetic on
// their bits. LLVM would otherwise lower them on the host to calls of the
// compiler runtime (`__truncsfbf2`, `__extendhfsf2`, `__truncsfhf2`), which
// the JIT cannot resolve where the host's libgcc lacks them (Debian 12 has
// no bf16 routine; libgcc before GCC 12 has no f16 ones).
//
// Rounding is to nearest even, as the hardware conversions do; NaNs stay
// quiet NaNs (their payload is not kept). A cast between f64 and a narrow
// type goes through f32: exact when extending, and when truncating it may
// round twice (a tie after the first rounding), which is well below the
// narrow type's own precision.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "gacc-expand-narrow-floats"

namespace mlir::gacc {
#define GEN_PASS_DEF_EXPANDNARROWFLOATSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Returns true for the float types that have no host arithmetic.
static bool isNarrowFloat(Type type) {
  Type element = getElementTypeOrSelf(type);
  return element.isBF16() || element.isF16();
}

/// Returns `type` (a scalar or a vector) with element type `element`.
static Type withElementType(Type type, Type element) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.clone(element);
  return element;
}

/// A constant of `type` (integer scalar or vector: splat) with value `v`.
static Value constantOf(OpBuilder &b, Location loc, Type type, int64_t v) {
  Type element = getElementTypeOrSelf(type);
  TypedAttr attr = b.getIntegerAttr(element, v);
  if (auto shaped = dyn_cast<ShapedType>(type))
    attr = SplatElementsAttr::get(shaped, attr);
  return arith::ConstantOp::create(b, loc, type, attr);
}

static Value floatConstantOf(OpBuilder &b, Location loc, Type type, double v) {
  Type element = getElementTypeOrSelf(type);
  TypedAttr attr = b.getFloatAttr(element, v);
  if (auto shaped = dyn_cast<ShapedType>(type))
    attr = SplatElementsAttr::get(shaped, attr);
  return arith::ConstantOp::create(b, loc, type, attr);
}

namespace {
/// A cast between f64 (or any type other than f32) and bf16/f16 goes
/// through f32, so that only f32 <-> narrow casts remain.
struct SplitExtF : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    Type from = op.getIn().getType(), to = op.getType();
    if (!isNarrowFloat(from) || getElementTypeOrSelf(to).isF32())
      return rewriter.notifyMatchFailure(op, "not a narrow to wide cast");
    Type f32 = withElementType(to, rewriter.getF32Type());
    Value mid = arith::ExtFOp::create(rewriter, op.getLoc(), f32, op.getIn());
    rewriter.replaceOpWithNewOp<arith::ExtFOp>(op, to, mid);
    return success();
  }
};

struct SplitTruncF : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Type from = op.getIn().getType(), to = op.getType();
    if (!isNarrowFloat(to) || getElementTypeOrSelf(from).isF32())
      return rewriter.notifyMatchFailure(op, "not a wide to narrow cast");
    if (op.getRoundingmodeAttr())
      return rewriter.notifyMatchFailure(op, "explicit rounding mode");
    Type f32 = withElementType(from, rewriter.getF32Type());
    Value mid = arith::TruncFOp::create(rewriter, op.getLoc(), f32, op.getIn());
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, to, mid);
    return success();
  }
};

/// f16 -> f32: rebias the exponent of normal numbers; infinities and NaNs
/// keep an all-ones exponent; subnormals (mantissa * 2^-24) convert exactly
/// through an integer-to-float conversion.
struct ExpandF16ExtF : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    Type from = op.getIn().getType(), to = op.getType();
    if (!getElementTypeOrSelf(from).isF16() ||
        !getElementTypeOrSelf(to).isF32())
      return rewriter.notifyMatchFailure(op, "not f16 to f32");
    Location loc = op.getLoc();
    Type i16 = withElementType(from, rewriter.getI16Type());
    Type i32 = withElementType(to, rewriter.getI32Type());
    auto c = [&](int64_t v) { return constantOf(rewriter, loc, i32, v); };
    Value bits16 = arith::BitcastOp::create(rewriter, loc, i16, op.getIn());
    Value h = arith::ExtUIOp::create(rewriter, loc, i32, bits16);
    Value sign = arith::ShLIOp::create(
        rewriter, loc, arith::AndIOp::create(rewriter, loc, h, c(0x8000)),
        c(16));
    Value exp = arith::AndIOp::create(
        rewriter, loc, arith::ShRUIOp::create(rewriter, loc, h, c(10)),
        c(0x1f));
    Value mant = arith::AndIOp::create(rewriter, loc, h, c(0x3ff));
    Value mantBits = arith::ShLIOp::create(rewriter, loc, mant, c(13));
    // Normal: exponent + (127 - 15).
    Value normalExp = arith::ShLIOp::create(
        rewriter, loc, arith::AddIOp::create(rewriter, loc, exp, c(112)),
        c(23));
    Value normal = arith::OrIOp::create(rewriter, loc, normalExp, mantBits);
    Value special =
        arith::OrIOp::create(rewriter, loc, c(0x7f800000), mantBits);
    // Subnormal or zero: mantissa * 2^-24, exact in f32.
    Value mantF = arith::UIToFPOp::create(rewriter, loc, to, mant);
    Value tiny = arith::MulFOp::create(
        rewriter, loc, mantF, floatConstantOf(rewriter, loc, to, 0x1p-24));
    Value tinyBits = arith::BitcastOp::create(rewriter, loc, i32, tiny);
    Value isSpecial = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::eq, exp, c(0x1f));
    Value isTiny = arith::CmpIOp::create(rewriter, loc,
                                         arith::CmpIPredicate::eq, exp, c(0));
    Value magnitude = arith::SelectOp::create(
        rewriter, loc, isTiny, tinyBits,
        arith::SelectOp::create(rewriter, loc, isSpecial, special, normal));
    Value bits = arith::OrIOp::create(rewriter, loc, magnitude, sign);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, to, bits);
    return success();
  }
};

/// f32 -> f16, rounding to nearest even (F. Giesen's float_to_half_fast3_rtne):
/// too large -> infinity, NaN -> quiet NaN, subnormal results by a float
/// addition of a magic number (whose rounding is the one we want), normal
/// results by rebiasing and rounding the dropped 13 mantissa bits.
struct ExpandF16TruncF : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Type from = op.getIn().getType(), to = op.getType();
    if (!getElementTypeOrSelf(from).isF32() ||
        !getElementTypeOrSelf(to).isF16())
      return rewriter.notifyMatchFailure(op, "not f32 to f16");
    if (op.getRoundingmodeAttr())
      return rewriter.notifyMatchFailure(op, "explicit rounding mode");
    Location loc = op.getLoc();
    Type i16 = withElementType(to, rewriter.getI16Type());
    Type i32 = withElementType(from, rewriter.getI32Type());
    auto c = [&](int64_t v) { return constantOf(rewriter, loc, i32, v); };
    constexpr int64_t kInfinity = 255 << 23;
    constexpr int64_t kF16Max = (127 + 16) << 23; // 2^16: rounds to inf
    constexpr int64_t kMinNormal = 113 << 23;     // 2^-14
    constexpr int64_t kDenormMagic = ((127 - 15) + (23 - 10) + 1) << 23;

    Value bits = arith::BitcastOp::create(rewriter, loc, i32, op.getIn());
    Value sign = arith::AndIOp::create(rewriter, loc, bits,
                                       c(static_cast<int32_t>(0x80000000)));
    Value x = arith::XOrIOp::create(rewriter, loc, bits, sign);
    auto cmp = [&](arith::CmpIPredicate p, Value a, int64_t b) {
      return arith::CmpIOp::create(rewriter, loc, p, a, c(b));
    };
    // Overflow, infinity, NaN.
    Value big = arith::SelectOp::create(
        rewriter, loc, cmp(arith::CmpIPredicate::ugt, x, kInfinity), c(0x7e00),
        c(0x7c00));
    // Subnormal results: the float addition aligns and rounds the mantissa.
    Value magic =
        arith::BitcastOp::create(rewriter, loc, from, c(kDenormMagic));
    Value xf = arith::BitcastOp::create(rewriter, loc, from, x);
    Value sum = arith::AddFOp::create(rewriter, loc, xf, magic);
    Value tiny = arith::SubIOp::create(
        rewriter, loc, arith::BitcastOp::create(rewriter, loc, i32, sum),
        c(kDenormMagic));
    // Normal results: rebias, round half to even on the dropped bits.
    Value odd = arith::AndIOp::create(
        rewriter, loc, arith::ShRUIOp::create(rewriter, loc, x, c(13)), c(1));
    Value rebiased = arith::AddIOp::create(
        rewriter, loc, x,
        c(static_cast<int32_t>((15 - 127) * (1 << 23)) + 0xfff));
    Value rounded = arith::AddIOp::create(rewriter, loc, rebiased, odd);
    Value normal = arith::ShRUIOp::create(rewriter, loc, rounded, c(13));

    Value magnitude = arith::SelectOp::create(
        rewriter, loc, cmp(arith::CmpIPredicate::uge, x, kF16Max), big,
        arith::SelectOp::create(rewriter, loc,
                                cmp(arith::CmpIPredicate::ult, x, kMinNormal),
                                tiny, normal));
    Value withSign = arith::OrIOp::create(
        rewriter, loc, magnitude,
        arith::ShRUIOp::create(rewriter, loc, sign, c(16)));
    Value half = arith::TruncIOp::create(rewriter, loc, i16, withSign);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, to, half);
    return success();
  }
};

/// `math.fma` on a narrow type (left alone by
/// math-extend-to-supported-types) computes in f32.
struct ExtendNarrowFma : OpRewritePattern<math::FmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FmaOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!isNarrowFloat(type))
      return rewriter.notifyMatchFailure(op, "not a narrow float");
    Location loc = op.getLoc();
    Type f32 = withElementType(type, rewriter.getF32Type());
    SmallVector<Value> wide;
    for (Value operand : op->getOperands())
      wide.push_back(arith::ExtFOp::create(rewriter, loc, f32, operand));
    Value fma = math::FmaOp::create(rewriter, loc, wide[0], wide[1], wide[2],
                                    op.getFastmathAttr());
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, type, fma);
    return success();
  }
};

struct ExpandNarrowFloatsPass
    : public mlir::gacc::impl::ExpandNarrowFloatsPassBase<
          ExpandNarrowFloatsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    RewritePatternSet patterns(&getContext());
    populateExpandNarrowFloatsPatterns(patterns);
    // No folding: arith-emulate-unsupported-floats marks the truncf/extf
    // pair after each emulated op `contract`, and extf(truncf(x)) would fold
    // to x, dropping every intermediate bf16/f16 rounding (and f16 overflow
    // to inf) in the bodies.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace

void mlir::gacc::populateExpandNarrowFloatsPatterns(
    RewritePatternSet &patterns) {
  patterns.add<SplitExtF, SplitTruncF, ExpandF16ExtF, ExpandF16TruncF,
               ExtendNarrowFma>(patterns.getContext());
  arith::populateExpandBFloat16Patterns(patterns);
}
