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
//===----------------------------------------------------------------------===//

#include "gacc/Check/TorchEvaluator.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/raw_ostream.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>

using namespace mlir;

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
// The evaluator.
//===----------------------------------------------------------------------===//

namespace {

using at::Tensor;

/// Thrown by the evaluation helpers for anything they cannot evaluate; caught
/// in Evaluator::evalOp and turned into a diagnostic at the op.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void unsupported(const Twine &reason) {
  throw Unsupported(reason.str());
}

template <typename T> std::string toString(const T &value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << value;
  return s;
}

std::string toString(at::IntArrayRef shape) {
  std::string s = "[";
  for (auto [i, size] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(size);
  return s + "]";
}

at::IntArrayRef toAt(ArrayRef<int64_t> values) {
  return at::IntArrayRef(values.data(), values.size());
}

InFlightDiagnostic emitFail(Operation *op) {
  return op->emitError() << "cannot evaluate '" << op->getName()
                         << "' with LibTorch: ";
}

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

/// Reduction combiners of linalg payloads: yield COMBINER(out, value).
enum class Combiner {
  Add,
  Mul,
  MaximumF,
  MinimumF,
  MaxNumF,
  MinNumF,
  Max,
  Min,
  Or,
  And
};

std::optional<Combiner> getCombiner(Operation *op) {
  Type type = op->getNumResults() == 1 ? op->getResult(0).getType() : Type();
  if (!type)
    return std::nullopt;
  // i1 reductions: torch-mlir's any.dim / all.dim.
  if (type.isInteger(1)) {
    if (isa<arith::OrIOp>(op))
      return Combiner::Or;
    if (isa<arith::AndIOp>(op))
      return Combiner::And;
    return std::nullopt;
  }
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return Combiner::Add;
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return Combiner::Mul;
  if (isa<arith::MaximumFOp>(op))
    return Combiner::MaximumF;
  if (isa<arith::MinimumFOp>(op))
    return Combiner::MinimumF;
  if (isa<arith::MaxNumFOp>(op))
    return Combiner::MaxNumF;
  if (isa<arith::MinNumFOp>(op))
    return Combiner::MinNumF;
  if (isa<arith::MaxSIOp>(op))
    return Combiner::Max;
  if (isa<arith::MinSIOp>(op))
    return Combiner::Min;
  return std::nullopt;
}

/// IEEE maximum (`max`) or minimum of `a` and `b`: NaN propagates and
/// -0 < +0 (at::maximum/at::minimum return either zero).
Tensor ieeeExtremum(const Tensor &a, const Tensor &b, bool max) {
  Tensor r = max ? at::maximum(a, b) : at::minimum(a, b);
  if (!at::isFloatingType(r.scalar_type()))
    return r;
  Tensor zeros = at::logical_and(a == 0, b == 0);
  return at::where(zeros, at::where(at::signbit(a) == max, b, a), r);
}

/// Reduces `t` over `dims` with `combiner` (dims are dropped).
Tensor reduce(Tensor t, ArrayRef<int64_t> dims, Combiner combiner) {
  at::ScalarType dtype = t.scalar_type();
  switch (combiner) {
  case Combiner::Add:
    return t.sum(toAt(dims), /*keepdim=*/false, dtype);
  case Combiner::Mul:
    for (int64_t dim : llvm::reverse(dims))
      t = t.prod(dim, /*keepdim=*/false, dtype);
    return t;
  case Combiner::Max:
    return t.amax(toAt(dims));
  case Combiner::Min:
    return t.amin(toAt(dims));
  case Combiner::MaximumF:
  case Combiner::MinimumF: {
    // amax/amin return either zero; IEEE: -0 < +0. A zero extremum is +0
    // for a maximum when any reduced +0 exists, -0 for a minimum when any
    // reduced -0 exists.
    bool max = combiner == Combiner::MaximumF;
    Tensor r = max ? t.amax(toAt(dims)) : t.amin(toAt(dims));
    Tensor preferred = at::logical_and(t == 0, at::signbit(t) != max);
    for (int64_t dim : llvm::reverse(dims))
      preferred = preferred.any(dim);
    Tensor zero = at::zeros_like(r);
    Tensor wanted =
        at::where(preferred, max ? zero : zero.neg(), max ? zero.neg() : zero);
    return at::where(r == 0, wanted, r);
  }
  case Combiner::MaxNumF:
  case Combiner::MinNumF: {
    // NaN only where every reduced value is NaN (maxnumf ignores a NaN).
    bool max = combiner == Combiner::MaxNumF;
    Tensor nan = at::isnan(t);
    Tensor allNan = nan;
    for (int64_t dim : llvm::reverse(dims))
      allNan = allNan.all(dim);
    double inf = std::numeric_limits<double>::infinity();
    Tensor filled = t.masked_fill(nan, max ? -inf : inf);
    Tensor r = max ? filled.amax(toAt(dims)) : filled.amin(toAt(dims));
    return r.masked_fill(allNan, std::numeric_limits<double>::quiet_NaN());
  }
  case Combiner::Or:
  case Combiner::And:
    for (int64_t dim : llvm::reverse(dims))
      t = combiner == Combiner::Or ? t.any(dim) : t.all(dim);
    return t;
  }
  llvm_unreachable("unknown combiner");
}

/// Combines the initial value with the reduced value.
Tensor combine(const Tensor &init, const Tensor &reduced, Combiner combiner) {
  switch (combiner) {
  case Combiner::Add:
    return init + reduced;
  case Combiner::Mul:
    return init * reduced;
  case Combiner::MaximumF:
    return ieeeExtremum(init, reduced, /*max=*/true);
  case Combiner::MinimumF:
    return ieeeExtremum(init, reduced, /*max=*/false);
  case Combiner::Max:
    return at::maximum(init, reduced);
  case Combiner::Min:
    return at::minimum(init, reduced);
  case Combiner::MaxNumF:
    return at::fmax(init, reduced);
  case Combiner::MinNumF:
    return at::fmin(init, reduced);
  case Combiner::Or:
    return at::logical_or(init, reduced);
  case Combiner::And:
    return at::logical_and(init, reduced);
  }
  llvm_unreachable("unknown combiner");
}

/// The most elements a tensor materialized over (part of) a linalg iteration
/// domain may have (2^27): gathers of non-projected indexing maps and payloads
/// evaluated on the whole domain. Larger ops are an error, not an OOM.
constexpr int64_t kMaxMaterializedElements = int64_t(1) << 27;

/// Whether every result of `map` is a loop dimension (each at most once) or a
/// constant: the operand is a broadcast/permuted view of the iteration space.
bool isPermutationWithConstants(AffineMap map) {
  llvm::SmallBitVector seen(map.getNumDims());
  for (AffineExpr expr : map.getResults()) {
    if (isa<AffineConstantExpr>(expr))
      continue;
    auto d = dyn_cast<AffineDimExpr>(expr);
    if (!d || seen.test(d.getPosition()))
      return false;
    seen.set(d.getPosition());
  }
  return true;
}

/// The loop dimensions that the results of `map` use, in increasing order.
SmallVector<int64_t> getUsedDims(AffineMap map) {
  llvm::SmallBitVector used(map.getNumDims());
  for (AffineExpr expr : map.getResults())
    expr.walk([&](AffineExpr e) {
      if (auto d = dyn_cast<AffineDimExpr>(e))
        used.set(d.getPosition());
    });
  SmallVector<int64_t> dims;
  for (int64_t d : used.set_bits())
    dims.push_back(d);
  return dims;
}

int64_t product(ArrayRef<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t size : sizes) {
    if (size != 0 && n > std::numeric_limits<int64_t>::max() / size)
      return std::numeric_limits<int64_t>::max();
    n *= size;
  }
  return n;
}

