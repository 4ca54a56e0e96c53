//===- PlanArena.cpp - one arena of buffers planned at compile time -------===//
//
// The gacc-plan-arena pass: after gacc-deallocate-buffers, the statically
// sized buffers of each function get byte offsets in one arena (a private
// memref.global), planned from their lifetimes, so that a step runs without
// malloc, free or fresh page faults after the first step.
//
//===----------------------------------------------------------------------===//

#include "Common/RuntimeCalls.h"
#include "ConcurrentCopies.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

#include <algorithm>

#define DEBUG_TYPE "gacc-plan-arena"

namespace mlir::gacc {
#define GEN_PASS_DEF_PLANARENAPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Offsets and slot sizes are multiples of this (cache lines, and every
/// element type's alignment).
constexpr int64_t kArenaAlignment = 64;

static int64_t alignUp(int64_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

/// The largest buffer the arena takes (bigger ones, which malloc would
/// refuse anyway, keep their allocation: no offset arithmetic overflows).
constexpr int64_t kMaxArenaBufferBytes = int64_t(1) << 48;

/// Returns the bytes of `alloc` (unpadded) when the arena can hold it: a
/// static, identity-layout buffer of elements of 1, 2, 4, 8 or 16 bytes (whose
/// storage is their width: an i24's or f80's is not), freed once by a
/// memref.dealloc in its own block (returned in `dealloc`).
static std::optional<int64_t> getArenaBytes(memref::AllocOp alloc,
                                            memref::DeallocOp &dealloc) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace() || !alloc.getSymbolOperands().empty())
    return std::nullopt;
  Type element = type.getElementType();
  if (!element.isIntOrFloat())
    return std::nullopt;
  unsigned width = element.getIntOrFloatBitWidth();
  if (width < 8 || width > 128 || !llvm::isPowerOf2_32(width))
    return std::nullopt;
  int64_t elements = type.getNumElements();
  if (elements > kMaxArenaBufferBytes / (width / 8))
    return std::nullopt;
  dealloc = {};
  for (Operation *user : alloc->getUsers()) {
    auto d = dyn_cast<memref::DeallocOp>(user);
    if (!d)
      continue;
    if (dealloc || d->getBlock() != alloc->getBlock())
      return std::nullopt;
    dealloc = d;
  }
  if (!dealloc)
    return std::nullopt;
  return elements * (width / 8);
}

namespace {
/// The plan of one function: offsets of buffers and of the slots of ops with
/// planned bodies, relative to the start of their block's plan.
struct ArenaPlan {
  /// Buffers that should follow another one in memory (`next`), as the
  /// stacked operands of GEMM pairs (getStackedOperands), and the inverse.
  DenseMap<Operation *, Operation *> next, previous;
  DenseMap<Operation *, int64_t> relativeOffset;
  /// The offsets of the regions of concurrent copies within their op's slot
  /// (the other regions of an op share its slot).
  DenseMap<Region *, int64_t> regionOffset;
  SmallVector<std::pair<memref::AllocOp, memref::DeallocOp>> buffers;

  /// Plans `block` and returns the bytes it needs.
  int64_t planBlock(Block &block);
  /// Plans the single-block regions of `op` (which share one slot) and
  /// returns the bytes of the slot (0 when nothing in them is planned).
  int64_t planRegions(Operation *op);
  /// Records that the buffers `chain` should lie one after the other, where
  /// that contradicts no earlier record.
  void addChain(ArrayRef<Operation *> chain);
  /// Rewrites the planned buffers of `block`, whose plan starts at `base`.
  void assign(Block &block, int64_t base,
              DenseMap<Operation *, int64_t> &absolute);
};

struct Interval {
  Operation *op;
  int64_t start, end, bytes;
};
} // namespace

/// Whether `op` is the scf.parallel of concurrent copies as
/// gacc-pair-accumulating-gemms builds it: two iterations whose body is
/// only the cases (each iteration runs its own case, on its own thread).
static bool isConcurrentCopiesLoop(Operation *op) {
  auto loop = dyn_cast<scf::ParallelOp>(op);
  if (!loop || !loop->hasAttr(kConcurrentCopiesAttr) ||
      loop.getNumLoops() != 1 || !loop.getInitVals().empty())
    return false;
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()[0]);
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound()[0]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[0]);
  if (lb != 0 || ub != 2 || step != 1)
    return false;
  Block *body = loop.getBody();
  if (body->getOperations().size() != 2)
    return false;
  auto cases = dyn_cast<scf::IndexSwitchOp>(body->front());
  return cases && cases->hasAttr(kConcurrentCopiesAttr) &&
         cases.getArg() == loop.getInductionVars()[0];
}

