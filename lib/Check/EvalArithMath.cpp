//===- EvalArithMath.cpp - arith and math ops with LibTorch ---------------===//
//
// The LibTorch evaluator (TorchEvaluator.cpp) on arith and math ops: constants
// (scalar, dense, dense_resource), bit casts, and the elementwise ops on
// scalars inside payloads and on whole tensors, with MLIR's integer semantics
// (i1 arithmetic modulo 2, unsigned operations on signed storage; what MLIR
// leaves undefined, such as INT_MIN / -1, is an error).
//
//===----------------------------------------------------------------------===//

#include "EvaluatorImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>
#include <optional>
#include <vector>

using namespace mlir;
using namespace mlir::gacc::torch_eval;

namespace {

/// Width in bits of an integer or index type (index is 64 bits wide).
unsigned getIntWidth(Type type) {
  type = getElementTypeOrSelf(type);
  if (isa<IndexType>(type))
    return 64;
  return type.getIntOrFloatBitWidth();
}

bool isBool(const Tensor &t) { return t.scalar_type() == at::kBool; }

/// The value of the integer tensor `t` (MLIR width `width`) read as an
/// unsigned number, as int64. Values of 64-bit types at or above 2^63 cannot be
/// represented and are an error.
Tensor asUnsigned(const Tensor &t, unsigned width) {
  if (isBool(t))
    return t.to(at::kLong);
  if (width < 64)
    return at::bitwise_and(t.to(at::kLong), (int64_t(1) << width) - 1);
  if (at::any(t < 0).item<bool>())
    unsupported("an unsigned 64-bit operand is at or above 2^63");
  return t;
}

/// An int64 key whose signed order is the unsigned order of `t`'s values.
Tensor unsignedOrderKey(const Tensor &t, unsigned width) {
  if (isBool(t))
    return t.to(at::kLong);
  if (width < 64)
    return at::bitwise_and(t.to(at::kLong), (int64_t(1) << width) - 1);
  return at::bitwise_xor(t, std::numeric_limits<int64_t>::min());
}

/// Integer conversion with sign extension (extsi, trunci, index_cast).
Tensor castIntSigned(const Tensor &t, at::ScalarType to) {
  if (to == at::kBool)
    return at::bitwise_and(t.to(at::kLong), 1).to(at::kBool);
  if (isBool(t)) // i1 true is -1 when read as signed.
    return at::neg(t.to(to));
  return t.to(to);
}

/// Integer conversion with zero extension (extui, index_castui).
Tensor castIntUnsigned(const Tensor &t, unsigned fromWidth, at::ScalarType to) {
  if (to == at::kBool)
    return at::bitwise_and(t.to(at::kLong), 1).to(at::kBool);
  if (isBool(t))
    return t.to(to);
  if (fromWidth < 64)
    return at::bitwise_and(t.to(at::kLong), (int64_t(1) << fromWidth) - 1)
        .to(to);
  return t.to(to);
}

} // namespace

Tensor mlir::gacc::torch_eval::ieeeExtremum(const Tensor &a, const Tensor &b,
                                            bool max) {
  Tensor r = max ? at::maximum(a, b) : at::minimum(a, b);
  if (!at::isFloatingType(r.scalar_type()))
    return r;
  Tensor zeros = at::logical_and(a == 0, b == 0);
  return at::where(zeros, at::where(at::signbit(a) == max, b, a), r);
}

/// The integer value of `v` (i1 as 0/1); wider than 64 bits is an error.
static int64_t intValue(const APInt &v) {
  if (v.getBitWidth() == 1)
    return v.getBoolValue();
  if (v.getBitWidth() > 64)
    unsupported("integers wider than 64 bits are not supported");
  return v.getSExtValue();
}

/// The torch dtype that stores elements of `type` bit for bit in a
/// dense_resource blob (i1 is one byte per element).
static std::optional<at::ScalarType> getStorageDType(Type type) {
  if (type.isF16())
    return at::kHalf;
  return gacc::getTorchDType(type, at::kFloat);
}

