//===- OverlapAllReduce.cpp - start bucket all-reduces early ----*- C++ -*-===//
//
// The gacc-overlap-all-reduce pass (after bufferization and
// gacc-place-buckets). gacc-sink-all-reduce issues each bucket's all-reduce
// after the final region, so the collective waits for the whole final
// backward, and the epilogue waits for every bucket. For a bucket marked
// `gacc.overlap`, this pass splits the blocking runtime call into
// `gaccrt_all_reduce_start` right after the last op that touches the
// bucket's memory (the final region's last write into the bucket) and
// `gaccrt_all_reduce_wait` right before the next op that touches it, so the
// reduction runs while the rest of the backward computes, and the epilogue
// waits only for the buckets it reads, where it reads them.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Lowering/Common/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "gacc-overlap-all-reduce"

namespace mlir::gacc {
#define GEN_PASS_DEF_OVERLAPALLREDUCEPASS
#include "gacc/Lowering/Common/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Collects the ops of `block` that access the memory of `root`: every op
/// (or its ancestor in `block`) that uses `root` or a value aliasing it,
/// except views, whose own users are followed instead. Results of memref
/// type of an accessing op are taken to alias `root` too.
static void collectAccesses(Value root, Block *block,
                            SmallPtrSetImpl<Operation *> &accesses) {
  SmallVector<Value> worklist = {root};
  DenseSet<Value> seen = {root};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    bool memref = isa<BaseMemRefType>(value.getType());
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      bool isView = view && view.getViewSource() == value;
      if (!isView)
        if (Operation *inBlock = block->findAncestorOpInBlock(*user))
          accesses.insert(inBlock);
      // The address (and what is computed from it: an integer, a pointer)
      // reaches the buffer too.
      bool address = !memref || isa<memref::ExtractAlignedPointerAsIndexOp,
                                    memref::ExtractStridedMetadataOp>(user);
      for (Value result : user->getResults())
        if ((address || isa<BaseMemRefType>(result.getType())) &&
            seen.insert(result).second)
          worklist.push_back(result);
    }
  }
}

/// collectAccesses for every buffer that `buffer` may be: its root and, for
/// the result of a loop that carries a memref, the loop's init (an in-place
/// loop's result is its init's buffer). False when the root is something
/// else that other values may alias (a call's result, a global).
static bool collectBufferAccesses(Value buffer, Block *block,
                                  SmallPtrSetImpl<Operation *> &accesses) {
  SmallVector<Value> roots = {getViewRoot(buffer)};
  for (size_t i = 0; i < roots.size(); ++i) {
    Value root = roots[i];
    if (auto arg = dyn_cast<BlockArgument>(root)) {
      if (!isa<func::FuncOp>(arg.getOwner()->getParentOp()))
        return false;
      continue;
    }
    Operation *def = root.getDefiningOp();
    if (auto loop = dyn_cast<scf::ForOp>(def)) {
      if (roots.size() > 16)
        return false;
      roots.push_back(getViewRoot(
          loop.getInitArgs()[cast<OpResult>(root).getResultNumber()]));
      continue;
    }
    if (!isa<memref::AllocOp, memref::AllocaOp>(def))
      return false;
  }
  for (Value root : roots)
    collectAccesses(root, block, accesses);
  return true;
}

/// A collective of the runtime that gacc-overlap-all-reduce splits: its
/// blocking function, its start and wait, and how many of its leading
/// operands are buffer addresses (the all-reduce's buffer; the send and
/// receive buffers of a reduce-scatter or all-gather).
struct CollectiveForm {
  StringRef callee, start, wait;
  unsigned numBuffers, numOperands;
};

static const CollectiveForm kForms[] = {
    {"gaccrt_all_reduce", "gaccrt_all_reduce_start", "gaccrt_all_reduce_wait",
     1, 5},
    {"gaccrt_reduce_scatter", "gaccrt_reduce_scatter_start",
     "gaccrt_reduce_scatter_wait", 2, 6},
    {"gaccrt_all_gather", "gaccrt_all_gather_start", "gaccrt_all_gather_wait",
     2, 5},
};

