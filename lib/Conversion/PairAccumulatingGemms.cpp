//===- PairAccumulatingGemms.cpp - two micro-batches per pass over C ------===//
//
// The gacc-pair-accumulating-gemms pass, a lowering decision on the host:
// in the loop over equal micro-batches (one compiled body, called once per
// region), each weight gradient is a gaccrt_sgemm that reads and writes its
// whole accumulator C (N x N) for b rows of activations; with a small b its
// kernel tiles load, scale and store C every b inner steps. The pass unrolls
// the loop by two and, where the accumulator is touched by nothing else from
// one micro-batch's GEMM to the next's, replaces the two calls by one
// gaccrt_sgemm_pair at the second: the runtime's kernels then run one GEMM
// over both micro-batches' inner ranges, one pass over C. The first
// micro-batch's operands live until the second's GEMM; a pair is formed
// only when they take at most a quarter of C's bytes, so the memory this
// costs is at most a quarter of the accumulators' (which the step holds
// anyway), and only for accumulators that do not stay in L1.
//
//===----------------------------------------------------------------------===//

#include "BufferAccess.h"
#include "ConcurrentCopies.h"
#include "RuntimeCalls.h"
#include "gacc/Conversion/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "gacc-pair-accumulating-gemms"

namespace mlir::gacc {
#define GEN_PASS_DEF_PAIRACCUMULATINGGEMMSPASS
#include "gacc/Conversion/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {

/// The values an index-typed induction variable takes in one copy of an
/// unrolled body: [lo, hi].
struct IvRange {
  Value iv;
  int64_t lo = 0, hi = 0;
};

/// Closed integer interval.
struct Interval {
  int64_t lo = 0, hi = 0;
};

/// Bounds on `value` when the induction variable is in `range`: constants,
/// the induction variable, and sums, differences and products by a
/// non-negative constant of those (what the loop body computes its offsets
/// and first-iteration tests from). Nothing for anything else, or past a
/// small depth, or on overflow.
std::optional<Interval> getInterval(Value value, const IvRange &range,
                                    int depth = 0) {
  if (value == range.iv)
    return Interval{range.lo, range.hi};
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant))) {
    if (constant.getSignificantBits() > 63)
      return std::nullopt;
    int64_t c = constant.getSExtValue();
    return Interval{c, c};
  }
  Operation *def = value.getDefiningOp();
  if (!def || depth > 8)
    return std::nullopt;
  if (isa<arith::IndexCastOp>(def))
    return getInterval(def->getOperand(0), range, depth + 1);
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(def))
    return std::nullopt;
  std::optional<Interval> a = getInterval(def->getOperand(0), range, depth + 1);
  std::optional<Interval> b = getInterval(def->getOperand(1), range, depth + 1);
  if (!a || !b)
    return std::nullopt;
  int64_t lo, hi;
  bool overflow = false;
  if (isa<arith::AddIOp>(def)) {
    overflow |= llvm::AddOverflow(a->lo, b->lo, lo);
    overflow |= llvm::AddOverflow(a->hi, b->hi, hi);
  } else if (isa<arith::SubIOp>(def)) {
    overflow |= llvm::SubOverflow(a->lo, b->hi, lo);
    overflow |= llvm::SubOverflow(a->hi, b->lo, hi);
  } else {
    if (a->lo == a->hi)
      std::swap(a, b);
    if (b->lo != b->hi || b->lo < 0)
      return std::nullopt;
    overflow |= llvm::MulOverflow(a->lo, b->lo, lo);
    overflow |= llvm::MulOverflow(a->hi, b->lo, hi);
  }
  if (overflow)
    return std::nullopt;
  return Interval{lo, hi};
}

