//===- DeallocateBuffers.cpp - free buffers after their last use -*- C++ -*-=//
//
// The gacc-deallocate-buffers pass: a last-use deallocation for the
// straight-line, bufferized steps gacc produces. Ownership-based
// deallocation frees at the end of a block, which keeps every micro-batch's
// activations alive until the step ends; freeing after the last use keeps
// peak memory proportional to the micro-batch.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "gacc-deallocate-buffers"

namespace mlir::gacc {
#define GEN_PASS_DEF_DEALLOCATEBUFFERSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Returns true when `op` only reads or writes through the memref `value`
/// during its execution (it neither keeps nor hands out the buffer).
static bool isTransientUse(Operation *op, Value value) {
  if (isa<func::ReturnOp, memref::StoreOp>(op))
    return !isa<memref::StoreOp>(op) ||
           cast<memref::StoreOp>(op).getMemRef() == value;
  if (op->hasTrait<OpTrait::IsTerminator>())
    return false;
  // Views, casts and the address: findLastUse follows their results.
  if (isa<ViewLikeOpInterface, memref::CastOp,
          memref::ExtractAlignedPointerAsIndexOp>(op))
    return true;
  // Anything else that hands out a memref (arith.select, a call that
  // returns one, the base buffer of extract_strided_metadata) may hand out
  // this buffer, whose later uses are not followed.
  if (llvm::any_of(op->getResultTypes(), llvm::IsaPred<BaseMemRefType>))
    return false;
  // Calls of the runtime (and any call) do not retain their arguments.
  return true;
}

/// Finds the last op of `block` that uses `value` or a view of it. Returns
/// null when a use lies outside `block` or the buffer escapes.
static Operation *findLastUse(Value value, Block *block, Operation *last) {
  for (OpOperand &use : value.getUses()) {
    Operation *owner = use.getOwner();
    Operation *inBlock = block->findAncestorOpInBlock(*owner);
    if (!inBlock || isa<func::ReturnOp>(owner) || !isTransientUse(owner, value))
      return nullptr;
    if (!last || last->isBeforeInBlock(inBlock))
      last = inBlock;
    if (auto view = dyn_cast<ViewLikeOpInterface>(owner)) {
      if (view.getViewSource() != value)
        continue;
      for (Value result : owner->getResults()) {
        Operation *viewLast = findLastUse(result, block, last);
        if (!viewLast)
          return nullptr;
        last = viewLast;
      }
    } else if (isa<memref::CastOp, memref::ExtractAlignedPointerAsIndexOp>(
                   owner)) {
      // A cast or the address: follow its uses too.
      for (Value result : owner->getResults()) {
        if (isa<MemRefType>(result.getType())) {
          Operation *castLast = findLastUse(result, block, last);
          if (!castLast)
            return nullptr;
          last = castLast;
        } else {
          // The address, also as an integer (a runtime call may keep using
          // the buffer until a later call, as gaccrt_all_reduce_start does
          // until gaccrt_all_reduce_wait, which takes the address again).
          SmallVector<Value> addresses = {result};
          while (!addresses.empty()) {
            Value address = addresses.pop_back_val();
            for (Operation *user : address.getUsers()) {
              Operation *u = block->findAncestorOpInBlock(*user);
              if (!u)
                return nullptr;
              if (last->isBeforeInBlock(u))
                last = u;
              if (auto cast = dyn_cast<arith::IndexCastOp>(user))
                addresses.push_back(cast.getResult());
            }
          }
        }
      }
    }
  }
  return last;
}

/// Whether `value` is (a view or cast of) a buffer allocated inside `op`.
static bool isAllocatedWithin(Value value, Operation *op) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<memref::AllocOp>(def))
      return op->isProperAncestor(def);
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      value = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def))
      value = cast.getSource();
    else
      return false;
  }
  return false;
}

/// A buffer before `op` for each result in `indices` (static shape, its
/// element type, identity layout): the buffer, and the buffer in the
/// result's type (itself, or a cast of it).
static DenseMap<unsigned, std::pair<Value, Value>>
createResultBuffers(OpBuilder &builder, Operation *op,
                    ArrayRef<unsigned> indices) {
  DenseMap<unsigned, std::pair<Value, Value>> buffers;
  Location loc = op->getLoc();
  for (unsigned index : indices) {
    auto type = cast<MemRefType>(op->getResult(index).getType());
    auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
    Value buffer = memref::AllocOp::create(builder, loc, bufferType,
                                           builder.getI64IntegerAttr(64));
    Value typed = buffer;
    if (bufferType != type)
      typed = memref::CastOp::create(builder, loc, type, buffer);
    buffers[index] = {buffer, typed};
  }
  return buffers;
}

/// The memref results of `op` that a region yields from a buffer allocated
/// inside it (bufferization's result of an scf.if whose branch computes a
/// tensor, or of an scf.for whose body computes its next iter_arg) and
/// whose type has a static shape and memory space 0: those buffers would
/// escape their block. Returns their indices.
static SmallVector<unsigned> getEscapingResults(Operation *op) {
  SmallVector<unsigned> escaping;
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    auto type = dyn_cast<MemRefType>(result.getType());
    if (!type || !type.hasStaticShape() || type.getMemorySpace())
      continue;
    bool escapes = false;
    for (Region &region : op->getRegions())
      for (Block &block : region)
        if (auto yield = dyn_cast<scf::YieldOp>(block.getTerminator()))
          escapes |= isAllocatedWithin(yield.getOperand(index), op);
    if (escapes)
      escaping.push_back(index);
  }
  return escaping;
}