int64_t ArenaPlan::planRegions(Operation *op) {
  // The regions of concurrent copies (gacc-pair-accumulating-gemms) run at
  // the same time: one after the other in the slot. The regions of the ops
  // that run them one at a time (branches, loop bodies) share it. Any other
  // region (another parallel loop, an async or OpenMP region, a GPU launch)
  // may run at the same time as itself or as what follows: its buffers
  // keep their allocations.
  bool concurrent = isa<scf::IndexSwitchOp>(op) &&
                    op->hasAttr(kConcurrentCopiesAttr) &&
                    isConcurrentCopiesLoop(op->getParentOp());
  if (op->getNumRegions() == 0 ||
      !(concurrent || isConcurrentCopiesLoop(op) ||
        isa<scf::IfOp, scf::ForOp, scf::WhileOp, scf::IndexSwitchOp,
            scf::ExecuteRegionOp>(op)))
    return 0;
  if (llvm::any_of(op->getRegions(), [](Region &region) {
        return !region.empty() && !region.hasOneBlock();
      }))
    return 0;
  int64_t bytes = 0;
  for (Region &region : op->getRegions()) {
    if (region.empty())
      continue;
    int64_t regionBytes = planBlock(region.front());
    if (concurrent) {
      regionOffset[&region] = bytes;
      bytes += regionBytes;
    } else {
      bytes = std::max(bytes, regionBytes);
    }
  }
  return bytes;
}

void ArenaPlan::addChain(ArrayRef<Operation *> chain) {
  for (auto [first, second] :
       llvm::zip(chain.drop_back(), chain.drop_front())) {
    if (!first || !second || first == second ||
        first->getBlock() != second->getBlock())
      continue;
    if (next.count(first) || previous.count(second))
      continue;
    // No cycle: `first` must not follow `second` already.
    bool cycle = false;
    for (Operation *op = second; op && !cycle; op = next.lookup(op))
      cycle = op == first;
    if (cycle)
      continue;
    next[first] = second;
    previous[second] = first;
  }
}

int64_t ArenaPlan::planBlock(Block &block) {
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : block)
    position[&op] = index++;
  struct Buffer {
    int64_t start, end, bytes, elementBytes;
  };
  DenseMap<Operation *, Buffer> planned;
  for (Operation &op : block)
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      memref::DeallocOp dealloc;
      if (std::optional<int64_t> bytes = getArenaBytes(alloc, dealloc)) {
        int64_t elementBytes =
            alloc.getType().getElementType().getIntOrFloatBitWidth() / 8;
        planned[&op] = {position[&op], position[dealloc], *bytes, elementBytes};
        buffers.push_back({alloc, dealloc});
      }
    }
  // A chain of buffers is one interval: from its first allocation to its
  // last deallocation, each buffer right after the bytes of the one before
  // (no alignment padding between them; only element alignment). A link
  // holds where both buffers are planned here.
  auto linked = [&](Operation *first) -> Operation * {
    Operation *second = next.lookup(first);
    if (!second || !planned.count(first) || !planned.count(second) ||
        planned[first].bytes % planned[second].elementBytes != 0)
      return nullptr;
    return second;
  };
  DenseSet<Operation *> followers;
  for (auto &entry : planned)
    if (Operation *second = linked(entry.first))
      followers.insert(second);
  SmallVector<Interval> intervals;
  DenseMap<Operation *, SmallVector<std::pair<Operation *, int64_t>>> members;
  for (Operation &op : block) {
    if (planned.count(&op)) {
      if (followers.contains(&op))
        continue;
      Buffer head = planned[&op];
      Interval interval{&op, head.start, head.end, 0};
      auto &chain = members[&op];
      for (Operation *member = &op; member; member = linked(member)) {
        Buffer buffer = planned[member];
        chain.push_back({member, interval.bytes});
        interval.start = std::min(interval.start, buffer.start);
        interval.end = std::max(interval.end, buffer.end);
        interval.bytes += buffer.bytes;
      }
      interval.bytes = alignUp(interval.bytes);
      intervals.push_back(interval);
      continue;
    }
    if (int64_t bytes = planRegions(&op))
      intervals.push_back({&op, position[&op], position[&op], bytes});
  }
  llvm::stable_sort(intervals, [](const Interval &a, const Interval &b) {
    return a.start < b.start;
  });
  // First fit in order of allocation: each interval takes the lowest offset
  // that overlaps no live interval.
  struct Live {
    int64_t offset, bytes, end;
  };
  SmallVector<Live> live;
  int64_t total = 0;
  for (const Interval &interval : intervals) {
    llvm::erase_if(live, [&](const Live &l) { return l.end < interval.start; });
    llvm::sort(
        live, [](const Live &a, const Live &b) { return a.offset < b.offset; });
    int64_t offset = 0;
    for (const Live &l : live) {
      if (offset + interval.bytes <= l.offset)
        break;
      offset = std::max(offset, l.offset + l.bytes);
    }
    auto chain = members.find(interval.op);
    if (chain != members.end()) {
      for (auto [member, within] : chain->second)
        relativeOffset[member] = offset + within;
    } else {
      relativeOffset[interval.op] = offset;
    }
    live.push_back({offset, interval.bytes, interval.end});
    total = std::max(total, offset + interval.bytes);
  }
  return total;
}