Tensor mlir::gacc::torch_eval::elementsToTensor(ElementsAttr attr,
                                                at::ScalarType dtype) {
  auto type = cast<ShapedType>(attr.getType());
  SmallVector<int64_t> shape(type.getShape());
  Type elementType = type.getElementType();
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    std::optional<at::ScalarType> storage = getStorageDType(elementType);
    if (!storage)
      unsupported("unsupported dense_resource element type " +
                  toString(elementType));
    ArrayRef<char> data = resource.getData();
    int64_t numel = product(shape);
    size_t bytes = static_cast<size_t>(numel) * at::elementSize(*storage);
    if (data.size() != bytes)
      unsupported("the dense_resource blob has " + Twine(data.size()) +
                  " bytes, but " + Twine(bytes) +
                  " are expected (missing or splat blob)");
    Tensor t = at::empty(toAt(shape), at::TensorOptions(*storage));
    if (bytes)
      std::memcpy(t.data_ptr(), data.data(), bytes);
    return t.to(dtype);
  }
  auto dense = dyn_cast<DenseIntOrFPElementsAttr>(attr);
  if (!dense)
    unsupported("unsupported constant attribute " + toString(attr));
  if (isa<FloatType>(elementType)) {
    if (dense.isSplat()) {
      double v = FloatAttr::getValueAsDouble(dense.getSplatValue<APFloat>());
      return at::full(toAt(shape), v, at::TensorOptions(dtype));
    }
    std::vector<double> data;
    for (const APFloat &v : dense.getValues<APFloat>())
      data.push_back(FloatAttr::getValueAsDouble(v));
    return at::tensor(data, at::TensorOptions(at::kDouble))
        .reshape(toAt(shape))
        .to(dtype);
  }
  if (!elementType.isIntOrIndex())
    unsupported("unsupported constant element type " + toString(elementType));
  if (dense.isSplat())
    return at::full(toAt(shape), intValue(dense.getSplatValue<APInt>()),
                    at::TensorOptions(at::kLong))
        .to(dtype);
  std::vector<int64_t> data;
  for (const APInt &v : dense.getValues<APInt>())
    data.push_back(intValue(v));
  return at::tensor(data, at::TensorOptions(at::kLong))
      .reshape(toAt(shape))
      .to(dtype);
}

Tensor mlir::gacc::torch_eval::bitcast(const Tensor &t, Type from, Type to,
                                       at::ScalarType dtype) {
  Type fromElement = getElementTypeOrSelf(from);
  Type toElement = getElementTypeOrSelf(to);
  std::optional<at::ScalarType> fromOwn = getStorageDType(fromElement);
  std::optional<at::ScalarType> toOwn = getStorageDType(toElement);
  if (!fromOwn || !toOwn || *fromOwn == at::kBool || *toOwn == at::kBool ||
      at::elementSize(*fromOwn) != at::elementSize(*toOwn))
    unsupported("bit casts from " + toString(fromElement) + " to " +
                toString(toElement) + " are not supported");
  Tensor own = t.detach().to(*fromOwn).contiguous();
  if (own.dim() == 0)
    return own.reshape({1}).view(*toOwn).reshape({}).to(dtype);
  return own.view(*toOwn).to(dtype);
}

void Evaluator::evalConstant(arith::ConstantOp op) {
  Type type = op.getType();
  at::ScalarType dtype = dtypeOf(type);
  Attribute attr = op.getValue();
  if (auto f = dyn_cast<FloatAttr>(attr)) {
    set(op.getResult(),
        at::scalar_tensor(f.getValueAsDouble(), at::TensorOptions(dtype)));
    return;
  }
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    set(op.getResult(),
        at::scalar_tensor(intValue(i.getValue()), at::TensorOptions(at::kLong))
            .to(dtype));
    return;
  }
  auto elements = dyn_cast<ElementsAttr>(attr);
  if (!elements)
    unsupported("unsupported constant attribute " + toString(attr));
  set(op.getResult(), elementsToTensor(elements, dtype));
}

