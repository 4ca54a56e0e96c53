//===- DeallocateBuffers.cpp - free buffers after their last use -*- C++ -*-=//
//
// The gacc-deallocate-buffers pass: a last-use deallocation for the
// straight-line, bufferized steps gacc produces. Ownership-based
// deallocation frees at the end of a block, which keeps every micro-batch's
// activations alive until the step ends; freeing after the last use keeps
// peak memory proportional to the micro-batch.
//
//===----------------------------------------------------------------------===//

#include "gacc/Conversion/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "gacc-deallocate-buffers"

namespace mlir::gacc {
#define GEN_PASS_DEF_DEALLOCATEBUFFERSPASS
#include "gacc/Conversion/Passes.h.inc"
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

namespace {
struct DeallocateBuffersPass
    : public gacc::impl::DeallocateBuffersPassBase<DeallocateBuffersPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
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