void ArenaPlan::assign(Block &block, int64_t base,
                       DenseMap<Operation *, int64_t> &absolute) {
  for (Operation &op : block) {
    auto it = relativeOffset.find(&op);
    if (it == relativeOffset.end())
      continue;
    absolute[&op] = base + it->second;
    if (!isa<memref::AllocOp>(op))
      for (Region &region : op.getRegions())
        if (!region.empty())
          assign(region.front(),
                 base + it->second + regionOffset.lookup(&region), absolute);
  }
}

/// The allocation whose whole buffer `value` is (through memref.cast), or
/// null.
static Operation *getWholeBuffer(Value value) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  return value.getDefiningOp<memref::AllocOp>();
}

/// The operands of the GEMM pairs of gacc-pair-accumulating-gemms that are
/// one matrix when they lie one after the other in memory, in that order:
/// gaccrt_sgemm_pair's and gaccrt_sgemm_quad's op(A) = A^T and B (stacked
/// along the inner dimension: C is then one GEMM over all inner ranges),
/// gaccrt_sgemm_rows_pair's A and C (stacked along the rows: one GEMM over
/// all rows). The runtime runs such a pair as one GEMM.
static SmallVector<SmallVector<Operation *>>
getStackedOperands(func::CallOp call) {
  StringRef callee = call.getCallee();
  auto isConstant = [&](unsigned index, int64_t value) {
    return index < call.getNumOperands() &&
           getConstantIntValue(call.getOperand(index)) == value;
  };
  auto buffers = [&](std::initializer_list<unsigned> indices) {
    SmallVector<Operation *> chain;
    for (unsigned index : indices)
      chain.push_back(index < call.getNumOperands()
                          ? getWholeBuffer(call.getOperand(index))
                          : nullptr);
    return chain;
  };
  if (callee == "gaccrt_sgemm_pair" && call.getNumOperands() == 9 &&
      isConstant(0, 1) && isConstant(1, 0))
    return {buffers({4, 6}), buffers({5, 7})};
  if (callee == "gaccrt_sgemm_quad" && call.getNumOperands() == 13 &&
      isConstant(0, 1) && isConstant(1, 0))
    return {buffers({4, 6, 8, 10}), buffers({5, 7, 9, 11})};
  if (callee == "gaccrt_sgemm_rows_pair" && call.getNumOperands() == 9 &&
      isConstant(0, 0))
    return {buffers({4, 7}), buffers({6, 8})};
  return {};
}