/// The values of the affine expression `expr` at every point of the iteration
/// space, as an int64 tensor with one dimension per loop (the loop's size
/// along the loops `expr` uses, 1 elsewhere).
Tensor affineIndices(AffineExpr expr, ArrayRef<int64_t> loopSizes) {
  at::TensorOptions options(at::kLong);
  SmallVector<int64_t> ones(loopSizes.size(), 1);
  if (auto d = dyn_cast<AffineDimExpr>(expr)) {
    SmallVector<int64_t> shape = ones;
    shape[d.getPosition()] = loopSizes[d.getPosition()];
    return at::arange(loopSizes[d.getPosition()], options).reshape(toAt(shape));
  }
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return at::full(toAt(ones), c.getValue(), options);
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    unsupported("affine expression " + toString(expr) +
                " uses a symbol (only loop dimensions and constants are "
                "supported)");
  Tensor lhs = affineIndices(binary.getLHS(), loopSizes);
  Tensor rhs = affineIndices(binary.getRHS(), loopSizes);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return lhs + rhs;
  case AffineExprKind::Mul:
    return lhs * rhs;
  case AffineExprKind::Mod:
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
    if (at::any(rhs <= 0).item<bool>())
      unsupported("affine expression " + toString(expr) +
                  " divides by a value that is not positive");
    if (expr.getKind() == AffineExprKind::Mod)
      return at::remainder(lhs, rhs);
    if (expr.getKind() == AffineExprKind::FloorDiv)
      return at::div(lhs, rhs, "floor");
    return at::neg(at::div(at::neg(lhs), rhs, "floor"));
  default:
    unsupported("unsupported affine expression " + toString(expr));
  }
}

/// Broadcasts operand `t` of a linalg op to the iteration space: constant
/// indices select, the remaining dimensions are permuted into loop order and
/// size-1 dimensions are inserted for the loops the operand does not use. The
/// result has one dimension per loop (size 1 where broadcast). `map` must
/// satisfy isPermutationWithConstants.
Tensor toIterationSpace(Tensor t, AffineMap map, ArrayRef<int64_t> loopSizes) {
  for (int64_t j = static_cast<int64_t>(map.getNumResults()) - 1; j >= 0; --j)
    if (auto c = dyn_cast<AffineConstantExpr>(map.getResult(j)))
      t = t.select(j, c.getValue());
  SmallVector<int64_t> dims;
  for (AffineExpr expr : map.getResults())
    if (auto d = dyn_cast<AffineDimExpr>(expr))
      dims.push_back(d.getPosition());
  SmallVector<int64_t> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](int64_t a, int64_t b) { return dims[a] < dims[b]; });
  t = t.permute(toAt(order));
  SmallVector<int64_t> shape(loopSizes.size(), 1);
  for (int64_t d : dims)
    shape[d] = loopSizes[d];
  return t.reshape(toAt(shape));
}

/// Gathers operand `t` of a linalg op into the iteration space for any affine
/// `map` (convolution windows `d0 + d5`, strides `2 * d2`, diagonals): each
/// result of the map becomes an index tensor over the loops, and advanced
/// indexing reads the operand at every point (differentiably: the gradient
/// scatters back with accumulation). Same result layout as toIterationSpace.
/// An index out of bounds is an error (the op would read out of bounds).
Tensor gatherToIterationSpace(const Tensor &t, AffineMap map,
                              ArrayRef<int64_t> loopSizes,
                              unsigned operandNumber) {
  SmallVector<int64_t> used = getUsedDims(map);
  SmallVector<int64_t> usedSizes =
      llvm::map_to_vector(used, [&](int64_t d) { return loopSizes[d]; });
  int64_t numel = product(usedSizes);
  if (numel > kMaxMaterializedElements)
    unsupported("reading operand #" + Twine(operandNumber) +
                " through indexing map " + toString(map) + " needs " +
                Twine(numel) + " elements (more than 2^27)");
  c10::List<c10::optional<Tensor>> indices;
  for (auto [j, expr] : llvm::enumerate(map.getResults())) {
    Tensor index = affineIndices(expr, loopSizes);
    if (index.numel() > 0 && (index.min().item<int64_t>() < 0 ||
                              index.max().item<int64_t>() >= t.size(j)))
      unsupported("indexing map " + toString(map) + " reads operand #" +
                  Twine(operandNumber) + " out of bounds in dimension " +
                  Twine(j) + " (indices " + Twine(index.min().item<int64_t>()) +
                  " to " + Twine(index.max().item<int64_t>()) + ", size " +
                  Twine(t.size(j)) + ")");
    indices.push_back(c10::optional<Tensor>(index));
  }
  SmallVector<int64_t> shape(loopSizes.size(), 1);
  for (int64_t d : used)
    shape[d] = loopSizes[d];
  if (indices.empty())
    return t.reshape(toAt(shape));
  return at::index(t, indices).reshape(toAt(shape));
}

/// Operand `t` in the iteration space (see toIterationSpace), by a view where
/// `map` allows it and by a gather otherwise.
Tensor operandInIterationSpace(const Tensor &t, AffineMap map,
                               ArrayRef<int64_t> loopSizes,
                               unsigned operandNumber) {
  if (isPermutationWithConstants(map))
    return toIterationSpace(t, map, loopSizes);
  return gatherToIterationSpace(t, map, loopSizes, operandNumber);
}

/// The payload being evaluated: its iteration space, the block arguments of
/// reduced outputs (only their combiners may use them) and those combiners,
/// and which payload values may be poison (a bool mask over the iteration
/// space per value: a tensor.extract out of bounds yields poison, which the
/// payload may discard with a select, as torch-mlir's nll_loss does for
/// ignored targets; a poison value that reaches an output is an error).
struct Payload {
  SmallVector<int64_t> loopSizes;
  llvm::DenseSet<Value> reducedOutputs;
  llvm::DenseSet<Operation *> combiners;
  llvm::DenseMap<Value, Tensor> poison;
};

/// Whether `cond` holds exactly where `x` beats `out` strictly, with no NaN
/// among them: `cmpf ogt/ugt x, out` (or the mirrored lt), `cmpi sgt x, out`
/// (or slt), possibly and-ed with `cmpf ord` of `x` or `out` (TOSA's
/// NaN-propagating argmax and reduce_max). Returns true for "x greater"
/// (a max), false for a min. Callers reject NaN operands: with NaN the
/// unordered and ord forms differ.
std::optional<bool> matchStrictCompare(Value cond, Value x, Value out) {
  if (auto andOp = cond.getDefiningOp<arith::AndIOp>()) {
    auto isOrd = [&](Value v) {
      auto cmp = v.getDefiningOp<arith::CmpFOp>();
      return cmp && cmp.getPredicate() == arith::CmpFPredicate::ORD &&
             cmp.getLhs() == cmp.getRhs() &&
             (cmp.getLhs() == x || cmp.getLhs() == out);
    };
    if (isOrd(andOp.getRhs()))
      return matchStrictCompare(andOp.getLhs(), x, out);
    if (isOrd(andOp.getLhs()))
      return matchStrictCompare(andOp.getRhs(), x, out);
    return std::nullopt;
  }
  Value lhs, rhs;
  bool greater;
  if (auto cmp = cond.getDefiningOp<arith::CmpFOp>()) {
    arith::CmpFPredicate p = cmp.getPredicate();
    if (p != arith::CmpFPredicate::OGT && p != arith::CmpFPredicate::UGT &&
        p != arith::CmpFPredicate::OLT && p != arith::CmpFPredicate::ULT)
      return std::nullopt;
    greater = p == arith::CmpFPredicate::OGT || p == arith::CmpFPredicate::UGT;
    lhs = cmp.getLhs();
    rhs = cmp.getRhs();
  } else if (auto cmp = cond.getDefiningOp<arith::CmpIOp>()) {
    if (cmp.getPredicate() != arith::CmpIPredicate::sgt &&
        cmp.getPredicate() != arith::CmpIPredicate::slt)
      return std::nullopt;
    greater = cmp.getPredicate() == arith::CmpIPredicate::sgt;
    lhs = cmp.getLhs();
    rhs = cmp.getRhs();
  } else {
    return std::nullopt;
  }
  if (lhs == x && rhs == out)
    return greater;
  if (rhs == x && lhs == out)
    return !greater;
  return std::nullopt;
}