/// Returns the buffer whose address is `operand` of a runtime collective
/// (`index_cast(extract_aligned_pointer_as_index(buffer))`).
static Value getAddressedBuffer(Value operand) {
  auto cast = operand.getDefiningOp<arith::IndexCastOp>();
  auto address =
      cast
          ? cast.getIn().getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>()
          : memref::ExtractAlignedPointerAsIndexOp();
  return address ? address.getSource() : Value();
}

/// Returns true when `value` is defined before `point` (in its block or in a
/// block around it).
static bool isAvailableAt(Value value, Operation *point) {
  Block *defBlock = value.getParentBlock();
  Operation *ancestor = defBlock->findAncestorOpInBlock(*point);
  if (!ancestor)
    return false;
  if (isa<BlockArgument>(value))
    return true;
  Operation *def = value.getDefiningOp();
  return def == ancestor ? false : def->isBeforeInBlock(ancestor);
}

/// The ops that move with a collective's start: the fresh buffers the
/// collective reads or writes (allocated in its block before it, such as
/// the rank-major layout of a sharded bucket or the receive buffer), the
/// ops before it that fill them (copies and linalg ops, such as the packing
/// of the accumulators into the layout), and the buffers those read that
/// stay where they are (the accumulators, a reduced bucket).
struct StartGroup {
  llvm::SetVector<Value> fresh;
  llvm::SetVector<Operation *> fills;
  llvm::SetVector<Value> sources;
};

/// An op that may run earlier, at the start, when every buffer it writes is
/// fresh: a copy or a linalg op on buffers.
static bool isMovableFill(Operation *op) {
  if (isa<memref::CopyOp>(op))
    return true;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.hasPureBufferSemantics();
}

static SmallVector<Value> getWrittenBuffers(Operation *op) {
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return {copy.getTarget()};
  return llvm::to_vector(cast<linalg::LinalgOp>(op).getDpsInits());
}

/// False when `op` (an access of the buffer `root`) only reads it: a copy
/// from it or a linalg op on buffers that reads it, or a view or address of
/// it. True for any other op (a call, a loop) and for a write.
static bool mayWrite(Operation *op, Value root) {
  if (isa<ViewLikeOpInterface, memref::ExtractAlignedPointerAsIndexOp,
          arith::IndexCastOp>(op))
    return false;
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return getViewRoot(copy.getTarget()) == root;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureBufferSemantics())
    return true;
  return llvm::any_of(linalgOp.getDpsInits(),
                      [&](Value init) { return getViewRoot(init) == root; });
}

/// Classifies the buffers of `call` (a runtime collective) into a
/// StartGroup (`inPlace`: an all-reduce, whose buffer is never fresh;
/// without `moveFills` only a buffer nothing fills before the call is). False
/// when an op that fills a fresh buffer cannot move.
static bool collectStartGroup(func::CallOp call, ArrayRef<Value> buffers,
                              bool inPlace, bool moveFills, StartGroup &group) {
  Block *block = call->getBlock();
  SmallVector<Value> worklist;
  DenseSet<Value> seen;
  for (Value buffer : buffers)
    if (seen.insert(getViewRoot(buffer)).second)
      worklist.push_back(getViewRoot(buffer));
  while (!worklist.empty()) {
    Value root = worklist.pop_back_val();
    auto alloc = root.getDefiningOp<memref::AllocOp>();
    SmallVector<Operation *> fills;
    // An in-place all-reduce's bucket stays where it is (it is written by
    // the regions).
    bool fresh = !inPlace && alloc && alloc->getBlock() == block &&
                 alloc->getNumOperands() == 0 && alloc->isBeforeInBlock(call);
    if (fresh) {
      SmallPtrSet<Operation *, 16> accesses;
      collectAccesses(root, block, accesses);
      for (Operation *op = alloc->getNextNode(); op != call && fresh;
           op = op->getNextNode()) {
        if (!accesses.contains(op) ||
            isa<memref::ExtractAlignedPointerAsIndexOp, arith::IndexCastOp>(op))
          continue;
        if (moveFills && isMovableFill(op))
          fills.push_back(op);
        else
          fresh = false;
      }
    }
    if (!fresh) {
      group.sources.insert(root);
      continue;
    }
    group.fresh.insert(root);
    for (Operation *fill : fills) {
      group.fills.insert(fill);
      for (Value operand : fill->getOperands())
        if (isa<BaseMemRefType>(operand.getType()) &&
            seen.insert(getViewRoot(operand)).second)
          worklist.push_back(getViewRoot(operand));
    }
  }
  // A fill that also writes a buffer that stays would move that write.
  for (Operation *fill : group.fills)
    for (Value written : getWrittenBuffers(fill))
      if (!group.fresh.contains(getViewRoot(written)))
        return false;
  return true;
}

