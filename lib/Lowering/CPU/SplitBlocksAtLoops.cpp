//===- SplitBlocksAtLoops.cpp - short blocks for scf-to-cf ------*- C++ -*-===//
//
// The gacc-split-blocks-at-loops pass. Upstream convert-scf-to-cf splits the
// block around each structured loop it lowers, and splitting moves every op
// after the loop into the new block: on the long straight-line blocks of a
// lowered step (thousands of loop nests) that is quadratic in the block's
// length. Splitting the blocks after each loop beforehand, from the end of
// the block, moves each op once; scf-to-cf then only splits short blocks.
//
// The entry block of a function becomes a single branch to the rest of its
// body (after its leading constant-size llvm.alloca slots):
// convert-func-to-llvm materializes each converted argument at the start of the
// entry block and picks the uses to replace by comparing positions in that
// block, which recomputes the block's op order after every insertion (arguments
// x entry block length). A lowered step's entry block holds the views of all
// its hoisted buffers (tens of thousands of ops for a deep model), so that was
// quadratic too.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#define DEBUG_TYPE "gacc-split-blocks-at-loops"

namespace mlir::gacc {
#define GEN_PASS_DEF_SPLITBLOCKSATLOOPSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct SplitBlocksAtLoopsPass
    : public gacc::impl::SplitBlocksAtLoopsPassBase<SplitBlocksAtLoopsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<Block *> blocks;
    getOperation().walk([&](func::FuncOp func) {
      for (Block &block : func.getBody())
        blocks.push_back(&block);
    });
    for (Block *block : blocks) {
      if (block->empty() || !block->mightHaveTerminator())
        continue;
      // The leading stack slots (gacc-parallel-loops-to-runtime's context
      // structs: llvm.alloca of a constant size) stay in the entry block,
      // where LLVM takes them as static allocas.
      Operation *first = &block->front();
      if (block->isEntryBlock())
        while (first != block->getTerminator() &&
               (isa<LLVM::AllocaOp>(first) ||
                (isa<LLVM::ConstantOp>(first) &&
                 llvm::all_of(first->getUsers(), [](Operation *user) {
                   return isa<LLVM::AllocaOp>(user);
                 }))))
          first = first->getNextNode();
      if (block->isEntryBlock() && first != block->getTerminator()) {
        Block *rest = block->splitBlock(first);
        OpBuilder builder = OpBuilder::atBlockEnd(block);
        cf::BranchOp::create(builder, rest->front().getLoc(), rest);
        block = rest;
      }
      // Walk back from the terminator; each split moves only the ops up to
      // the previous split.
      Operation *op = block->getTerminator()->getPrevNode();
      while (op) {
        Operation *prev = op->getPrevNode();
        if (op->getNumRegions() != 0 &&
            isa<scf::SCFDialect>(op->getDialect()) && prev) {
          Block *tail = block->splitBlock(op);
          OpBuilder builder = OpBuilder::atBlockEnd(block);
          cf::BranchOp::create(builder, op->getLoc(), tail);
        }
        op = prev;
      }
    }
  }
};
} // namespace