/// Matches output `k` of `op` as an arg-max/min: its payload yields
/// `select(pred, index, out_k)` where `index` is `linalg.index r` (possibly
/// through index_cast) and `pred` compares `x` with `out_v`, the block
/// argument of another output v whose reduced value (`reducedValue(v)`) is x,
/// strictly (matchStrictCompare). Returns (v, r, isMax).
std::optional<std::tuple<unsigned, int64_t, bool>>
matchArgReduction(linalg::LinalgOp op, unsigned k,
                  function_ref<Value(unsigned)> reducedValue) {
  Block *block = op.getBlock();
  unsigned numInputs = op.getNumDpsInputs();
  if (block->getNumArguments() != numInputs + op.getNumDpsInits())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(block->getTerminator());
  auto select = yield.getOperand(k).getDefiningOp<arith::SelectOp>();
  if (!select || select->getBlock() != block ||
      select.getFalseValue() != block->getArgument(numInputs + k))
    return std::nullopt;
  Value index = select.getTrueValue();
  if (auto cast = index.getDefiningOp<arith::IndexCastOp>())
    index = cast.getIn();
  else if (auto cast = index.getDefiningOp<arith::IndexCastUIOp>())
    index = cast.getIn();
  auto indexOp = index.getDefiningOp<linalg::IndexOp>();
  if (!indexOp)
    return std::nullopt;
  for (unsigned v = 0; v < op.getNumDpsInits(); ++v) {
    if (v == k)
      continue;
    Value x = reducedValue(v);
    if (!x)
      continue;
    if (std::optional<bool> isMax = matchStrictCompare(
            select.getCondition(), x, block->getArgument(numInputs + v)))
      return std::make_tuple(v, static_cast<int64_t>(indexOp.getDim()), *isMax);
  }
  return std::nullopt;
}

class Evaluator {
public:
  Evaluator(at::ScalarType computeType, unsigned depth)
      : computeType(computeType), depth(depth) {}

  FailureOr<SmallVector<Tensor>> run(func::FuncOp func, ArrayRef<Tensor> args);
  /// Checks and records the arguments of `func` (the first half of run).
  LogicalResult bind(func::FuncOp func, ArrayRef<Tensor> args);
  /// Evaluates one top-level op.
  LogicalResult step(Operation *op) { return evalOp(op, nullptr); }
  /// The value computed for `value` (after bind/step).
  Tensor valueOf(Value value) const { return get(value); }
  void setValue(Value value, const Tensor &t) { set(value, t); }
  at::ScalarType dtypeOfType(Type type) const { return dtypeOf(type); }
  /// Marks this evaluator as one of several ranks evaluated in lockstep: a
  /// collective it reaches by itself (not through the lockstep driver) is
  /// an error instead of the one-rank identity.
  void setAcrossRanks() { acrossRanks = true; }
  /// A new evaluator for a function called from this one.
  std::unique_ptr<Evaluator> makeCallee() const {
    if (depth >= 64)
      unsupported("calls nested too deeply");
    auto callee = std::make_unique<Evaluator>(computeType, depth + 1);
    callee->acrossRanks = acrossRanks;
    return callee;
  }

private:
  /// Evaluates `op` (inside `payload` when not null) and records its results;
  /// emits the diagnostic on failure.
  LogicalResult evalOp(Operation *op, Payload *payload);
  /// Evaluates `op`. Throws Unsupported (or a torch error) for what it cannot
  /// evaluate; returns failure only when a nested op already emitted one.
  LogicalResult evalOpImpl(Operation *op, Payload *payload);

  void evalConstant(arith::ConstantOp op);
  void evalArithMath(Operation *op);
  void evalTensorOp(Operation *op, Payload *payload);
  LogicalResult evalLinalg(linalg::LinalgOp op);
  /// gacc.scatter_add as index_add along the rows (differentiable); an
  /// index outside the rows is an error, as in the compiled step.
  void evalScatterAdd(gacc::ScatterAddOp op);
  /// Evaluates `inner`, an op of a payload or tensor region evaluated on
  /// whole tensors, and propagates poison (see Payload).
  LogicalResult evalPayloadOp(Operation *inner, Payload &payload);
  /// Throws when `value` may be poison anywhere in the iteration space.
  void checkNotPoison(Value value, const Payload &payload, const Twine &what);
  LogicalResult evalCall(func::CallOp op);
  /// Evaluates the ops of `block` (outside payloads) up to its terminator,
  /// whose operands' values it returns in `yielded`.
  LogicalResult evalBlock(Block &block, SmallVectorImpl<Tensor> &yielded);
  /// scf.if and scf.for on scalars and whole tensors (a schedule on the
  /// step counter, a loop over state).
  LogicalResult evalIf(scf::IfOp op);
  LogicalResult evalFor(scf::ForOp op);
  LogicalResult evalWhile(scf::WhileOp op);
  LogicalResult evalIndexSwitch(scf::IndexSwitchOp op);
  LogicalResult evalExecuteRegion(scf::ExecuteRegionOp op);
  /// affine.apply/min/max, on index scalars or elementwise in payloads.
  void evalAffine(Operation *op);
  /// The arith/math ops of two results: sincos, mului/mulsi/addui_extended.
  void evalTwoResults(Operation *op);
  /// tensor.generate and tensor.pad: ops whose region computes elements.
  LogicalResult evalRegionTensorOp(Operation *op);
  /// Evaluates `body`, whose arguments are the indices of a tensor of shape
  /// `shape` and which yields one element, on all indices at once.
  FailureOr<Tensor> evalIndexRegion(Block &body, ArrayRef<int64_t> shape);
  /// ml_program.global_load_const and global_load of a global that is never
  /// stored: the global's initial value.
  void evalGlobalLoad(Operation *op);

  Tensor get(Value value) const {
    auto it = values.find(value);
    if (it == values.end())
      unsupported("internal error: an operand has no value");
    return it->second;
  }
  void set(Value value, const Tensor &t) { values[value] = t; }
  /// The torch dtype of (the elements of) `type`.
  at::ScalarType dtypeOf(Type type) const {
    std::optional<at::ScalarType> dtype =
        gacc::getTorchElementDType(type, computeType);
    if (!dtype)
      unsupported("type " + toString(type) + " has no LibTorch dtype");
    return *dtype;
  }
  int64_t resolve(OpFoldResult ofr) const {
    if (auto attr = dyn_cast<Attribute>(ofr))
      return cast<IntegerAttr>(attr).getInt();
    Tensor t = get(cast<Value>(ofr));
    if (t.dim() != 0)
      unsupported("an index operand is not a scalar");
    return t.item<int64_t>();
  }
  SmallVector<int64_t> resolve(ArrayRef<OpFoldResult> ofrs) const {
    return llvm::map_to_vector(ofrs,
                               [&](OpFoldResult ofr) { return resolve(ofr); });
  }
  /// The static shape of `type` with its dynamic sizes taken from `dynamic`.
  SmallVector<int64_t> shapeOf(ShapedType type, ValueRange dynamic) const {
    SmallVector<int64_t> shape(type.getShape());
    unsigned next = 0;
    for (int64_t &size : shape)
      if (ShapedType::isDynamic(size))
        size = resolve(OpFoldResult(dynamic[next++]));
    return shape;
  }

  llvm::DenseMap<Value, Tensor> values;
  at::ScalarType computeType;
  unsigned depth;
  bool acrossRanks = false;
};

} // namespace

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