/// The value of the i1 `condition` for every induction variable in
/// `range`, when it is the same for all: an `arith.cmpi` of two intervals.
std::optional<bool> foldCondition(Value condition, const IvRange &range) {
  BoolAttr constant;
  if (matchPattern(condition, m_Constant(&constant)))
    return constant.getValue();
  auto cmp = condition.getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return std::nullopt;
  std::optional<Interval> a = getInterval(cmp.getLhs(), range);
  std::optional<Interval> b = getInterval(cmp.getRhs(), range);
  if (!a || !b)
    return std::nullopt;
  // An unsigned comparison of non-negative intervals is the signed one.
  arith::CmpIPredicate predicate = cmp.getPredicate();
  std::optional<arith::CmpIPredicate> asSigned;
  switch (predicate) {
  case arith::CmpIPredicate::ult:
    asSigned = arith::CmpIPredicate::slt;
    break;
  case arith::CmpIPredicate::ule:
    asSigned = arith::CmpIPredicate::sle;
    break;
  case arith::CmpIPredicate::ugt:
    asSigned = arith::CmpIPredicate::sgt;
    break;
  case arith::CmpIPredicate::uge:
    asSigned = arith::CmpIPredicate::sge;
    break;
  default:
    break;
  }
  if (asSigned) {
    if (a->lo < 0 || b->lo < 0)
      return std::nullopt;
    predicate = *asSigned;
  }
  // The answer when it holds for every pair of values (`yes`) or for none
  // (`no`).
  auto decide = [](bool yes, bool no) -> std::optional<bool> {
    if (yes)
      return true;
    if (no)
      return false;
    return std::nullopt;
  };
  bool equal = a->lo == a->hi && b->lo == b->hi && a->lo == b->lo;
  bool disjoint = a->hi < b->lo || b->hi < a->lo;
  switch (predicate) {
  case arith::CmpIPredicate::eq:
    return decide(equal, disjoint);
  case arith::CmpIPredicate::ne:
    return decide(disjoint, equal);
  case arith::CmpIPredicate::slt:
    return decide(a->hi < b->lo, a->lo >= b->hi);
  case arith::CmpIPredicate::sle:
    return decide(a->hi <= b->lo, a->lo > b->hi);
  case arith::CmpIPredicate::sgt:
    return decide(a->lo > b->hi, a->hi <= b->lo);
  case arith::CmpIPredicate::sge:
    return decide(a->lo >= b->hi, a->hi < b->lo);
  default:
    return std::nullopt;
  }
}

/// The f32 value of `value` for every induction variable in `range`, when
/// it is one constant: a constant, or an `arith.select` whose condition
/// folds.
std::optional<float> foldFloat(Value value, const IvRange &range) {
  FloatAttr constant;
  if (matchPattern(value, m_Constant(&constant)))
    return constant.getValue().convertToFloat();
  auto select = value.getDefiningOp<arith::SelectOp>();
  if (!select)
    return std::nullopt;
  std::optional<bool> condition = foldCondition(select.getCondition(), range);
  if (!condition)
    return std::nullopt;
  return foldFloat(*condition ? select.getTrueValue() : select.getFalseValue(),
                   range);
}

/// The static 2-D f32 memref a gaccrt_sgemm operand (a memref.cast to the
/// runtime's dynamic type) was cast from.
Value getCastSource(Value operand) {
  auto cast = operand.getDefiningOp<memref::CastOp>();
  if (!cast)
    return {};
  auto type = dyn_cast<MemRefType>(cast.getSource().getType());
  if (!type || !type.hasStaticShape() || type.getRank() != 2)
    return {};
  return cast.getSource();
}

int64_t getBytes(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  return type.getNumElements() * 4;
}

/// gaccrt_sgemm's operands: (transA, transB, alpha, beta, A, B, C).
enum Operand { kTransA, kTransB, kAlpha, kBeta, kA, kB, kC };

/// Whether `branch` (no results, no else branch) provably does not run for
/// any induction variable in `range`.
bool neverRuns(scf::IfOp branch, const IvRange &range) {
  return branch.getNumResults() == 0 && branch.getElseRegion().empty() &&
         foldCondition(branch.getCondition(), range) == false;
}

/// The loop over equal micro-batches whose body the pass unrolls: constant
/// bounds, at least two iterations, no loop-carried values.
struct Loop {
  scf::ForOp op;
  int64_t lb = 0, step = 0, trips = 0;

  /// The induction variable's values in copy `copy` (0 or 1) of the body
  /// unrolled by two: lb, lb + 2 step, ... in the first, one step later in
  /// the second.
  IvRange copyRange(int copy) {
    int64_t lo = lb + copy * step;
    return IvRange{op.getInductionVar(), lo, lo + (trips / 2 - 1) * 2 * step};
  }
};