/// Checks that `value` can be made available at `point`: it is already, or
/// it is a fresh buffer (moved before `point`), or it is computed by pure
/// ops from such values (collected in `clones`, cloned at `point`).
static bool canMaterialize(Value value, Operation *point,
                           const StartGroup &group,
                           llvm::SetVector<Operation *> &clones) {
  if (isAvailableAt(value, point) || group.fresh.contains(value))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || !isMemoryEffectFree(def))
    return false;
  if (clones.contains(def))
    return true;
  for (Value operand : def->getOperands())
    if (!canMaterialize(operand, point, group, clones))
      return false;
  clones.insert(def);
  return true;
}

/// The op of `loop`'s body (the last op before the collective that
/// accesses one of `sources`) before which the collective may start in the
/// last iteration: the one after the body's last access of a source. Null
/// when the loop may not run (no constant trip count) or carries a memref.
static Operation *getStartPointInLastIteration(scf::ForOp loop,
                                               ArrayRef<Value> sources) {
  if (!loop)
    return nullptr;
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips || trips->isZero())
    return nullptr;
  // A memref carried through the loop reaches the body as a block argument,
  // which the access collection does not follow: stay after the loop.
  if (llvm::any_of(loop.getInitArgs(), [](Value init) {
        return isa<BaseMemRefType>(init.getType());
      }))
    return nullptr;
  Block *body = loop.getBody();
  SmallPtrSet<Operation *, 16> accesses;
  for (Value source : sources)
    if (!collectBufferAccesses(source, body, accesses))
      return nullptr;
  for (Operation *op = body->getTerminator()->getPrevNode(); op;
       op = op->getPrevNode())
    if (accesses.contains(op))
      return op->getNextNode();
  return nullptr;
}