/// The ops of `block` whose evaluation matters: the terminator, ops that may
/// have side effects, and every op whose results (also through values captured
/// by regions) reach them. Dead ops without side effects are not evaluated.
static llvm::DenseSet<Operation *> getLiveOps(Block &block) {
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

/// The tensor (in `dtype`) of a constant's elements: dense (splat or not) or
/// dense_resource.
static Tensor elementsToTensor(ElementsAttr attr, at::ScalarType dtype) {
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

/// Reinterprets the bits of `t` (holding values of type `from`) as values of
/// type `to` (same element width), in `dtype`. Not differentiable.
static Tensor bitcast(const Tensor &t, Type from, Type to,
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

void Evaluator::evalTensorOp(Operation *op, Payload *payload) {
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    Tensor source = get(extract.getTensor());
    c10::List<c10::optional<Tensor>> indices;
    Tensor outOfBounds;
    for (auto [d, v] : llvm::enumerate(extract.getIndices())) {
      Tensor index = get(v);
      Tensor bad = at::logical_or(index < 0, index >= source.size(d));
      if (at::any(bad).item<bool>()) {
        // Outside payloads this is an error; inside, the lanes that read out
        // of bounds are poison (read at a clamped index, then tracked).
        if (!payload || source.size(d) == 0)
          unsupported("index out of bounds in dimension " + Twine(d));
        index = index.clamp(0, source.size(d) - 1);
        outOfBounds =
            outOfBounds.defined() ? at::logical_or(outOfBounds, bad) : bad;
      }
      indices.push_back(c10::optional<Tensor>(index));
    }
    if (outOfBounds.defined())
      payload->poison[extract.getResult()] = outOfBounds;
    set(extract.getResult(),
        indices.empty() ? source : at::index(source, indices));
    return;
  }
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    Tensor source = get(dim.getSource());
    int64_t d = get(dim.getIndex()).item<int64_t>();
    if (d < 0 || d >= source.dim())
      unsupported("dimension out of range");
    set(dim.getResult(),
        at::scalar_tensor(source.size(d), at::TensorOptions(at::kLong)));
    return;
  }
  if (payload)
    unsupported("operation inside a linalg payload");

  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    set(empty.getResult(),
        at::zeros(toAt(resolve(empty.getMixedSizes())),
                  at::TensorOptions(dtypeOf(empty.getType()))));
    return;
  }
  if (auto castOp = dyn_cast<tensor::CastOp>(op)) {
    Tensor source = get(castOp.getSource());
    if (!gacc::matchesType(source, castOp.getType(), computeType))
      unsupported("the operand of shape " + toString(source.sizes()) +
                  " does not have type " + toString(castOp.getType()));
    set(castOp.getResult(), source);
    return;
  }
  // Slices: offsets, sizes and strides per dimension.
  auto slice = [](Tensor t, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                  ArrayRef<int64_t> strides) {
    for (auto [d, offset] : llvm::enumerate(offsets)) {
      int64_t size = sizes[d], stride = strides[d];
      if (offset < 0 || size < 0 || stride < 1 ||
          (size > 0 && offset + (size - 1) * stride >= t.size(d)))
        unsupported("slice out of bounds in dimension " + Twine(d));
      int64_t end = size ? offset + (size - 1) * stride + 1 : offset;
      t = t.slice(d, offset, end, stride);
    }
    return t;
  };
  if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op)) {
    Tensor t = slice(
        get(extract.getSource()), resolve(extract.getMixedOffsets()),
        resolve(extract.getMixedSizes()), resolve(extract.getMixedStrides()));
    llvm::SmallBitVector dropped = extract.getDroppedDims();
    for (int64_t d = static_cast<int64_t>(dropped.size()) - 1; d >= 0; --d)
      if (dropped.test(d))
        t = t.squeeze(d);
    set(extract.getResult(), t);
    return;
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    Tensor dest = get(insert.getDest()).clone();
    Tensor source = get(insert.getSource());
    SmallVector<int64_t> sizes = resolve(insert.getMixedSizes());
    Tensor view = slice(dest, resolve(insert.getMixedOffsets()), sizes,
                        resolve(insert.getMixedStrides()));
    if (source.dim() < static_cast<int64_t>(sizes.size())) {
      SmallVector<int64_t> sourceShape(source.sizes().begin(),
                                       source.sizes().end());
      std::optional<llvm::SmallDenseSet<unsigned>> mask =
          computeRankReductionMask(sizes, sourceShape);
      if (!mask)
        unsupported("cannot match the rank-reduced source to the slice");
      SmallVector<unsigned> droppedDims(mask->begin(), mask->end());
      llvm::sort(droppedDims);
      for (unsigned d : droppedDims)
        source = source.unsqueeze(d);
    }
    if (!view.sizes().equals(source.sizes()))
      unsupported("the source of shape " + toString(source.sizes()) +
                  " does not fit the slice of shape " + toString(view.sizes()));
    view.copy_(source.to(dest.scalar_type()));
    set(insert.getResult(), dest);
    return;
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    Tensor source = get(collapse.getSrc());
    SmallVector<int64_t> shape;
    for (const ReassociationIndices &group :
         collapse.getReassociationIndices()) {
      int64_t size = 1;
      for (int64_t d : group)
        size *= source.size(d);
      shape.push_back(size);
    }
    set(collapse.getResult(), source.reshape(toAt(shape)));
    return;
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    Tensor source = get(expand.getSrc());
    SmallVector<int64_t> shape = resolve(expand.getMixedOutputShape());
    int64_t numel = 1;
    for (int64_t size : shape)
      numel *= size;
    if (numel != source.numel())
      unsupported("the output shape does not have the operand's size");
    set(expand.getResult(), source.reshape(toAt(shape)));
    return;
  }
  if (auto fromElements = dyn_cast<tensor::FromElementsOp>(op)) {
    std::vector<Tensor> elements;
    for (Value v : fromElements.getElements()) {
      elements.push_back(get(v));
      if (elements.back().dim() != 0)
        unsupported("an element is not a scalar");
    }
    SmallVector<int64_t> shape(fromElements.getType().getShape());
    set(fromElements.getResult(), at::stack(elements).reshape(toAt(shape)));
    return;
  }
  if (auto splat = dyn_cast<tensor::SplatOp>(op)) {
    SmallVector<int64_t> shape =
        shapeOf(splat.getType(), splat.getDynamicSizes());
    set(splat.getResult(),
        get(splat.getInput()).expand(toAt(shape)).contiguous());
    return;
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    std::vector<Tensor> inputs;
    for (Value v : concat.getInputs())
      inputs.push_back(get(v));
    set(concat.getResult(),
        at::cat(inputs, static_cast<int64_t>(concat.getDim())));
    return;
  }
  if (auto insert = dyn_cast<tensor::InsertOp>(op)) {
    Tensor dest = get(insert.getDest()).clone();
    Tensor view = dest;
    for (Value v : insert.getIndices()) {
      int64_t index = get(v).item<int64_t>();
      if (index < 0 || index >= view.size(0))
        unsupported("index out of bounds");
      view = view.select(0, index);
    }
    view.copy_(get(insert.getScalar()));
    set(insert.getResult(), dest);
    return;
  }
  if (auto cast = dyn_cast<tensor::BitcastOp>(op)) {
    set(cast.getResult(),
        bitcast(get(cast.getSource()), cast.getSource().getType(),
                cast.getType(), dtypeOf(cast.getType())));
    return;
  }
  if (auto rank = dyn_cast<tensor::RankOp>(op)) {
    set(rank.getResult(), at::scalar_tensor(get(rank.getTensor()).dim(),
                                            at::TensorOptions(at::kLong)));
    return;
  }
  if (auto reshape = dyn_cast<tensor::ReshapeOp>(op)) {
    Tensor shapeTensor = get(reshape.getShape()).to(at::kLong).contiguous();
    std::vector<int64_t> shape(shapeTensor.data_ptr<int64_t>(),
                               shapeTensor.data_ptr<int64_t>() +
                                   shapeTensor.numel());
    Tensor source = get(reshape.getSource());
    int64_t numel = 1;
    for (int64_t size : shape)
      numel *= size;
    if (numel != source.numel())
      unsupported("the shape does not have the operand's size");
    set(reshape.getResult(), source.reshape(shape));
    return;
  }
  unsupported("unsupported operation");
}