/// Gives each escaping result of `branch` (an scf.if) a buffer allocated
/// before it, into which each branch copies what it yields: the branches'
/// buffers then end in their own blocks.
static void materializeResults(scf::IfOp branch) {
  SmallVector<unsigned> escaping = getEscapingResults(branch);
  if (escaping.empty())
    return;
  OpBuilder builder(branch);
  Location loc = branch.getLoc();
  DenseMap<unsigned, std::pair<Value, Value>> buffers =
      createResultBuffers(builder, branch, escaping);
  SmallVector<Type> keptTypes;
  SmallVector<unsigned> kept;
  for (unsigned index = 0; index < branch.getNumResults(); ++index)
    if (!buffers.count(index)) {
      kept.push_back(index);
      keptTypes.push_back(branch.getResult(index).getType());
    }
  for (Region *region : {&branch.getThenRegion(), &branch.getElseRegion()}) {
    auto yield = cast<scf::YieldOp>(region->front().getTerminator());
    OpBuilder at(yield);
    SmallVector<Value> operands;
    for (unsigned index = 0; index < yield.getNumOperands(); ++index) {
      if (buffers.count(index))
        memref::CopyOp::create(at, loc, yield.getOperand(index),
                               buffers[index].first);
      else
        operands.push_back(yield.getOperand(index));
    }
    yield->setOperands(operands);
  }
  auto replacement =
      scf::IfOp::create(builder, loc, keptTypes, branch.getCondition(),
                        /*withElseRegion=*/false);
  replacement.getThenRegion().takeBody(branch.getThenRegion());
  replacement.getElseRegion().takeBody(branch.getElseRegion());
  for (auto [position, index] : llvm::enumerate(kept))
    branch.getResult(index).replaceAllUsesWith(replacement.getResult(position));
  for (unsigned index : escaping)
    branch.getResult(index).replaceAllUsesWith(buffers[index].second);
  branch.erase();
}

/// Gives each escaping result of `loop` (an scf.for) one buffer allocated
/// before it, initialized with a copy of its init value: the body reads the
/// buffer for the iter_arg and copies what it yields into it at its end
/// (every read of the iteration's value comes before), and the loop's
/// result is the buffer. The body's buffers then end in the body.
static void materializeResults(scf::ForOp loop) {
  SmallVector<unsigned> escaping = getEscapingResults(loop);
  if (escaping.empty())
    return;
  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  DenseMap<unsigned, std::pair<Value, Value>> buffers =
      createResultBuffers(builder, loop, escaping);
  for (unsigned index : escaping)
    memref::CopyOp::create(builder, loc, loop.getInitArgs()[index],
                           buffers[index].first);
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  OpBuilder at(yield);
  SmallVector<Value> keptInits, keptYields;
  SmallVector<unsigned> kept;
  for (unsigned index = 0; index < loop.getNumResults(); ++index) {
    Value yielded = yield.getOperand(index);
    if (!buffers.count(index)) {
      kept.push_back(index);
      keptInits.push_back(loop.getInitArgs()[index]);
      keptYields.push_back(yielded);
    } else if (yielded != loop.getRegionIterArgs()[index]) {
      memref::CopyOp::create(at, loc, yielded, buffers[index].first);
    }
  }
  yield->setOperands(keptYields);
  // The loop without the escaping iter_args: the body reads their buffers.
  auto replacement = scf::ForOp::create(
      builder, loc, loop.getLowerBound(), loop.getUpperBound(), loop.getStep(),
      keptInits, /*bodyBuilder=*/nullptr, loop.getUnsignedCmp());
  replacement->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  Block *body = replacement.getBody();
  if (!body->empty())
    body->getTerminator()->erase();
  Block *old = loop.getBody();
  old->getArgument(0).replaceAllUsesWith(replacement.getInductionVar());
  for (auto [position, index] : llvm::enumerate(kept)) {
    loop.getRegionIterArgs()[index].replaceAllUsesWith(
        replacement.getRegionIterArgs()[position]);
    loop.getResult(index).replaceAllUsesWith(replacement.getResult(position));
  }
  for (unsigned index : escaping) {
    loop.getRegionIterArgs()[index].replaceAllUsesWith(buffers[index].second);
    loop.getResult(index).replaceAllUsesWith(buffers[index].second);
  }
  body->getOperations().splice(body->end(), old->getOperations());
  loop.erase();
}

namespace {
struct DeallocateBuffersPass
    : public gacc::impl::DeallocateBuffersPassBase<DeallocateBuffersPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    // Buffers that branches and loop bodies yield get a buffer outside
    // (innermost ops first).
    SmallVector<Operation *> regionOps;
    getOperation().walk([&](Operation *op) {
      if (isa<scf::IfOp, scf::ForOp>(op))
        regionOps.push_back(op);
    });
    for (Operation *op : regionOps) {
      if (auto branch = dyn_cast<scf::IfOp>(op))
        materializeResults(branch);
      else
        materializeResults(cast<scf::ForOp>(op));
    }
    SmallVector<memref::AllocOp> allocs;
    getOperation().walk(
        [&](memref::AllocOp alloc) { allocs.push_back(alloc); });
    for (memref::AllocOp alloc : allocs) {
      Block *block = alloc->getBlock();
      if (llvm::any_of(alloc->getUsers(), [](Operation *user) {
            return isa<memref::DeallocOp>(user);
          }))
        continue;
      Operation *last = findLastUse(alloc.getResult(), block, alloc);
      if (!last || last->hasTrait<OpTrait::IsTerminator>()) {
        // Never leak silently: gacc's steps are straight-line code.
        alloc.emitOpError("escapes its block; gacc-deallocate-buffers cannot "
                          "place its deallocation");
        return signalPassFailure();
      }
      OpBuilder builder(block, std::next(last->getIterator()));
      memref::DeallocOp::create(builder, alloc.getLoc(), alloc.getResult());
    }
  }
};
} // namespace