namespace {
struct PlanArenaPass : public gacc::impl::PlanArenaPassBase<PlanArenaPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Functions that call each other, by name (the arena of a function
    // that runs twice at once, recursively, would be shared).
    DenseMap<StringAttr, SmallVector<StringAttr>> callees;
    module.walk([&](func::CallOp call) {
      if (auto caller = call->getParentOfType<func::FuncOp>())
        callees[caller.getSymNameAttr()].push_back(
            call.getCalleeAttr().getAttr());
    });
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || !func.getBody().hasOneBlock() ||
          !runsOneAtATime(func, module, callees))
        continue;
      ArenaPlan plan;
      func.walk([&](func::CallOp call) {
        for (ArrayRef<Operation *> chain : getStackedOperands(call))
          plan.addChain(chain);
      });
      int64_t bytes = plan.planBlock(func.getBody().front());
      if (bytes == 0)
        continue;
      DenseMap<Operation *, int64_t> absolute;
      plan.assign(func.getBody().front(), 0, absolute);
      rewrite(func, plan, absolute, bytes, symbols);
    }
  }

  /// Whether no two calls of `func` can run at the same time: it is not
  /// recursive, and it is called (by name, from func.call only) where the
  /// code runs one op at a time: in function bodies, branches and loops
  /// that are not parallel.
  static bool
  runsOneAtATime(func::FuncOp func, ModuleOp module,
                 DenseMap<StringAttr, SmallVector<StringAttr>> &callees) {
    std::optional<SymbolTable::UseRange> uses = func.getSymbolUses(module);
    if (!uses)
      return false;
    for (const SymbolTable::SymbolUse &use : *uses) {
      if (!isa<func::CallOp>(use.getUser()))
        return false;
      for (Operation *parent = use.getUser()->getParentOp();
           parent && !isa<func::FuncOp>(parent); parent = parent->getParentOp())
        if (!isa<scf::IfOp, scf::ForOp, scf::WhileOp, scf::IndexSwitchOp,
                 scf::ExecuteRegionOp>(parent))
          return false;
    }
    // Not reachable from itself.
    StringAttr name = func.getSymNameAttr();
    SmallVector<StringAttr> worklist(callees.lookup(name));
    DenseSet<StringAttr> seen;
    while (!worklist.empty()) {
      StringAttr next = worklist.pop_back_val();
      if (next == name)
        return false;
      if (seen.insert(next).second)
        llvm::append_range(worklist, callees.lookup(next));
    }
    return true;
  }

  void rewrite(func::FuncOp func, ArenaPlan &plan,
               DenseMap<Operation *, int64_t> &absolute, int64_t bytes,
               SymbolTable &symbols) {
    MLIRContext *ctx = &getContext();
    Location loc = func.getLoc();
    auto arenaType = MemRefType::get({bytes}, IntegerType::get(ctx, 8));
    OpBuilder builder(func);
    auto global = memref::GlobalOp::create(
        builder, loc, (func.getSymName() + "_arena").str(),
        builder.getStringAttr("private"), arenaType, builder.getUnitAttr(),
        /*constant=*/false, builder.getI64IntegerAttr(kArenaAlignment));
    symbols.insert(global);

    Block &entry = func.getBody().front();
    builder.setInsertionPointToStart(&entry);
    Value arena = memref::GetGlobalOp::create(builder, loc, arenaType,
                                              global.getSymName())
                      .getResult();
    Type i64 = builder.getI64Type();
    func::FuncOp account = getOrDeclareRuntimeFunction(
        func, "gaccrt_account_arena", FunctionType::get(ctx, {i64}, {}));
    func::CallOp::create(
        builder, loc, account,
        ValueRange{arith::ConstantIntOp::create(builder, loc, i64, bytes)});
    func.walk([&](func::ReturnOp ret) {
      OpBuilder b(ret);
      func::CallOp::create(b, ret.getLoc(), account,
                           ValueRange{arith::ConstantIntOp::create(
                               b, ret.getLoc(), i64, -bytes)});
    });

    for (auto [alloc, dealloc] : plan.buffers) {
      auto it = absolute.find(alloc);
      if (it == absolute.end())
        continue;
      OpBuilder b(alloc);
      Value offset =
          arith::ConstantIndexOp::create(b, alloc.getLoc(), it->second);
      auto view = memref::ViewOp::create(b, alloc.getLoc(), alloc.getType(),
                                         arena, offset, ValueRange{});
      alloc.getResult().replaceAllUsesExcept(view.getResult(),
                                             dealloc.getOperation());
      dealloc.erase();
      alloc.erase();
    }
  }
};
} // namespace