LogicalResult Evaluator::evalLinalg(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics())
    unsupported("only linalg ops on tensors are supported");
  Block *block = op.getBlock();
  if (!block)
    unsupported("the op has no payload");
  unsigned numLoops = op.getNumLoops();
  unsigned numInputs = op.getNumDpsInputs();
  unsigned numInits = op.getNumDpsInits();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps.size() != op->getNumOperands())
    unsupported("the op does not have one indexing map per operand");

  // Operands and the iteration space. Loop sizes come from the operand
  // dimensions indexed by a plain loop dimension: first from the operands read
  // as views (projected permutations with constants, whose sizes must agree),
  // then from the gathered ones (convolution inputs `d2 + d5`).
  SmallVector<Tensor> operands;
  SmallVector<bool> isView;
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    Tensor t = get(operand.get());
    AffineMap map = maps[i];
    if (map.getNumDims() != numLoops || map.getNumSymbols() != 0 ||
        map.getNumResults() != t.dim())
      unsupported("indexing map " + toString(map) + " does not fit operand #" +
                  Twine(i));
    operands.push_back(t);
    isView.push_back(isPermutationWithConstants(map));
  }
  SmallVector<int64_t> loopSizes(numLoops, -1);
  for (bool views : {true, false}) {
    for (auto [i, map] : llvm::enumerate(maps)) {
      if (isView[i] != views)
        continue;
      const Tensor &t = operands[i];
      for (auto [j, expr] : llvm::enumerate(map.getResults())) {
        if (auto dimExpr = dyn_cast<AffineDimExpr>(expr)) {
          unsigned d = dimExpr.getPosition();
          if (loopSizes[d] < 0)
            loopSizes[d] = t.size(j);
          else if (views && loopSizes[d] != t.size(j))
            unsupported("operand #" + Twine(i) + " has size " +
                        Twine(t.size(j)) + " in dimension " + Twine(j) +
                        ", but loop dimension d" + Twine(d) + " has size " +
                        Twine(loopSizes[d]));
        } else if (auto c = dyn_cast<AffineConstantExpr>(expr)) {
          if (views && (c.getValue() < 0 || c.getValue() >= t.size(j)))
            unsupported("constant index " + Twine(c.getValue()) +
                        " out of bounds in indexing map " + toString(map));
        }
      }
    }
  }
  for (auto [d, size] : llvm::enumerate(loopSizes))
    if (size < 0)
      unsupported("cannot infer the size of loop dimension d" + Twine(d) +
                  " from the operands (no operand indexes it with a plain "
                  "loop dimension)");

  unsigned numArgs = block->getNumArguments();
  if (numArgs != numInputs + numInits && numArgs != numInputs)
    unsupported("unexpected number of payload arguments");
  auto yield = dyn_cast<linalg::YieldOp>(block->getTerminator());
  if (!yield || yield.getNumOperands() != numInits)
    unsupported("the payload does not yield one value per output");

  // How each output is computed.
  struct OutputPlan {
    SmallVector<int64_t> outDims; // loop dim of each non-constant output dim
    SmallVector<std::pair<int64_t, int64_t>> consts; // (output dim, index)
    SmallVector<int64_t> reducedDims; // loop dims not indexing the output
    Value value;                      // elementwise: yielded; reduce: operand
    std::optional<Combiner> combiner; // set for reductions
    bool identity = false;            // reduction yielding the output as is
    bool skip = false; // an unused result the evaluator cannot compute
    // Arg-max/min (torch-mlir's max.dim/min.dim indices): the index along
    // loop `argDim` of the first extremum of the value reduced by output
    // `argOf`, where it beats that output's initial value.
    std::optional<unsigned> argOf;
    int64_t argDim = 0;
    bool argMax = true;
    bool pending = false; // not COMBINER(out, value); maybe an arg-reduction
    bool selectCombiner = false; // max/min as select(x > out, x, out)
  };
  SmallVector<OutputPlan> plans(numInits);
  Payload payload;
  payload.loopSizes = loopSizes;
  for (unsigned k = 0; k < numInits; ++k) {
    OutputPlan &plan = plans[k];
    AffineMap map = maps[numInputs + k];
    if (!isView[numInputs + k])
      unsupported("output indexing map " + toString(map) +
                  " is not a projected permutation with constant indices");
    llvm::SmallBitVector used(numLoops);
    for (auto [j, expr] : llvm::enumerate(map.getResults())) {
      if (auto c = dyn_cast<AffineConstantExpr>(expr)) {
        plan.consts.push_back({static_cast<int64_t>(j), c.getValue()});
        continue;
      }
      auto dimExpr = cast<AffineDimExpr>(expr);
      plan.outDims.push_back(dimExpr.getPosition());
      used.set(dimExpr.getPosition());
    }
    for (unsigned d = 0; d < numLoops; ++d)
      if (!used.test(d))
        plan.reducedDims.push_back(d);
    Value yielded = yield.getOperand(k);
    Value outArg =
        numArgs > numInputs + k ? block->getArgument(numInputs + k) : Value();
    if (plan.reducedDims.empty()) {
      plan.value = yielded;
      continue;
    }
    if (outArg && yielded == outArg) {
      plan.identity = true;
      continue;
    }
    Operation *def = yielded.getDefiningOp();
    std::optional<Combiner> combiner =
        def && def->getBlock() == block ? getCombiner(def) : std::nullopt;
    Value other;
    if (combiner && outArg && def->getNumOperands() == 2 &&
        yielded.hasOneUse()) {
      if (def->getOperand(0) == outArg && def->getOperand(1) != outArg)
        other = def->getOperand(1);
      else if (def->getOperand(1) == outArg && def->getOperand(0) != outArg)
        other = def->getOperand(0);
    }
    // `select(x > out, x, out)`: a max (min) written as a select, as TOSA's
    // reduce_max and argmax lower (NaN operands are rejected when evaluated).
    if (!other && outArg && def && def->getBlock() == block &&
        yielded.hasOneUse()) {
      if (auto select = dyn_cast<arith::SelectOp>(def);
          select && select.getFalseValue() == outArg &&
          select.getTrueValue() != outArg) {
        Value x = select.getTrueValue();
        if (std::optional<bool> isMax =
                matchStrictCompare(select.getCondition(), x, outArg)) {
          bool isFloat = isa<FloatType>(x.getType());
          plan.value = x;
          plan.combiner =
              isFloat ? (*isMax ? Combiner::MaximumF : Combiner::MinimumF)
                      : (*isMax ? Combiner::Max : Combiner::Min);
          plan.selectCombiner = true;
          payload.reducedOutputs.insert(outArg);
          continue;
        }
      }
    }
    if (!other) {
      plan.pending = true;
      if (outArg)
        payload.reducedOutputs.insert(outArg);
      continue;
    }
    plan.value = other;
    plan.combiner = combiner;
    payload.combiners.insert(def);
    payload.reducedOutputs.insert(outArg);
  }
  // Reductions that are not COMBINER(out, value): the arg-max/min form
  // `select(cmp(x, out_v), index_cast(linalg.index r), out_k)` next to an
  // output v that reduces x by max/min (torch-mlir's max.dim and argmax),
  // or an unused result (the indices of max.dim, which log_softmax leaves
  // unused), which need not be computed.
  for (unsigned k = 0; k < numInits; ++k) {
    OutputPlan &plan = plans[k];
    if (!plan.pending)
      continue;
    if (std::optional<std::tuple<unsigned, int64_t, bool>> arg =
            matchArgReduction(op, k, [&](unsigned v) -> const Value {
              const OutputPlan &p = plans[v];
              return p.combiner ? p.value : Value();
            })) {
      auto [v, dim, isMax] = *arg;
      const OutputPlan &valuePlan = plans[v];
      bool combinerFits = isMax ? (valuePlan.combiner == Combiner::MaximumF ||
                                   valuePlan.combiner == Combiner::Max)
                                : (valuePlan.combiner == Combiner::MinimumF ||
                                   valuePlan.combiner == Combiner::Min);
      if (combinerFits && valuePlan.reducedDims == plan.reducedDims &&
          plan.reducedDims.size() == 1 && plan.reducedDims[0] == dim &&
          maps[numInputs + k] == maps[numInputs + v]) {
        plan.argOf = v;
        plan.argDim = dim;
        plan.argMax = isMax;
        continue;
      }
    }
    if (op->getResult(k).use_empty()) {
      plan.skip = true;
      continue;
    }
    unsupported("output #" + Twine(k) +
                " is reduced, but the payload does not yield "
                "COMBINER(output, value) with a supported combiner "
                "(addf/addi, mulf/muli, maximumf/minimumf, maxnumf/minnumf, "
                "maxsi/minsi) or an arg-max/min select");
  }
  for (const OutputPlan &plan : plans)
    if (!plan.identity && !plan.skip && !plan.argOf &&
        payload.reducedOutputs.contains(plan.value))
      unsupported("the payload uses a reduced output other than in its "
                  "combiner");

  auto finish = [&](unsigned k, Tensor t) {
    set(op->getResult(k), t.to(dtypeOf(op->getResult(k).getType())));
  };
  // The output operand restricted to the positions the op writes (its
  // constant indices selected), in the order of the output's loop dims.
  auto initView = [&](unsigned k) {
    Tensor init = operands[numInputs + k];
    for (auto [j, c] : llvm::reverse(plans[k].consts))
      init = init.select(j, c);
    return init;
  };
  // Output k is `v` (over the output's loop dims) at the written positions
  // and the output operand elsewhere.
  auto place = [&](unsigned k, Tensor v) {
    Tensor init = operands[numInputs + k];
    v = v.to(init.scalar_type());
    if (plans[k].consts.empty()) {
      finish(k, v.contiguous());
      return;
    }
    Tensor result = init.clone();
    Tensor view = result;
    for (auto [j, c] : llvm::reverse(plans[k].consts))
      view = view.select(j, c);
    view.copy_(v);
    finish(k, result);
  };

  // Fast path: a single contraction sum(a * b) is an einsum (matmul,
  // batch_matmul, matvec, weight gradients, convolutions), which avoids
  // materializing the iteration space; an operand whose map is not a
  // projected permutation is gathered over the loops it uses first.
  if (numInits == 1 && !plans[0].skip && plans[0].combiner == Combiner::Add &&
      at::isFloatingType(operands[numInputs].scalar_type()) && numLoops <= 52 &&
      llvm::range_size(block->without_terminator()) == 2) {
    auto mul = plans[0].value.getDefiningOp<arith::MulFOp>();
    auto inputArg = [&](Value v) -> std::optional<unsigned> {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != block || arg.getArgNumber() >= numInputs)
        return std::nullopt;
      return arg.getArgNumber();
    };
    std::optional<unsigned> a, b;
    if (mul && mul->getBlock() == block && mul->hasOneUse()) {
      a = inputArg(mul.getLhs());
      b = inputArg(mul.getRhs());
    }
    auto letter = [](int64_t d) {
      return static_cast<char>(d < 26 ? 'a' + d : 'A' + (d - 26));
    };
    if (a && b) {
      llvm::SmallBitVector covered(numLoops);
      for (unsigned i : {*a, *b})
        for (int64_t d : getUsedDims(maps[i]))
          covered.set(d);
      Tensor init = operands[numInputs];
      if (covered.all() && operands[*a].scalar_type() == init.scalar_type() &&
          operands[*b].scalar_type() == init.scalar_type()) {
        auto einsumOperand = [&](unsigned i, std::string &s) {
          AffineMap map = maps[i];
          if (map.isProjectedPermutation()) {
            for (AffineExpr expr : map.getResults())
              s += letter(cast<AffineDimExpr>(expr).getPosition());
            return operands[i];
          }
          Tensor t = operandInIterationSpace(operands[i], map, loopSizes, i);
          SmallVector<int64_t> sizes;
          for (int64_t d : getUsedDims(map)) {
            s += letter(d);
            sizes.push_back(loopSizes[d]);
          }
          return t.reshape(toAt(sizes));
        };
        std::string la, lb, lo;
        Tensor ta = einsumOperand(*a, la);
        Tensor tb = einsumOperand(*b, lb);
        for (int64_t d : plans[0].outDims)
          lo += letter(d);
        // LibTorch has no CPU matmul for f16: f16 operands are multiplied
        // in f32 (exact products) and the sum rounded to f16 once.
        if (ta.scalar_type() == at::kHalf) {
          ta = ta.to(at::kFloat);
          tb = tb.to(at::kFloat);
        }
        Tensor product = at::einsum(la + "," + lb + "->" + lo, {ta, tb});
        place(0, initView(0) + product.to(init.scalar_type()));
        return success();
      }
    }
  }

  // General path: bind the payload arguments to the operands in the iteration
  // space and evaluate the payload on whole tensors.
  int64_t domain = product(loopSizes);
  if (domain > kMaxMaterializedElements)
    unsupported("the iteration domain " + toString(toAt(loopSizes)) + " has " +
                Twine(domain) +
                " points (more than 2^27); the evaluator materializes it");
  // The payload ops the computed outputs need (unused results are skipped).
  llvm::DenseSet<Value> neededValues;
  for (const OutputPlan &plan : plans)
    if (!plan.identity && !plan.skip && !plan.argOf)
      neededValues.insert(plan.value);
  llvm::DenseSet<Operation *> needed;
  for (Operation &inner : llvm::reverse(block->without_terminator())) {
    if (!llvm::any_of(inner.getResults(),
                      [&](Value v) { return neededValues.contains(v); }))
      continue;
    needed.insert(&inner);
    neededValues.insert(inner.getOperands().begin(), inner.getOperands().end());
  }
  SmallVector<Value> payloadValues;
  llvm::scope_exit cleanup([&] {
    for (Value v : payloadValues)
      values.erase(v);
  });
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    if (i >= numArgs)
      continue;
    BlockArgument arg = block->getArgument(i);
    if (payload.reducedOutputs.contains(arg) || !neededValues.contains(arg))
      continue;
    set(arg, operandInIterationSpace(operands[i], maps[i], loopSizes, i));
    payloadValues.push_back(arg);
  }
  for (Operation &inner : block->without_terminator()) {
    if (!needed.contains(&inner))
      continue;
    for (Value v : inner.getOperands())
      if (payload.reducedOutputs.contains(v))
        unsupported("the payload uses a reduced output other than in its "
                    "combiner");
    if (failed(evalPayloadOp(&inner, payload)))
      return failure();
    llvm::append_range(payloadValues, inner.getResults());
  }

  for (auto [k, plan] : llvm::enumerate(plans)) {
    if (plan.skip) {
      set(op->getResult(k), Tensor());
      continue;
    }
    if (plan.identity) {
      finish(k, operands[numInputs + k]);
      continue;
    }
    if (plan.argOf) {
      unsigned v = *plan.argOf;
      Value xValue = plans[v].value;
      checkNotPoison(xValue, payload, "output #" + Twine(k));
      Tensor x = get(xValue).expand(toAt(loopSizes));
      Tensor initValue = initView(v);
      if (at::isFloatingType(x.scalar_type()) &&
          (at::any(at::isnan(x)).item<bool>() ||
           at::any(at::isnan(initValue)).item<bool>()))
        unsupported("output #" + Twine(k) +
                    " is an arg-max/min of values that contain NaN");
      int64_t r = plan.argDim;
      Tensor extremum = plan.argMax ? x.amax(r, /*keepdim=*/true)
                                    : x.amin(r, /*keepdim=*/true);
      Tensor first = at::eq(x, extremum).to(at::kByte).argmax(r);
      extremum = extremum.squeeze(r);
      SmallVector<int64_t> remaining;
      for (unsigned d = 0; d < numLoops; ++d)
        if (static_cast<int64_t>(d) != r)
          remaining.push_back(d);
      SmallVector<int64_t> perm =
          llvm::map_to_vector(plan.outDims, [&](int64_t d) {
            return static_cast<int64_t>(llvm::find(remaining, d) -
                                        remaining.begin());
          });
      extremum = extremum.permute(toAt(perm));
      first = first.permute(toAt(perm));
      Tensor initIndex = initView(k);
      Tensor better = plan.argMax
                          ? at::gt(extremum, initValue.to(x.scalar_type()))
                          : at::lt(extremum, initValue.to(x.scalar_type()));
      place(k, at::where(better, first.to(initIndex.scalar_type()), initIndex));
      continue;
    }
    checkNotPoison(plan.value, payload, "output #" + Twine(k));
    Tensor t = get(plan.value).expand(toAt(loopSizes));
    if (!plan.combiner) {
      place(k, t.permute(toAt(plan.outDims)));
      continue;
    }
    if (plan.selectCombiner && at::isFloatingType(t.scalar_type()) &&
        (at::any(at::isnan(t)).item<bool>() ||
         at::any(at::isnan(initView(k))).item<bool>()))
      unsupported("output #" + Twine(k) +
                  " is a max/min select over values that contain NaN");
    Tensor reduced = reduce(t, plan.reducedDims, *plan.combiner);
    // `reduced` has the remaining loop dims in increasing order; permute them
    // into the order of the output's indexing map.
    SmallVector<int64_t> remaining;
    for (unsigned d = 0; d < numLoops; ++d)
      if (!llvm::is_contained(plan.reducedDims, d))
        remaining.push_back(d);
    SmallVector<int64_t> perm =
        llvm::map_to_vector(plan.outDims, [&](int64_t d) {
          return static_cast<int64_t>(llvm::find(remaining, d) -
                                      remaining.begin());
        });
    Tensor init = initView(k);
    reduced = reduced.permute(toAt(perm)).to(init.scalar_type());
    place(k, combine(init, reduced, *plan.combiner));
  }
  return success();
}

