//===- EvalLinalg.cpp - linalg structured ops with LibTorch ---------------===//
//
// The LibTorch evaluator (TorchEvaluator.cpp) on linalg structured ops, on
// whole tensors: each operand is broadcast to the iteration space by its
// indexing map (a view for projected permutations and constant indices, a
// gather for any other affine map, e.g. convolution windows), the payload is
// evaluated once with torch's elementwise ops, reductions are recognized by
// their combiner (add -> sum, mul -> prod, max/min -> amax/amin, arg-max/min
// selects), and outputs with constant indices (keepdim `(d0, 0)`) are written
// at those positions. A single contraction `out + a * b` is one einsum. Also
// the regions of tensor.generate and tensor.pad, evaluated on every index at
// once (evalIndexRegion).
//
//===----------------------------------------------------------------------===//

#include "EvaluatorImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallBitVector.h"

#include <ATen/ATen.h>

#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>

using namespace mlir;
using namespace mlir::gacc::torch_eval;

int64_t mlir::gacc::torch_eval::product(ArrayRef<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t size : sizes) {
    if (size != 0 && n > std::numeric_limits<int64_t>::max() / size)
      return std::numeric_limits<int64_t>::max();
    n *= size;
  }
  return n;
}

namespace {

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

} // namespace

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
