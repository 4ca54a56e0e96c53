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
// anyway), and only for accumulators that do not stay in L1. The two copies
// then run side by side where they are independent (ConcurrentCopies.h),
// and from four micro-batches on, as copies of two micro-batches each in
// lockstep, their pairs as one gaccrt_sgemm_quad (formPairedCopies).
//
//===----------------------------------------------------------------------===//

#include "Common/BufferAccess.h"
#include "Common/RuntimeCalls.h"
#include "ConcurrentCopies.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "gacc-pair-accumulating-gemms"

namespace mlir::gacc {
#define GEN_PASS_DEF_PAIRACCUMULATINGGEMMSPASS
#include "gacc/Lowering/Passes.h.inc"
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
/// small depth, or on overflow (also of a narrower integer type than 64
/// bits: its values wrap).
std::optional<Interval> getIntervalUnchecked(Value value, const IvRange &range,
                                             int depth);

std::optional<Interval> getInterval(Value value, const IvRange &range,
                                    int depth = 0) {
  std::optional<Interval> interval = getIntervalUnchecked(value, range, depth);
  if (!interval)
    return std::nullopt;
  if (auto integer = dyn_cast<IntegerType>(value.getType());
      integer && integer.getWidth() < 64) {
    unsigned width = integer.getWidth();
    if (width == 0)
      return std::nullopt;
    int64_t most = (int64_t(1) << (width - 1)) - 1;
    if (interval->lo < -most - 1 || interval->hi > most)
      return std::nullopt;
  }
  return interval;
}

std::optional<Interval> getIntervalUnchecked(Value value, const IvRange &range,
                                             int depth) {
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

/// Whether `call`, a gaccrt_sgemm (transA, transB, alpha, beta, A, B, C)
/// or, with `pairs` = 2, a gaccrt_sgemm_pair (..., A1, B1, A2, B2, C),
/// accumulates into C so that its two copies in the body unrolled by two
/// can become one call at the second (gaccrt_sgemm_pair, or
/// gaccrt_sgemm_quad): its accumulator is one view defined outside the loop
/// that no other op of the body touches (no op after the call in the first
/// copy, none before it in the second; an `scf.if` that runs in neither copy
/// does not count), the second copy's beta is 1, nothing in between writes
/// its operands, and those take at most a quarter of C's bytes.
bool isPairable(func::CallOp call, Loop loop, BufferTouchers &touchers,
                bool anySize, int64_t minAccumulatorBytes, unsigned pairs = 1) {
  if (call.getNumOperands() != 5 + 2 * pairs ||
      (pairs == 1 ? !getSgemmCall(call)
                  : call.getCallee() != "gaccrt_sgemm_pair"))
    return false;
  Block *body = loop.op.getBody();
  if (call->getBlock() != body)
    return false;
  SmallVector<Value> operands;
  int64_t operandBytes = 0;
  for (unsigned i = kA; i < kA + 2 * pairs; ++i) {
    operands.push_back(getCastSource(call.getOperand(i)));
    if (!operands.back())
      return false;
    operandBytes += getBytes(operands.back());
  }
  Value c = getCastSource(call.getOperand(kA + 2 * pairs));
  if (!c || loop.op->isAncestor(c.getParentBlock()->getParentOp()))
    return false;
  // Where the pair helps: C larger than the operands (a weight gradient of
  // a small micro-batch), B not transposed (the kernels' paired pass).
  // The pair takes the first copy's flags for both: constants, the same in
  // both copies.
  APInt transA, transB;
  if (!matchPattern(call.getOperand(kTransA), m_ConstantInt(&transA)) ||
      !matchPattern(call.getOperand(kTransB), m_ConstantInt(&transB)) ||
      !transB.isZero() ||
      (!anySize &&
       (4 * operandBytes > getBytes(c) || getBytes(c) < minAccumulatorBytes)))
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
  for (Value operand : operands) {
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
      // A GEMM call writes only its Cs.
      if (std::optional<SmallVector<unsigned, 2>> cs =
              getGemmWrittenOperands(user);
          cs && alias)
        return llvm::any_of(
            *cs, [&](unsigned i) { return user->getOperand(i) == alias; });
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

/// The scf.if of `body` that runCopiesConcurrently's lockstep form made:
/// the copies' scf.parallel in its then-branch, their lockstep in its else.
scf::IfOp getLockstepBranch(Block *body) {
  for (auto branch : body->getOps<scf::IfOp>())
    if (!branch.getElseRegion().empty() &&
        llvm::any_of(branch.thenBlock()->getOps<scf::ParallelOp>(),
                     [](scf::ParallelOp copies) {
                       return copies->hasAttr(kConcurrentCopiesAttr);
                     }))
      return branch;
  return {};
}

/// A gaccrt_trace_region_begin or _end call directly in `body`.
struct RegionCall {
  func::CallOp op;
  bool begin;
};

/// Replaces the lockstep branch `branch` by its else-branch (the copies'
/// lockstep form), so that the loop body runs its two micro-batches in
/// lockstep whatever the thread count, and makes their trace regions nest
/// once: the body's region calls (the first copy's x, the second's y) go
/// from begin x, begin y, end y, end x, begin y (the second copy's part
/// after the cases), end y to begin x, begin y, end y, end x. False, with
/// the branch flattened, when they are not that sequence (or none).
bool flattenLockstep(scf::IfOp branch) {
  Block *body = branch->getBlock();
  for (Operation &op :
       llvm::make_early_inc_range(branch.elseBlock()->without_terminator()))
    op.moveBefore(branch);
  Value condition = branch.getCondition();
  branch.erase();
  // The now unused query of gaccrt_copies_concurrent(2).
  SmallVector<Operation *> dead{condition.getDefiningOp()};
  while (!dead.empty()) {
    Operation *op = dead.pop_back_val();
    if (!op || !op->use_empty() ||
        !(isa<arith::CmpIOp, arith::ConstantOp>(op) ||
          (isa<func::CallOp>(op) &&
           cast<func::CallOp>(op).getCallee() == "gaccrt_copies_concurrent")))
      continue;
    for (Value operand : op->getOperands())
      dead.push_back(operand.getDefiningOp());
    op->erase();
  }
  SmallVector<RegionCall> calls;
  for (auto call : body->getOps<func::CallOp>()) {
    StringRef callee = call.getCallee();
    if (callee == "gaccrt_trace_region_begin" ||
        callee == "gaccrt_trace_region_end")
      calls.push_back({call, callee == "gaccrt_trace_region_begin"});
  }
  if (calls.empty())
    return true;
  if (calls.size() != 6)
    return false;
  Value x = calls[0].op.getOperand(0), y = calls[1].op.getOperand(0);
  bool expected[6] = {true, true, false, false, true, false};
  Value ids[6] = {x, y, y, x, y, y};
  for (unsigned i = 0; i < 6; ++i)
    if (calls[i].begin != expected[i] || calls[i].op.getNumOperands() != 1 ||
        calls[i].op.getOperand(0) != ids[i])
      return false;
  calls[3].op->moveAfter(calls[5].op);
  calls[2].op.erase();
  calls[4].op.erase();
  return true;
}

/// Two copies of two micro-batches each (paired-copies): when `op`'s body
/// (unrolled by two, its copies side by side with a lockstep form:
/// runCopiesConcurrently) runs twice or more, a copy of the loop gets the
/// lockstep form as its body, is unrolled by two again, the two halves'
/// gaccrt_sgemm_pair calls of one accumulator become one gaccrt_sgemm_quad
/// where isPairable allows, and the halves go side by side
/// (runCopiesConcurrently, no lockstep form: each half already is one).
/// When that succeeds, the copy replaces `op`; else the copy is erased.
/// Each copy then runs two
/// micro-batches with one pass over each weight per GEMM, and each weight
/// gradient is one pass over C per four micro-batches.
void formPairedCopies(scf::ForOp op, bool anySize,
                      int64_t minAccumulatorBytes) {
  if (!getLoop(op) || !getLockstepBranch(op.getBody()))
    return;
  OpBuilder builder(op);
  auto clone = cast<scf::ForOp>(builder.clone(*op));
  auto module = op->getParentOfType<ModuleOp>();
  // A runtime function's declaration that nothing calls any more.
  auto eraseIfUnused = [&](StringRef name) {
    if (auto function = module.lookupSymbol<func::FuncOp>(name);
        function && function.isDeclaration() &&
        SymbolTable::symbolKnownUseEmpty(function, module))
      function.erase();
  };
  // The ops from the clone up to `op`: the clone and, once it is unrolled,
  // its last iteration of an odd trip count.
  auto cloneAndTail = [&] {
    SmallVector<Operation *> ops;
    for (Operation *next = clone; next != op.getOperation();
         next = next->getNextNode())
      ops.push_back(next);
    return ops;
  };
  auto giveUp = [&] {
    SmallVector<Operation *> dead = cloneAndTail();
    for (Operation *dying : llvm::reverse(dead))
      dying->erase();
    eraseIfUnused("gaccrt_sgemm_quad");
  };
  if (!flattenLockstep(getLockstepBranch(clone.getBody())))
    return giveUp();
  std::optional<Loop> loop = getLoop(clone);
  if (!loop)
    return giveUp();
  BufferTouchers touchers;
  SmallVector<func::CallOp> calls;
  for (auto call : clone.getBody()->getOps<func::CallOp>())
    if (isPairable(call, *loop, touchers, anySize, minAccumulatorBytes,
                   /*pairs=*/2))
      calls.push_back(call);
  // Without a quad the halves would only cost memory to run side by side.
  if (calls.empty())
    return giveUp();
  IRMapping second = unrollByTwo(*loop);
  IvRange first = loop->copyRange(0);
  for (auto branch :
       llvm::make_early_inc_range(clone.getBody()->getOps<scf::IfOp>()))
    if (second.contains(branch.getOperation()) && neverRuns(branch, first))
      branch.erase();
  for (func::CallOp call : calls) {
    auto secondCall = cast<func::CallOp>(second.lookup(call.getOperation()));
    OpBuilder at(secondCall);
    SmallVector<Value> operands(call.getOperands().take_front(8));
    llvm::append_range(operands, secondCall.getOperands().drop_front(4));
    createRuntimeCall(at, call.getLoc(), "gaccrt_sgemm_quad", operands);
    secondCall.erase();
    call.erase();
  }
  Operation *plusStep = second.lookup(clone.getInductionVar()).getDefiningOp();
  if (!runCopiesConcurrently(clone, plusStep->getOperand(1).getDefiningOp(),
                             anySize, /*lockstep=*/false))
    return giveUp();
  // The clone (with its last iteration of an odd trip count) replaces
  // `op`, whether the copies run side by side or in turn: in turn (one
  // GEMM thread) each quad is still one GEMM over four micro-batches where
  // gacc-plan-arena places their operands one after the other, which makes
  // up for twice the copies' buffers (3x512 MLP, m = 8, one thread: 1.015-1.025
  // of m = 1's step against 1.035-1.041 with the loop as it was, whose
  // lockstep form runs the pairs as one GEMM over two micro-batches).
  op->erase();
}

struct PairAccumulatingGemmsPass
    : public gacc::impl::PairAccumulatingGemmsPassBase<
          PairAccumulatingGemmsPass> {
  using Base::Base;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp op) { loops.push_back(op); });
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
        createRuntimeCall(
            builder, call.getLoc(), "gaccrt_sgemm_pair",
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
        if (runCopiesConcurrently(op, plusStep->getOperand(1).getDefiningOp(),
                                  anySize, lockstepCopies) &&
            lockstepCopies && pairedCopies)
          formPairedCopies(op, anySize, minAccumulatorBytes);
      }
    }
  }
};

} // namespace
