//===- GpuLoopOrder.cpp - loop order of linalg ops for GPU kernels --------===//
//
// The gacc-gpu-loop-order pass of the CUDA lowering, before linalg becomes
// parallel loops: in every linalg op on buffers the parallel dimensions come
// first, innermost first, then the reductions in their order. Parallel
// loops then enclose the serial reduction loops (a bias gradient, a
// reduction over the batch, becomes one thread per output element instead
// of a serial loop around a parallel one, which ran as a one-thread kernel),
// and the first dimension of each parallel loop, which is tiled by the
// largest tile size and mapped to threadIdx.x, is the innermost (contiguous)
// dimension, so neighbouring threads touch neighbouring elements.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "gacc-gpu-loop-order"

namespace mlir::gacc {
#define GEN_PASS_DEF_GPULOOPORDERPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// The new loop order (old loop indices): parallel loops innermost first,
/// then reductions in order. Empty when that is the current order.
static SmallVector<unsigned> getGpuLoopOrder(linalg::LinalgOp op) {
  SmallVector<unsigned> parallel, reduction;
  for (auto [index, type] : llvm::enumerate(op.getIteratorTypesArray()))
    (linalg::isParallelIterator(type) ? parallel : reduction).push_back(index);
  SmallVector<unsigned> order(llvm::reverse(parallel));
  llvm::append_range(order, reduction);
  for (auto [position, index] : llvm::enumerate(order))
    if (position != index)
      return order;
  return {};
}

struct GpuLoopOrderPass
    : public gacc::impl::GpuLoopOrderPassBase<GpuLoopOrderPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<linalg::LinalgOp> ops;
    bool mislabelled = false;
    getOperation().walk([&](func::FuncOp func) {
      func.walk([&](linalg::LinalgOp op) {
        if (!op.hasPureBufferSemantics())
          return;
        // Every thread of a kernel runs one point of the parallel loops: a
        // "parallel" loop that indexes no output would have threads add
        // into the same element unsynchronized (the CPU's serial loops
        // happen to compute it).
        for (auto [index, type] : llvm::enumerate(op.getIteratorTypesArray()))
          if (linalg::isParallelIterator(type))
            for (OpOperand &init : op.getDpsInitsMutable())
              if (!op.getMatchingIndexingMap(&init).isFunctionOfDim(index)) {
                op.emitOpError()
                    << "has a 'parallel' loop " << index
                    << " that does not index output #"
                    << init.getOperandNumber() - op.getNumDpsInputs()
                    << "; a loop that several iterations of write the same "
                       "element must be 'reduction'";
                mislabelled = true;
                return;
              }
        if (!getGpuLoopOrder(op).empty())
          ops.push_back(op);
      });
    });
    if (mislabelled)
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> generalized =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(generalized))
          continue; // keeps its order: correct, only slower
        generic = *generalized;
      }
      SmallVector<unsigned> order = getGpuLoopOrder(generic);
      if (failed(linalg::interchangeGenericOp(rewriter, generic, order))) {
        generic.emitOpError("cannot reorder its loops for the GPU");
        return signalPassFailure();
      }
    }
  }
};
} // namespace