void Evaluator::evalArithMath(Operation *op) {
  if (op->getNumResults() != 1)
    unsupported("unsupported operation");
  SmallVector<Tensor> in =
      llvm::map_to_vector(op->getOperands(), [&](Value v) { return get(v); });
  Value result = op->getResult(0);
  at::ScalarType dtype = dtypeOf(result.getType());
  auto operandWidth = [&](unsigned i) {
    return getIntWidth(op->getOperand(i).getType());
  };

  // i1 arithmetic is modulo 2; only the ops below support it.
  if (!in.empty() && isBool(in[0]) &&
      !isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::AndIOp,
           arith::OrIOp, arith::XOrIOp, arith::CmpIOp, arith::SelectOp,
           arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp,
           arith::IndexCastUIOp, arith::SIToFPOp, arith::UIToFPOp>(op))
    unsupported("unsupported on i1 values");

  // An integer division by zero is undefined in MLIR: an error at the op,
  // as the compiled step reports it (gacc-guard-divisions), never a value
  // or a trap of LibTorch's integer kernels.
  if (isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
          arith::FloorDivSIOp, arith::CeilDivSIOp, arith::CeilDivUIOp>(op) &&
      !at::isFloatingType(in[1].scalar_type()) &&
      at::any(in[1] == 0).item<bool>())
    unsupported("integer division by zero (undefined behaviour)");
  // INT_MIN / -1 overflows: undefined in MLIR, and a hardware trap (SIGFPE)
  // in LibTorch's integer division.
  if (isa<arith::DivSIOp, arith::RemSIOp, arith::FloorDivSIOp,
          arith::CeilDivSIOp>(op) &&
      !at::isFloatingType(in[0].scalar_type())) {
    unsigned width = operandWidth(0);
    if (width >= 2 && width <= 64) {
      int64_t minimum = width == 64 ? std::numeric_limits<int64_t>::min()
                                    : -(int64_t(1) << (width - 1));
      if (at::any(at::logical_and(in[0] == minimum, in[1] == -1)).item<bool>())
        unsupported("signed division of the minimum value by -1 overflows "
                    "(undefined behaviour)");
    }
  }

  Tensor r;
  // Floating-point and integer arithmetic.
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    r = isBool(in[0]) ? at::logical_xor(in[0], in[1]) : in[0] + in[1];
  else if (isa<arith::SubFOp, arith::SubIOp>(op))
    r = isBool(in[0]) ? at::logical_xor(in[0], in[1]) : in[0] - in[1];
  else if (isa<arith::MulFOp, arith::MulIOp>(op))
    r = isBool(in[0]) ? at::logical_and(in[0], in[1]) : in[0] * in[1];
  else if (isa<arith::DivFOp>(op))
    r = at::div(in[0], in[1]);
  else if (isa<arith::RemFOp, arith::RemSIOp>(op))
    r = at::fmod(in[0], in[1]);
  else if (isa<arith::NegFOp>(op))
    r = at::neg(in[0]);
  else if (isa<arith::DivSIOp>(op))
    r = at::div(in[0], in[1], "trunc");
  else if (isa<arith::FloorDivSIOp>(op))
    r = at::div(in[0], in[1], "floor");
  else if (isa<arith::CeilDivSIOp>(op)) {
    // -floor(-a / b) overflows for INT_MIN: the truncated quotient, plus
    // one where the remainder is non-zero with b's sign.
    Tensor q = at::div(in[0], in[1], "trunc");
    Tensor rem = in[0] - q * in[1];
    Tensor up = at::logical_and(rem != 0, at::eq(rem > 0, in[1] > 0));
    r = q + up.to(q.scalar_type());
  } else if (isa<arith::DivUIOp>(op))
    r = at::div(asUnsigned(in[0], operandWidth(0)),
                asUnsigned(in[1], operandWidth(1)), "trunc");
  else if (isa<arith::RemUIOp>(op))
    r = at::fmod(asUnsigned(in[0], operandWidth(0)),
                 asUnsigned(in[1], operandWidth(1)));
  else if (isa<arith::CeilDivUIOp>(op)) {
    Tensor a = asUnsigned(in[0], operandWidth(0));
    Tensor b = asUnsigned(in[1], operandWidth(1));
    r = at::neg(at::div(at::neg(a), b, "floor"));
  } else if (isa<arith::MaxSIOp>(op))
    r = at::maximum(in[0], in[1]);
  else if (isa<arith::MinSIOp>(op))
    r = at::minimum(in[0], in[1]);
  else if (isa<arith::MaximumFOp, arith::MinimumFOp>(op)) {
    r = ieeeExtremum(in[0], in[1], isa<arith::MaximumFOp>(op));
  } else if (isa<arith::MaxNumFOp>(op))
    r = at::fmax(in[0], in[1]);
  else if (isa<arith::MinNumFOp>(op))
    r = at::fmin(in[0], in[1]);
  else if (isa<arith::MaxUIOp, arith::MinUIOp>(op)) {
    Tensor ka = unsignedOrderKey(in[0], operandWidth(0));
    Tensor kb = unsignedOrderKey(in[1], operandWidth(1));
    Tensor aWins = isa<arith::MaxUIOp>(op) ? at::ge(ka, kb) : at::le(ka, kb);
    r = at::where(aWins, in[0], in[1]);
  } else if (isa<arith::AndIOp>(op))
    r = at::bitwise_and(in[0], in[1]);
  else if (isa<arith::OrIOp>(op))
    r = at::bitwise_or(in[0], in[1]);
  else if (isa<arith::XOrIOp>(op))
    r = at::bitwise_xor(in[0], in[1]);
  else if (isa<arith::ShLIOp>(op))
    r = at::bitwise_left_shift(in[0], in[1]);
  else if (isa<arith::ShRSIOp>(op))
    r = at::bitwise_right_shift(in[0], in[1]);
  else if (isa<arith::ShRUIOp>(op))
    r = at::bitwise_right_shift(asUnsigned(in[0], operandWidth(0)), in[1]);
  // Comparisons and select.
  else if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    Tensor a = in[0], b = in[1];
    Tensor unordered = at::logical_or(at::isnan(a), at::isnan(b));
    using P = arith::CmpFPredicate;
    switch (cmp.getPredicate()) {
    case P::AlwaysFalse:
      r = at::zeros_like(at::eq(a, b));
      break;
    case P::AlwaysTrue:
      r = at::ones_like(at::eq(a, b));
      break;
    case P::OEQ:
      r = at::eq(a, b);
      break;
    case P::OGT:
      r = at::gt(a, b);
      break;
    case P::OGE:
      r = at::ge(a, b);
      break;
    case P::OLT:
      r = at::lt(a, b);
      break;
    case P::OLE:
      r = at::le(a, b);
      break;
    case P::ONE:
      r = at::logical_and(at::ne(a, b), at::logical_not(unordered));
      break;
    case P::ORD:
      r = at::logical_not(unordered);
      break;
    case P::UEQ:
      r = at::logical_or(at::eq(a, b), unordered);
      break;
    case P::UGT:
      r = at::logical_or(at::gt(a, b), unordered);
      break;
    case P::UGE:
      r = at::logical_or(at::ge(a, b), unordered);
      break;
    case P::ULT:
      r = at::logical_or(at::lt(a, b), unordered);
      break;
    case P::ULE:
      r = at::logical_or(at::le(a, b), unordered);
      break;
    case P::UNE:
      r = at::ne(a, b);
      break;
    case P::UNO:
      r = unordered;
      break;
    }
  } else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    using P = arith::CmpIPredicate;
    P pred = cmp.getPredicate();
    Tensor a = in[0], b = in[1];
    if (pred == P::ult || pred == P::ule || pred == P::ugt || pred == P::uge) {
      a = unsignedOrderKey(a, operandWidth(0));
      b = unsignedOrderKey(b, operandWidth(1));
    } else if (isBool(a)) {
      // Signed i1: true is -1.
      a = castIntSigned(a, at::kLong);
      b = castIntSigned(b, at::kLong);
    }
    switch (pred) {
    case P::eq:
      r = at::eq(a, b);
      break;
    case P::ne:
      r = at::ne(a, b);
      break;
    case P::slt:
    case P::ult:
      r = at::lt(a, b);
      break;
    case P::sle:
    case P::ule:
      r = at::le(a, b);
      break;
    case P::sgt:
    case P::ugt:
      r = at::gt(a, b);
      break;
    case P::sge:
    case P::uge:
      r = at::ge(a, b);
      break;
    }
  } else if (isa<arith::SelectOp>(op))
    r = at::where(in[0], in[1], in[2]);
  // Casts.
  else if (isa<arith::ExtFOp>(op))
    r = in[0].to(dtype);
  else if (auto truncf = dyn_cast<arith::TruncFOp>(op)) {
    if (truncf.getRoundingmode() &&
        *truncf.getRoundingmode() != arith::RoundingMode::to_nearest_even)
      unsupported("only round-to-nearest-even truncation is supported");
    r = in[0].to(dtype);
  } else if (isa<arith::SIToFPOp>(op))
    r = isBool(in[0]) ? at::zeros_like(in[0], dtype) - in[0].to(dtype)
                      : in[0].to(dtype); // true is -1, false +0
  else if (isa<arith::UIToFPOp>(op)) {
    unsigned width = operandWidth(0);
    if (isBool(in[0]) || width < 64)
      r = castIntUnsigned(in[0], width, at::kLong).to(dtype);
    else
      r = at::where(in[0] < 0, in[0].to(at::kDouble) + 18446744073709551616.0,
                    in[0].to(at::kDouble))
              .to(dtype);
  } else if (isa<arith::FPToSIOp, arith::FPToUIOp>(op)) {
    if (dtype == at::kBool)
      unsupported("conversion to i1 is not supported");
    r = in[0].to(at::kLong).to(dtype);
    if (isa<arith::FPToUIOp>(op) && dtype == at::kLong) {
      // At or above 2^63: the unsigned value's bits.
      Tensor x = in[0].to(at::kDouble);
      Tensor high = at::bitwise_or((x - 9223372036854775808.0).to(at::kLong),
                                   std::numeric_limits<int64_t>::min());
      r = at::where(x >= 9223372036854775808.0, high, r);
    }
  } else if (isa<arith::ExtSIOp, arith::TruncIOp, arith::IndexCastOp>(op))
    r = castIntSigned(in[0], dtype);
  else if (isa<arith::ExtUIOp, arith::IndexCastUIOp>(op))
    r = castIntUnsigned(in[0], operandWidth(0), dtype);
  else if (isa<arith::BitcastOp>(op)) {
    r = op->getOperand(0).getType() == result.getType()
            ? in[0]
            : bitcast(in[0], op->getOperand(0).getType(), result.getType(),
                      dtype);
  }
  // Math.
  else if (isa<math::AbsFOp, math::AbsIOp>(op))
    r = at::abs(in[0]);
  else if (isa<math::ExpOp>(op))
    r = at::exp(in[0]);
  else if (isa<math::Exp2Op>(op))
    r = at::exp2(in[0]);
  else if (isa<math::ExpM1Op>(op))
    r = at::expm1(in[0]);
  else if (isa<math::LogOp>(op))
    r = at::log(in[0]);
  else if (isa<math::Log2Op>(op))
    r = at::log2(in[0]);
  else if (isa<math::Log10Op>(op))
    r = at::log10(in[0]);
  else if (isa<math::Log1pOp>(op))
    r = at::log1p(in[0]);
  else if (isa<math::SqrtOp>(op))
    r = at::sqrt(in[0]);
  else if (isa<math::RsqrtOp>(op))
    r = at::rsqrt(in[0]);
  else if (isa<math::CbrtOp>(op))
    r = at::copysign(at::pow(at::abs(in[0]), 1.0 / 3.0), in[0]);
  else if (isa<math::TanhOp>(op))
    r = at::tanh(in[0]);
  else if (isa<math::SinOp>(op))
    r = at::sin(in[0]);
  else if (isa<math::CosOp>(op))
    r = at::cos(in[0]);
  else if (isa<math::TanOp>(op))
    r = at::tan(in[0]);
  else if (isa<math::AsinOp>(op))
    r = at::asin(in[0]);
  else if (isa<math::AcosOp>(op))
    r = at::acos(in[0]);
  else if (isa<math::AtanOp>(op))
    r = at::atan(in[0]);
  else if (isa<math::Atan2Op>(op))
    r = at::atan2(in[0], in[1]);
  else if (isa<math::SinhOp>(op))
    r = at::sinh(in[0]);
  else if (isa<math::CoshOp>(op))
    r = at::cosh(in[0]);
  else if (isa<math::AsinhOp>(op))
    r = at::asinh(in[0]);
  else if (isa<math::AcoshOp>(op))
    r = at::acosh(in[0]);
  else if (isa<math::AtanhOp>(op))
    r = at::atanh(in[0]);
  else if (isa<math::ErfOp>(op))
    r = at::erf(in[0]);
  else if (isa<math::ErfcOp>(op))
    r = at::erfc(in[0]);
  else if (isa<math::IPowIOp>(op)) {
    // A negative exponent as the CPU lowering (convert-math-to-funcs)
    // computes it: 1 for a base of 1, +-1 for -1, 0 otherwise; a zero base
    // divides by zero.
    Tensor negative = in[1] < 0;
    if (at::any(at::logical_and(negative, in[0] == 0)).item<bool>())
      unsupported("zero to a negative power divides by zero");
    Tensor one = at::ones_like(in[0]);
    Tensor odd = at::bitwise_and(in[1], 1) != 0;
    Tensor small =
        at::where(in[0] == 1, one,
                  at::where(in[0] == -1, at::where(odd, one.neg(), one),
                            at::zeros_like(in[0])));
    r = at::where(
        negative, small,
        at::pow(in[0], at::where(negative, at::zeros_like(in[1]), in[1])));
  } else if (isa<math::PowFOp, math::FPowIOp>(op))
    r = at::pow(in[0], in[1]);
  else if (isa<math::FloorOp>(op))
    r = at::floor(in[0]);
  else if (isa<math::CeilOp>(op))
    r = at::ceil(in[0]);
  else if (isa<math::TruncOp>(op))
    r = at::trunc(in[0]);
  else if (isa<math::RoundEvenOp>(op))
    r = at::round(in[0]);
  else if (isa<math::RoundOp>(op)) {
    // Half away from zero: x - trunc(x) is exact.
    Tensor t = at::trunc(in[0]);
    Tensor halfOrMore = at::ge(at::abs(in[0] - t), 0.5);
    // The sign of x, also for a zero result (round(-0.3) = -0).
    r = at::copysign(
        t + at::where(halfOrMore, at::sign(in[0]), at::zeros_like(in[0])),
        in[0]);
  } else if (isa<math::CopySignOp>(op))
    r = at::copysign(in[0], in[1]);
  else if (isa<math::FmaOp>(op))
    r = in[0] * in[1] + in[2];
  else if (isa<math::ClampFOp>(op))
    r = at::clamp(in[0], in[1], in[2]);
  else if (isa<math::IsNaNOp>(op))
    r = at::isnan(in[0]);
  else if (isa<math::IsInfOp>(op))
    r = at::isinf(in[0]);
  else if (isa<math::IsNormalOp>(op)) {
    // Normal in the operand's own type (also when evaluated in float64).
    auto type = cast<FloatType>(getElementTypeOrSelf(op->getOperand(0)));
    double smallest = APFloat::getSmallestNormalized(type.getFloatSemantics())
                          .convertToDouble();
    Tensor magnitude = at::abs(in[0]);
    r = at::logical_and(magnitude >= smallest, at::isfinite(in[0]));
  } else if (isa<math::IsFiniteOp>(op))
    r = at::isfinite(in[0]);
  else if (isa<math::CtPopOp, math::CountLeadingZerosOp,
               math::CountTrailingZerosOp>(op)) {
    // Bit by bit over the operand's width (the bits of a two's-complement
    // value stored in a wider dtype are its own).
    int64_t width = operandWidth(0);
    auto bit = [&](int64_t i) {
      return at::bitwise_and(at::bitwise_right_shift(in[0], i), 1) != 0;
    };
    if (isa<math::CtPopOp>(op)) {
      r = at::zeros_like(in[0]);
      for (int64_t i = 0; i < width; ++i)
        r = r + bit(i).to(r.scalar_type());
    } else {
      // The highest (lowest) set bit wins: visit it last.
      bool leading = isa<math::CountLeadingZerosOp>(op);
      r = at::full_like(in[0], width);
      for (int64_t k = 0; k < width; ++k) {
        int64_t i = leading ? k : width - 1 - k;
        r = at::where(bit(i), at::full_like(r, leading ? width - 1 - i : i), r);
      }
    }
  } else
    unsupported("unsupported operation");
  set(result, r.to(dtype));
}