std::optional<Loop> getLoop(scf::ForOp op) {
  if (op.getNumResults() != 0 || !op.getInductionVar().getType().isIndex())
    return std::nullopt;
  APInt lb, ub, step;
  if (!matchPattern(op.getLowerBound(), m_ConstantInt(&lb)) ||
      !matchPattern(op.getUpperBound(), m_ConstantInt(&ub)) ||
      !matchPattern(op.getStep(), m_ConstantInt(&step)) ||
      !step.isStrictlyPositive() || lb.getSignificantBits() > 62 ||
      ub.getSignificantBits() > 62 || step.getSignificantBits() > 62)
    return std::nullopt;
  Loop loop{op, lb.getSExtValue(), step.getSExtValue(), 0};
  int64_t span = ub.getSExtValue() - loop.lb;
  loop.trips = span <= 0 ? 0 : (span + loop.step - 1) / loop.step;
  if (loop.trips < 2)
    return std::nullopt;
  return loop;
}

/// Whether `call` is a gaccrt_sgemm whose two copies in the body unrolled by
/// two can become one gaccrt_sgemm_pair at the second: its accumulator is
/// one view defined outside the loop that no other op of the body touches
/// (no op after the call in the first copy, none before it in the second;
/// an `scf.if` that runs in neither copy does not count), the second copy's
/// beta is 1, nothing in between writes its operands, and those take at
/// most a quarter of C's bytes.
bool isPairable(func::CallOp call, Loop loop, BufferTouchers &touchers,
                bool anySize, int64_t minAccumulatorBytes) {
  if (!getSgemmCall(call))
    return false;
  Block *body = loop.op.getBody();
  if (call->getBlock() != body)
    return false;
  Value a = getCastSource(call.getOperand(kA));
  Value b = getCastSource(call.getOperand(kB));
  Value c = getCastSource(call.getOperand(kC));
  if (!a || !b || !c || loop.op->isAncestor(c.getParentBlock()->getParentOp()))
    return false;
  // Where the pair helps: C larger than the operands (a weight gradient of
  // a small micro-batch), B not transposed (the kernels' paired pass).
  APInt transB;
  if (!matchPattern(call.getOperand(kTransB), m_ConstantInt(&transB)) ||
      !transB.isZero() ||
      (!anySize && (4 * (getBytes(a) + getBytes(b)) > getBytes(c) ||
                    getBytes(c) < minAccumulatorBytes)))
    return false;
  FloatAttr alpha;
  if (!matchPattern(call.getOperand(kAlpha), m_Constant(&alpha)))
    return false;
  IvRange first = loop.copyRange(0), second = loop.copyRange(1);
  std::optional<float> secondBeta = foldFloat(call.getOperand(kBeta), second);
  if (!secondBeta || *secondBeta != 1.0f)
    return false;
  // What runs between the two calls: the first copy's ops after the call,
  // then the second copy's ops before it.
  auto inWindow = [&](Operation *op, const IvRange *&range) {
    range = call->isBeforeInBlock(op) ? &first : &second;
    return op != call.getOperation();
  };
  // No op in between touches C's bytes.
  std::optional<ByteRange> bytes = getByteRange(c);
  std::optional<ArrayRef<Operation *>> cTouchers =
      touchers.get(getViewRoot(c), body);
  if (!bytes || !cTouchers)
    return false;
  for (Operation *toucher : *cTouchers) {
    const IvRange *range;
    if (!inWindow(toucher, range) || touchesOnlyElsewhere(toucher, c, bytes))
      continue;
    // An scf.if that does not run in that copy (the overlapped all-reduce
    // starts after the final region).
    auto branch = dyn_cast<scf::IfOp>(toucher);
    if (branch && neverRuns(branch, *range))
      continue;
    return false;
  }
  // Nothing in between writes or frees the operands: a buffer of the body
  // is the first copy's own (the second copy writes its clone), so only the
  // first copy's later ops count for it.
  for (Value operand : {a, b}) {
    Value root = getViewRoot(operand);
    if (root == getViewRoot(c))
      return false;
    bool ownBuffer = root.getParentBlock() == body;
    SmallVector<Value> aliases;
    SmallVector<Operation *> escapes;
    if (!collectAliases(root, aliases, escapes))
      return false;
    auto writesInWindow = [&](Operation *user, Value alias) {
      Operation *ancestor = body->findAncestorOpInBlock(*user);
      const IvRange *range;
      if (!ancestor || !inWindow(ancestor, range))
        return false;
      if (ownBuffer && range == &second)
        return false;
      // A GEMM call writes only its C.
      auto gemm = dyn_cast<func::CallOp>(user);
      if (gemm && alias && getSgemmCall(gemm))
        return gemm.getOperand(kC) == alias;
      return !alias || mayWriteOrFree(user, alias);
    };
    for (Value alias : aliases)
      for (Operation *user : alias.getUsers())
        if (writesInWindow(user, alias))
          return false;
    for (Operation *escape : escapes)
      if (writesInWindow(escape, Value()))
        return false;
  }
  return true;
}