LogicalResult Evaluator::evalPayloadOp(Operation *inner, Payload &payload) {
  if (inner->getNumRegions() != 0)
    return emitFail(inner) << "ops with regions inside a payload are not "
                              "supported";
  if (failed(evalOp(inner, &payload)))
    return failure();
  // Poison propagates through every op except a select that discards it.
  auto maskOf = [&](Value v) { return payload.poison.lookup(v); };
  auto orMask = [](const Tensor &a, const Tensor &b) {
    if (!a.defined())
      return b;
    if (!b.defined())
      return a;
    return at::logical_or(a, b);
  };
  Tensor mask;
  if (auto select = dyn_cast<arith::SelectOp>(inner)) {
    Tensor onTrue = maskOf(select.getTrueValue());
    Tensor onFalse = maskOf(select.getFalseValue());
    if (onTrue.defined() || onFalse.defined()) {
      Tensor no = at::zeros({}, at::TensorOptions(at::kBool));
      mask =
          at::where(get(select.getCondition()), onTrue.defined() ? onTrue : no,
                    onFalse.defined() ? onFalse : no);
    }
    mask = orMask(mask, maskOf(select.getCondition()));
  } else {
    for (Value v : inner->getOperands())
      mask = orMask(mask, maskOf(v));
  }
  for (Value result : inner->getResults()) {
    Tensor m = orMask(mask, maskOf(result));
    if (m.defined() && at::any(m).item<bool>())
      payload.poison[result] = m;
    else
      payload.poison.erase(result);
  }
  return success();
}