/// Splits the runtime collective `call` of `form` into a start after the
/// last access before it of the buffers it reads (with `moveFills`, the
/// copies that fill its fresh buffers move there too) and a wait before the
/// next access after it of the buffers it reads or writes. Returns false,
/// changing nothing, where it cannot.
static bool tryOverlap(func::CallOp call, const CollectiveForm &form,
                       bool moveFills) {
  SmallVector<Value> buffers;
  for (unsigned i = 0; i < form.numBuffers; ++i) {
    buffers.push_back(getAddressedBuffer(call.getOperand(i)));
    if (!buffers.back())
      return false;
  }
  Block *block = call->getBlock();
  StartGroup group;
  if (!collectStartGroup(call, buffers, /*inPlace=*/form.numBuffers == 1,
                         moveFills, group))
    return false;

  // The ops the start must follow: an access of a buffer that stays and
  // that the collective itself reads or writes, and a write of one that
  // only the fills read (other than the fills and the call's own address
  // computation).
  DenseSet<Value> touchedRoots;
  for (Value buffer : buffers)
    touchedRoots.insert(getViewRoot(buffer));
  DenseMap<Value, SmallPtrSet<Operation *, 16>> blockersOf;
  SmallPtrSet<Operation *, 16> sourceAccesses;
  for (Value source : group.sources) {
    SmallPtrSet<Operation *, 16> accesses;
    if (!collectBufferAccesses(source, block, accesses))
      return false;
    for (Operation *op : accesses)
      if (op != call && !group.fills.contains(op) &&
          (touchedRoots.contains(source) || mayWrite(op, source))) {
        blockersOf[source].insert(op);
        sourceAccesses.insert(op);
      }
  }
  for (Value operand : call.getOperands().take_front(form.numBuffers)) {
    auto cast = operand.getDefiningOp<arith::IndexCastOp>();
    if (cast->hasOneUse())
      sourceAccesses.erase(cast);
    Operation *address = cast.getIn().getDefiningOp();
    if (address->hasOneUse())
      sourceAccesses.erase(address);
  }

  // The wait: before the first access after the call of a buffer the
  // collective reads or writes (or the terminator).
  SmallPtrSet<Operation *, 16> touched;
  for (Value buffer : buffers)
    if (!collectBufferAccesses(buffer, block, touched))
      return false;
  Operation *waitPoint = block->getTerminator();
  for (Operation *op = call->getNextNode(); op; op = op->getNextNode())
    if (touched.contains(op)) {
      waitPoint = op;
      break;
    }

  // The start: after the last access of a source before the call, or the
  // op that defines one.
  Operation *startPoint = &block->front();
  Operation *lastAccess = nullptr;
  for (Operation *op = call->getPrevNode(); op; op = op->getPrevNode()) {
    bool defines = llvm::any_of(op->getResults(), [&](Value result) {
      return group.sources.contains(result);
    });
    if (sourceAccesses.contains(op) || defines) {
      startPoint = op->getNextNode();
      if (sourceAccesses.contains(op))
        lastAccess = op;
      break;
    }
  }
  // The fills move to the start: up, or down but never past a write of
  // what they read.
  for (Operation *fill : group.fills) {
    if (startPoint == &block->front() || !fill->isBeforeInBlock(startPoint))
      continue;
    for (Value operand : fill->getOperands()) {
      if (!isa<BaseMemRefType>(operand.getType()))
        continue;
      auto blockers = blockersOf.find(getViewRoot(operand));
      if (blockers == blockersOf.end())
        continue;
      for (Operation *op = fill->getNextNode(); op != startPoint;
           op = op->getNextNode())
        if (blockers->second.contains(op))
          return false;
    }
  }

  // What the start needs where it goes: the fills' operands and the call's.
  auto canStartAt = [&](Operation *point,
                        llvm::SetVector<Operation *> &clones) {
    for (Operation *fill : group.fills)
      for (Value operand : fill->getOperands())
        if (!canMaterialize(operand, point, group, clones))
          return false;
    for (Value buffer : buffers)
      if (!canMaterialize(buffer, point, group, clones))
        return false;
    return llvm::all_of(
        call.getOperands().drop_front(form.numBuffers),
        [&](Value v) { return canMaterialize(v, point, group, clones); });
  };

  // The loop of the final region's size: start in its last iteration when
  // everything the start needs is available before the loop.
  auto loop = dyn_cast_or_null<scf::ForOp>(lastAccess);
  Operation *inner =
      getStartPointInLastIteration(loop, group.sources.getArrayRef());
  llvm::SetVector<Operation *> clones;
  if (inner && !canStartAt(loop, clones)) {
    inner = nullptr;
    clones.clear();
  }
  // The fresh buffers are allocated right before the start (before the
  // loop when it starts in the loop).
  Operation *anchor = startPoint;
  while (anchor != call && llvm::any_of(anchor->getResults(), [&](Value v) {
           return group.fresh.contains(v);
         }))
    anchor = anchor->getNextNode();
  if (!inner && !canStartAt(anchor, clones))
    return false;
  Operation *allocPoint = inner ? loop.getOperation() : anchor;
  for (Value fresh : group.fresh)
    if (allocPoint->isBeforeInBlock(fresh.getDefiningOp()))
      fresh.getDefiningOp()->moveBefore(allocPoint);

  Location loc = call.getLoc();
  OpBuilder builder(anchor);
  Type i64 = builder.getI64Type();
  SmallVector<Type> startTypes(call.getOperandTypes());
  SmallVector<Type> waitTypes(form.numBuffers + 1, i64);
  func::FuncOp startFn = getOrDeclareRuntimeFunction(
      call, form.start, builder.getFunctionType(startTypes, {i64}));
  func::FuncOp waitFn = getOrDeclareRuntimeFunction(
      call, form.wait, builder.getFunctionType(waitTypes, {}));
  auto addressOf = [&](OpBuilder &b, Value buffer) {
    Value pointer =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
    return arith::IndexCastOp::create(b, loc, i64, pointer).getResult();
  };
  // The fills (in their order) and the start, with the pure ops they need.
  auto createStart = [&](OpBuilder &b) {
    IRMapping mapping;
    SmallVector<Operation *> moved;
    for (Operation &op : *block)
      if (clones.contains(&op) || group.fills.contains(&op))
        moved.push_back(&op);
    for (Operation *op : moved)
      b.clone(*op, mapping);
    SmallVector<Value> startOperands;
    for (Value buffer : buffers)
      startOperands.push_back(addressOf(b, mapping.lookupOrDefault(buffer)));
    for (Value operand : call.getOperands().drop_front(form.numBuffers))
      startOperands.push_back(mapping.lookupOrDefault(operand));
    return func::CallOp::create(b, loc, startFn, startOperands).getResult(0);
  };
  Value handle;
  if (inner) {
    // The last write is the loop of the regions of one size (the final
    // region among them): start in its last iteration, right after the
    // body's last access, and pass the handle out through a stack slot at
    // the function's entry (one slot, also when the loop is nested).
    if (auto function = loop->getParentOfType<FunctionOpInterface>())
      builder.setInsertionPointToStart(&function.getFunctionBody().front());
    else
      builder.setInsertionPoint(loop);
    auto slot =
        memref::AllocaOp::create(builder, loc, MemRefType::get({}, i64));
    builder.setInsertionPoint(inner);
    Value next = arith::AddIOp::create(builder, loc, loop.getInductionVar(),
                                       loop.getStep());
    Value isLast = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::sge, next, loop.getUpperBound());
    auto ifLast = scf::IfOp::create(builder, loc, isLast);
    builder.setInsertionPointToStart(ifLast.thenBlock());
    memref::StoreOp::create(builder, loc, createStart(builder), slot,
                            ValueRange{});
    builder.setInsertionPoint(waitPoint);
    handle = memref::LoadOp::create(builder, loc, slot, ValueRange{});
  } else {
    handle = createStart(builder);
    builder.setInsertionPoint(waitPoint);
  }
  SmallVector<Value> waitOperands = {handle};
  for (Value buffer : buffers)
    waitOperands.push_back(addressOf(builder, buffer));
  func::CallOp::create(builder, loc, waitFn, waitOperands);

  // The old call, the fills it replaces and what only they used (a set: an
  // op that several erased ops used is looked at, and erased, once).
  llvm::SetVector<Operation *> maybeDead;
  auto erase = [&](Operation *op) {
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        maybeDead.insert(def);
    maybeDead.remove(op);
    op->erase();
  };
  erase(call);
  for (Operation *fill : llvm::reverse(group.fills))
    erase(fill);
  while (!maybeDead.empty()) {
    Operation *op = maybeDead.pop_back_val();
    if (!op->use_empty() || !isMemoryEffectFree(op) ||
        op->getNumRegions() != 0 || isa<memref::AllocOp>(op))
      continue;
    erase(op);
  }
  return true;
}

/// tryOverlap with the fills moved to the start, else (a fill that also
/// writes a buffer that stays, such as an optimizer update writing the state
/// and the parameter shard to gather, or one that would move past a write of
/// what it reads) with the collective starting after them.
static void overlap(func::CallOp call, const CollectiveForm &form) {
  if (!tryOverlap(call, form, /*moveFills=*/true) && form.numBuffers > 1)
    tryOverlap(call, form, /*moveFills=*/false);
}

namespace {
struct OverlapAllReducePass
    : public gacc::impl::OverlapAllReducePassBase<OverlapAllReducePass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<std::pair<func::CallOp, const CollectiveForm *>> calls;
    getOperation().walk([&](func::CallOp call) {
      if (!call->hasAttr(GaccDialect::kOverlapAttrName))
        return;
      for (const CollectiveForm &form : kForms)
        if (call.getCallee() == form.callee &&
            call.getNumOperands() == form.numOperands)
          calls.push_back({call, &form});
    });
    for (auto [call, form] : calls)
      overlap(call, *form);
  }
};
} // namespace