/// Unrolls `loop` by two: the body runs for iv and iv + step in each
/// iteration of a loop with twice the step, and once more after it for an
/// odd trip count. Returns the second copy's clone of each op of the body.
IRMapping unrollByTwo(Loop loop) {
  scf::ForOp op = loop.op;
  Location loc = op.getLoc();
  Block *body = op.getBody();
  Operation *terminator = body->getTerminator();
  SmallVector<Operation *> ops;
  for (Operation &inner : body->without_terminator())
    ops.push_back(&inner);
  int64_t pairs = loop.trips / 2;
  OpBuilder builder(op);
  op.setUpperBound(arith::ConstantIndexOp::create(
      builder, loc, loop.lb + pairs * 2 * loop.step));
  op.setStep(arith::ConstantIndexOp::create(builder, loc, 2 * loop.step));
  // The second copy.
  IRMapping second;
  builder.setInsertionPoint(terminator);
  second.map(op.getInductionVar(),
             arith::AddIOp::create(
                 builder, loc, op.getInductionVar(),
                 arith::ConstantIndexOp::create(builder, loc, loop.step)));
  for (Operation *inner : ops)
    builder.clone(*inner, second);
  // The last iteration of an odd trip count.
  if (loop.trips % 2) {
    builder.setInsertionPointAfter(op);
    IRMapping last;
    last.map(op.getInductionVar(),
             arith::ConstantIndexOp::create(
                 builder, loc, loop.lb + (loop.trips - 1) * loop.step));
    for (Operation *inner : ops)
      builder.clone(*inner, last);
  }
  return second;
}

struct PairAccumulatingGemmsPass
    : public gacc::impl::PairAccumulatingGemmsPassBase<
          PairAccumulatingGemmsPass> {
  using Base::Base;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp op) { loops.push_back(op); });
    MLIRContext *ctx = &getContext();
    Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
    for (scf::ForOp op : loops) {
      std::optional<Loop> loop = getLoop(op);
      if (!loop)
        continue;
      BufferTouchers touchers;
      SmallVector<func::CallOp> calls;
      for (auto call : op.getBody()->getOps<func::CallOp>())
        if (isPairable(call, *loop, touchers, anySize, minAccumulatorBytes))
          calls.push_back(call);
      if (calls.empty())
        continue;
      IRMapping second = unrollByTwo(*loop);
      // The first copy's scf.ifs that never run: gone, so that nothing
      // visibly touches the accumulators between the pairs' calls.
      IvRange first = loop->copyRange(0);
      for (auto branch :
           llvm::make_early_inc_range(op.getBody()->getOps<scf::IfOp>()))
        if (second.contains(branch.getOperation()) && neverRuns(branch, first))
          branch.erase();
      for (func::CallOp call : calls) {
        auto secondCall =
            cast<func::CallOp>(second.lookup(call.getOperation()));
        OpBuilder builder(secondCall);
        MemRefType matrix = cast<MemRefType>(call.getOperand(kA).getType());
        func::FuncOp pair = getOrDeclareRuntimeFunction(
            call, "gaccrt_sgemm_pair",
            FunctionType::get(
                ctx,
                {i32, i32, f32, f32, matrix, matrix, matrix, matrix, matrix},
                {}));
        func::CallOp::create(
            builder, call.getLoc(), pair,
            ValueRange{call.getOperand(kTransA), call.getOperand(kTransB),
                       call.getOperand(kAlpha), call.getOperand(kBeta),
                       call.getOperand(kA), call.getOperand(kB),
                       secondCall.getOperand(kA), secondCall.getOperand(kB),
                       secondCall.getOperand(kC)});
        secondCall.erase();
        call.erase();
      }
      // The second copy starts with the step added to the induction
      // variable (unrollByTwo).
      if (concurrentCopies) {
        Operation *plusStep =
            second.lookup(op.getInductionVar()).getDefiningOp();
        runCopiesConcurrently(op, plusStep->getOperand(1).getDefiningOp(),
                              anySize, lockstepCopies);
      }
    }
  }
};

} // namespace