void Evaluator::checkNotPoison(Value value, const Payload &payload,
                               const Twine &what) {
  Tensor mask = payload.poison.lookup(value);
  if (mask.defined() && at::any(mask).item<bool>())
    unsupported(
        what +
        " depends on a tensor.extract that reads out of "
        "bounds (at " +
        Twine(at::sum(mask.expand(toAt(payload.loopSizes))).item<int64_t>()) +
        " points of the iteration space)");
}

FailureOr<Tensor> Evaluator::evalIndexRegion(Block &body,
                                             ArrayRef<int64_t> shape) {
  if (body.getNumArguments() != shape.size())
    unsupported("the region does not have one argument per dimension");
  int64_t numel = product(shape);
  if (numel > kMaxMaterializedElements)
    unsupported("the region computes " + Twine(numel) +
                " elements (more than 2^27)");
  Payload payload;
  payload.loopSizes = SmallVector<int64_t>(shape);
  SmallVector<Value> regionValues;
  llvm::scope_exit cleanup([&] {
    for (Value v : regionValues)
      values.erase(v);
  });
  for (auto [d, arg] : llvm::enumerate(body.getArguments())) {
    SmallVector<int64_t> argShape(shape.size(), 1);
    argShape[d] = shape[d];
    set(arg, at::arange(shape[d], at::TensorOptions(at::kLong))
                 .reshape(toAt(argShape)));
    regionValues.push_back(arg);
  }
  for (Operation &inner : body.without_terminator()) {
    if (failed(evalPayloadOp(&inner, payload)))
      return failure();
    llvm::append_range(regionValues, inner.getResults());
  }
  Operation *terminator = body.getTerminator();
  if (terminator->getNumOperands() != 1)
    unsupported("the region does not yield one value");
  Value yielded = terminator->getOperand(0);
  checkNotPoison(yielded, payload, "the yielded value");
  return get(yielded).expand(toAt(shape)).contiguous();
}

LogicalResult Evaluator::evalRegionTensorOp(Operation *op) {
  if (auto generate = dyn_cast<tensor::GenerateOp>(op)) {
    SmallVector<int64_t> shape =
        shapeOf(generate.getType(), generate.getDynamicExtents());
    FailureOr<Tensor> t = evalIndexRegion(generate.getBody().front(), shape);
    if (failed(t))
      return failure();
    set(generate.getResult(), t->to(dtypeOf(generate.getType())));
    return success();
  }
  auto pad = cast<tensor::PadOp>(op);
  Tensor source = get(pad.getSource());
  SmallVector<int64_t> low = resolve(pad.getMixedLowPad());
  SmallVector<int64_t> high = resolve(pad.getMixedHighPad());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < source.dim(); ++d) {
    if (low[d] < 0 || high[d] < 0)
      unsupported("negative padding is not supported");
    shape.push_back(low[d] + source.size(d) + high[d]);
  }
  // The padding: a value from outside the region, or the region evaluated
  // on every index (also where the source goes; overwritten below).
  Tensor result;
  Value padValue = pad.getConstantPaddingValue();
  if (padValue && padValue.getParentRegion() != &pad.getRegion()) {
    result = get(padValue).expand(toAt(shape));
  } else {
    FailureOr<Tensor> t = evalIndexRegion(pad.getRegion().front(), shape);
    if (failed(t))
      return failure();
    result = *t;
  }
  // A fresh tensor (never a view of an input) that the source is copied into.
  result = result.to(source.scalar_type()).clone(at::MemoryFormat::Contiguous);
  Tensor view = result;
  for (int64_t d = 0; d < source.dim(); ++d)
    view = view.narrow(d, low[d], source.size(d));
  view.copy_(source);
  set(pad.getResult(), result);
  return success();
}