void Evaluator::evalTwoResults(Operation *op) {
  SmallVector<Tensor> in =
      llvm::map_to_vector(op->getOperands(), [&](Value v) { return get(v); });
  Value first = op->getResult(0), second = op->getResult(1);
  if (isa<math::SincosOp>(op)) {
    set(first, at::sin(in[0]).to(dtypeOf(first.getType())));
    set(second, at::cos(in[0]).to(dtypeOf(second.getType())));
    return;
  }
  unsigned width = getIntWidth(op->getOperand(0).getType());
  at::ScalarType dtype = dtypeOf(first.getType());
  if (isBool(in[0]))
    unsupported("unsupported on i1 values");
  if (auto add = dyn_cast<arith::AddUIExtendedOp>(op)) {
    // The sum wraps; the overflow bit is the unsigned carry.
    Tensor sum =
        castIntSigned(in[0].to(at::kLong) + in[1].to(at::kLong), dtype);
    set(first, sum);
    set(second,
        at::lt(unsignedOrderKey(sum, width), unsignedOrderKey(in[0], width)));
    return;
  }
  if (width > 32)
    unsupported("extended multiplication of integers wider than 32 bits is "
                "not supported");
  // The 2 * width-bit product fits in int64 (its bits, for unsigned 32-bit
  // operands): the low and high halves.
  bool isSigned = isa<arith::MulSIExtendedOp>(op);
  Tensor a = isSigned ? in[0].to(at::kLong) : asUnsigned(in[0], width);
  Tensor b = isSigned ? in[1].to(at::kLong) : asUnsigned(in[1], width);
  Tensor product = a * b;
  set(first, castIntSigned(product, dtype));
  set(second, castIntSigned(
                  at::bitwise_right_shift(product, static_cast<int64_t>(width)),
                  dtype));
}
