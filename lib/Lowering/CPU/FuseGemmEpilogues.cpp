//===- FuseGemmEpilogues.cpp - elementwise loops into their GEMMs -*- C++ -*-//
//
// The gacc-fuse-gemm-epilogues pass: a gaccrt_sgemm call and the elementwise
// linalg.generic right after it that reads its C (a layer's bias and
// activation) become one unit, an `scf.execute_region` marked
// gacc.gemm_epilogue, which gacc-parallel-loops-to-runtime lowers to
// gaccrt_sgemm_epilogue: the runtime runs the generic's loop on each tile of
// C as soon as the tile is final, while it is in cache, instead of reading
// all of C back from memory after the GEMM.
//
// The generic qualifies when every element it writes depends on C only
// through the same element (so that a final tile of C is all it needs), and
// nothing it writes is read or written by the GEMM or by another tile's
// work: see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Common/RuntimeCalls.h"

#include "gacc/Lowering/CPU/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SmallPtrSet.h"

#define DEBUG_TYPE "gacc-fuse-gemm-epilogues"

namespace mlir::gacc {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUESPASS
#include "gacc/Lowering/CPU/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// `value` without the memref.casts around it.
static Value stripCasts(Value value) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  return value;
}

/// Whether `op` may move before the GEMM call ahead of it: it reads and
/// writes no memory (an allocation, a constant, a view).
static bool movesAhead(Operation *op) {
  return op->getNumRegions() == 0 &&
         (isa<memref::AllocOp>(op) || isMemoryEffectFree(op));
}

/// Whether `generic` can run on the final tiles of `call`'s C: see the
/// pass description.
static bool isEpilogueOf(linalg::GenericOp generic, func::CallOp call) {
  if (!generic.hasPureBufferSemantics() || generic.getNumLoops() != 2 ||
      generic.getNumParallelLoops() != 2)
    return false;
  // The body computes, nothing more.
  for (Operation &op : generic.getBody()->without_terminator())
    if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
      return false;
  Value c = stripCasts(call.getOperand(6));
  Value cRoot = getViewRoot(c);
  SmallPtrSet<Value, 4> gemmRoots = {getViewRoot(call.getOperand(4)),
                                     getViewRoot(call.getOperand(5)), cRoot};
  // C, read element by element (and nothing else of C's buffer).
  bool readsC = false;
  SmallPtrSet<Value, 8> inputRoots;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    Value root = getViewRoot(input->get());
    if (!isa<MemRefType>(input->get().getType()))
      continue;
    if (root == cRoot) {
      if (stripCasts(input->get()) != c ||
          !generic.getMatchingIndexingMap(input).isIdentity())
        return false;
      readsC = true;
    }
    inputRoots.insert(root);
  }
  if (!readsC)
    return false;
  // Outputs: C itself, or fresh buffers of their own, written element by
  // element.
  SmallPtrSet<Value, 4> outputRoots;
  for (OpOperand &init : generic.getDpsInitsMutable()) {
    Value root = getViewRoot(init.get());
    if (stripCasts(init.get()) == c) {
      if (!generic.getMatchingIndexingMap(&init).isIdentity())
        return false;
      continue;
    }
    if (!root.getDefiningOp<memref::AllocOp>() ||
        !generic.getMatchingIndexingMap(&init).isIdentity() ||
        gemmRoots.contains(root) || inputRoots.contains(root) ||
        !outputRoots.insert(root).second)
      return false;
  }
  return true;
}

/// Whether `op` (in `generic`'s block or nested in an op there) comes after
/// `generic`.
static bool isAfter(Operation *op, linalg::GenericOp generic) {
  Operation *ancestor = generic->getBlock()->findAncestorOpInBlock(*op);
  return ancestor && ancestor != generic && generic->isBeforeInBlock(ancestor);
}

/// Makes one output of `generic` (the epilogue of `call`) C itself when C
/// is a buffer of its own that nothing reads after `generic` and the output
/// a buffer of the same type that nothing touches before it: the epilogue
/// then writes that output over the tile of C it has just read, in cache,
/// instead of into memory of its own (a layer's pre-activation, kept for
/// the backward pass).
static void reuseC(linalg::GenericOp generic, func::CallOp call) {
  Value c = stripCasts(call.getOperand(6));
  auto cAlloc = c.getDefiningOp<memref::AllocOp>();
  // C allocated where the GEMM runs: a C allocated outside a loop around
  // it holds the previous iteration's values, which an output yielded to
  // the next iteration would still need when the GEMM overwrites them.
  if (!cAlloc || !cAlloc.getDynamicSizes().empty() ||
      cAlloc->getBlock() != generic->getBlock())
    return;
  for (Operation *user : c.getUsers()) {
    if (user == generic)
      continue;
    auto cast = dyn_cast<memref::CastOp>(user);
    if (!cast || !llvm::all_of(cast->getUsers(),
                               [&](Operation *u) { return u == call; }))
      return;
  }
  for (OpOperand &init : generic.getDpsInitsMutable()) {
    auto alloc = init.get().getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc.getType() != cAlloc.getType() ||
        alloc->getBlock() != generic->getBlock() ||
        !generic.getMatchingIndexingMap(&init).isIdentity() ||
        !llvm::all_of(alloc->getUsers(), [&](Operation *user) {
          return user == generic || isAfter(user, generic);
        }))
      continue;
    alloc.getResult().replaceAllUsesWith(c);
    alloc.erase();
    return;
  }
}

namespace {
struct FuseGemmEpiloguesPass
    : public gacc::impl::FuseGemmEpiloguesPassBase<FuseGemmEpiloguesPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<func::CallOp> calls;
    getOperation().walk([&](func::CallOp call) {
      if (getSgemmCall(call))
        calls.push_back(call);
    });
    for (func::CallOp call : calls) {
      SmallVector<Operation *> ahead;
      Operation *next = call->getNextNode();
      while (next && movesAhead(next)) {
        ahead.push_back(next);
        next = next->getNextNode();
      }
      auto generic = dyn_cast_or_null<linalg::GenericOp>(next);
      if (!generic || !isEpilogueOf(generic, call))
        continue;
      for (Operation *op : ahead)
        op->moveBefore(call);
      reuseC(generic, call);
      OpBuilder builder(call);
      auto unit =
          scf::ExecuteRegionOp::create(builder, call.getLoc(), TypeRange{});
      unit->setAttr(kGemmEpilogueAttr, builder.getUnitAttr());
      Block *body = builder.createBlock(&unit.getRegion());
      call->moveBefore(body, body->end());
      generic->moveBefore(body, body->end());
      builder.setInsertionPointToEnd(body);
      scf::YieldOp::create(builder, generic.getLoc());
    }
  }
};
} // namespace