void Evaluator::evalGlobalLoad(Operation *op) {
  SymbolRefAttr symbol;
  if (auto load = dyn_cast<ml_program::GlobalLoadConstOp>(op))
    symbol = load.getGlobal();
  else if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
    symbol = load.getGlobal();
  else
    unsupported("unsupported operation");
  auto global =
      SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(op, symbol);
  if (!global)
    unsupported("cannot find the global " + toString(symbol));
  if (global.getIsMutable()) {
    // A mutable global reads its initial value only if nothing stores to it.
    Operation *top = SymbolTable::getNearestSymbolTable(global);
    bool stored = false;
    top->walk([&](ml_program::GlobalStoreOp store) {
      stored |= SymbolTable::lookupNearestSymbolFrom(
                    store, store.getGlobal()) == global.getOperation();
    });
    if (stored)
      unsupported("the global " + toString(symbol) +
                  " is stored to (only globals that are never stored are "
                  "supported)");
  }
  std::optional<Attribute> value = global.getValue();
  auto elements = value ? dyn_cast<ElementsAttr>(*value) : ElementsAttr();
  if (!elements)
    unsupported("the global " + toString(symbol) +
                " has no dense initial value");
  Type type = op->getResult(0).getType();
  Tensor t = elementsToTensor(elements, dtypeOf(type));
  if (!gacc::matchesType(t, type, computeType))
    unsupported("the value of the global " + toString(symbol) +
                " does not have type " + toString(type));
  set(op->getResult(0), t);
}

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

void Evaluator::evalScatterAdd(gacc::ScatterAddOp op) {
  Tensor updates = get(op.getUpdates());
  Tensor indices = get(op.getIndices()).to(at::kLong).reshape({-1});
  Tensor init = get(op.getInit());
  int64_t rows = init.size(0);
  Tensor outside = at::logical_or(at::lt(indices, 0), at::ge(indices, rows));
  if (outside.any().item<bool>())
    unsupported(
        "index " + Twine(indices.masked_select(outside)[0].item<int64_t>()) +
        " out of range [0, " + Twine(rows) + ") in scatter_add (" +
        Twine(outside.sum().item<int64_t>()) + " out-of-range positions)");
  // One row of updates per position: [positions, init.shape[1:]...].
  std::vector<int64_t> shape{indices.size(0)};
  for (int64_t d = 1; d < init.dim(); ++d)
    shape.push_back(init.size(d));
  Tensor source = updates.reshape(shape).to(init.scalar_type());
  set(op.getResult()[0], init.index_add(0, indices, source));
}

FailureOr<SmallVector<torch::Tensor>>
mlir::gacc::evaluateWithTorch(func::FuncOp func, ArrayRef<torch::Tensor> args,
                              torch::ScalarType computeType) {
  if (computeType != torch::kFloat32 && computeType != torch::kFloat64)
    return emitFail(func) << "the compute type must be kFloat32 or kFloat64";
  return Evaluator(computeType, 0).run(func, args);
}

/// Whether `func` runs a collective, directly or in a function it calls.
static bool reachesCollective(func::FuncOp func,
                              llvm::DenseMap<Operation *, bool> &memo) {
  auto [it, inserted] = memo.try_emplace(func, false);
  if (!inserted)
    return it->second; // a recursive call: whatever the outer walk finds
  bool found = false;
  func.walk([&](Operation *op) {
    if (isa<shard::AllReduceOp>(op)) {
      found = true;
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      found |=
          callee && !callee.isExternal() && reachesCollective(callee, memo);
    }
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  memo[func] = found;
  return found;
}

/// The ranks' values of the all-reduce `op`: each rank's operand combined
/// across the ranks.
static LogicalResult
combineAcrossRanks(shard::AllReduceOp op,
                   ArrayRef<std::unique_ptr<Evaluator>> ranks) {
  try {
    std::vector<torch::Tensor> inputs;
    for (auto &rank : ranks)
      inputs.push_back(rank->valueOf(op.getInput()));
    torch::Tensor stacked = torch::stack(inputs);
    torch::Tensor combined;
    switch (op.getReduction()) {
    case shard::ReductionKind::Sum:
      combined = stacked.sum(0);
      break;
    case shard::ReductionKind::Average:
      combined = stacked.mean(0);
      break;
    case shard::ReductionKind::Max:
      combined = std::get<0>(stacked.max(0));
      break;
    case shard::ReductionKind::Min:
      combined = std::get<0>(stacked.min(0));
      break;
    case shard::ReductionKind::Product:
      combined = stacked.prod(0);
      break;
    default:
      return emitFail(op) << "reduction '"
                          << shard::stringifyReductionKind(op.getReduction())
                          << "' across ranks is not supported";
    }
    for (auto &rank : ranks)
      rank->setValue(op.getResult(),
                     combined.to(rank->dtypeOfType(op.getResult().getType())));
  } catch (const std::exception &e) {
    return emitFail(op) << e.what();
  }
  return success();
}

/// Evaluates `func` on the bound evaluators of all ranks in lockstep: its
/// all-reduces combine the ranks' values, and calls of functions that run
/// collectives are evaluated in lockstep too. Returns each rank's results.
static FailureOr<SmallVector<SmallVector<torch::Tensor>>>
runInLockstep(func::FuncOp func, ArrayRef<std::unique_ptr<Evaluator>> ranks) {
  llvm::DenseMap<Operation *, bool> collectiveMemo;
  llvm::DenseSet<Operation *> live = getLiveOps(func.front());
  for (Operation &op : func.front()) {
    if (!live.contains(&op))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<SmallVector<torch::Tensor>> results;
      for (auto &rank : ranks) {
        SmallVector<torch::Tensor> values;
        for (Value v : ret.getOperands())
          values.push_back(rank->valueOf(v));
        results.push_back(std::move(values));
      }
      return results;
    }
    if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
      if (failed(combineAcrossRanks(allReduce, ranks)))
        return failure();
      continue;
    }
    auto call = dyn_cast<func::CallOp>(op);
    func::FuncOp callee;
    if (call)
      callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
    if (!callee || callee.isExternal() ||
        !reachesCollective(callee, collectiveMemo)) {
      for (auto &rank : ranks)
        if (failed(rank->step(&op)))
          return failure();
      continue;
    }
    std::vector<std::unique_ptr<Evaluator>> nested;
    try {
      for (auto &rank : ranks) {
        nested.push_back(rank->makeCallee());
        SmallVector<torch::Tensor> args = llvm::map_to_vector(
            call.getOperands(), [&](Value v) { return rank->valueOf(v); });
        if (failed(nested.back()->bind(callee, args)))
          return failure();
      }
    } catch (const std::exception &e) {
      return emitFail(call) << e.what();
    }
    auto results = runInLockstep(callee, nested);
    if (failed(results))
      return failure();
    for (auto [rank, values] : llvm::zip_equal(ranks, *results))
      for (auto [result, t] : llvm::zip_equal(call.getResults(), values))
        rank->setValue(result, t);
  }
  return emitFail(func) << "the function does not end with func.return";
}

FailureOr<SmallVector<SmallVector<torch::Tensor>>>
mlir::gacc::evaluateWithTorchOnRanks(
    func::FuncOp func, ArrayRef<SmallVector<torch::Tensor>> rankArgs,
    torch::ScalarType computeType) {
  if (computeType != torch::kFloat32 && computeType != torch::kFloat64)
    return emitFail(func) << "the compute type must be kFloat32 or kFloat64";
  if (rankArgs.empty())
    return emitFail(func) << "expected the arguments of at least one rank";
  // One evaluator per rank, in lockstep over the function's ops; a
  // collective combines the ranks' operands like the data-parallel run does.
  std::vector<std::unique_ptr<Evaluator>> ranks;
  for (ArrayRef<torch::Tensor> args : rankArgs) {
    ranks.push_back(std::make_unique<Evaluator>(computeType, 0));
    ranks.back()->setAcrossRanks();
    if (failed(ranks.back()->bind(func, args)))
      return failure();
  }
  return runInLockstep(func, ranks);
}
