//===- GpuInOrderStream.cpp - one in-order stream per step ----------------===//
//
// The gacc-gpu-in-order-stream pass of the CUDA lowering, in place of
// upstream's gpu-async-region: every device allocation, copy, free and
// launch of a function goes on one stream created at its entry, and the
// host waits for that stream once, before each return of a public function
// (a private one, the shared body of micro-batch regions, runs on its
// caller's stream: the runtime has one compute stream). cuBLAS and NCCL
// calls of the runtime are ordered on the same stream, so the host never
// waits inside a step. Runs right before gpu-to-llvm (after the last
// canonicalization, which would fold a wait on a fresh stream away); the
// final wait names the stream itself, so it lowers to
// mgpuStreamSynchronize/mgpuStreamDestroy, never to event calls.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#define DEBUG_TYPE "gacc-gpu-in-order-stream"

namespace mlir::gacc {
#define GEN_PASS_DEF_GPUINORDERSTREAMPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// Returns `op` as an async op on `stream`: the op itself when it already
/// returns a token, else a clone with a token result that replaces it.
static LogicalResult makeAsync(Operation *op, Value stream) {
  auto asyncOp = cast<gpu::AsyncOpInterface>(op);
  if (!asyncOp.getAsyncDependencies().empty())
    return op->emitOpError("already has async dependencies; run "
                           "gacc-gpu-in-order-stream on synchronous gpu ops");
  asyncOp.addAsyncDependency(stream);
  if (asyncOp.getAsyncToken())
    return success();
  SmallVector<Type> resultTypes(op->getResultTypes());
  resultTypes.push_back(stream.getType());
  OpBuilder builder(op);
  Operation *async = Operation::create(
      op->getLoc(), op->getName(), resultTypes, op->getOperands(),
      op->getDiscardableAttrDictionary(), op->getPropertiesStorage(),
      op->getSuccessors(), op->getNumRegions());
  for (auto [from, to] : llvm::zip(op->getRegions(), async->getRegions()))
    to.takeBody(from);
  builder.insert(async);
  op->replaceAllUsesWith(async->getResults().drop_back());
  op->erase();
  return success();
}

struct GpuInOrderStreamPass
    : public gacc::impl::GpuInOrderStreamPassBase<GpuInOrderStreamPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    WalkResult result =
        getOperation().walk([&](FunctionOpInterface func) -> WalkResult {
          if (func.isExternal())
            return WalkResult::skip();
          SmallVector<Operation *> ops;
          bool waits = false;
          func->walk([&](Operation *op) {
            if (isa<gpu::WaitOp>(op))
              waits = true;
            else if (isa<gpu::AsyncOpInterface>(op))
              ops.push_back(op);
          });
          if (waits) {
            func.emitOpError("already has gpu.wait ops; "
                             "gacc-gpu-in-order-stream orders a function "
                             "that has none");
            return WalkResult::interrupt();
          }
          if (ops.empty())
            return WalkResult::skip();
          Location loc = func.getLoc();
          auto builder =
              OpBuilder::atBlockBegin(&func.getFunctionBody().front());
          Type tokenType = builder.getType<gpu::AsyncTokenType>();
          Value stream =
              gpu::WaitOp::create(builder, loc, tokenType, ValueRange{})
                  .getAsyncToken();
          for (Operation *op : ops)
            if (failed(makeAsync(op, stream)))
              return WalkResult::interrupt();
          // A private function (the shared body of micro-batch regions,
          // called by the step) runs on the caller's stream: the runtime's
          // one compute stream, which the caller waits for before it
          // returns; a wait here would stop the host once per region.
          if (func.isPrivate())
            return WalkResult::skip();
          for (Block &block : func.getFunctionBody()) {
            Operation *terminator = block.getTerminator();
            if (!terminator || !terminator->hasTrait<OpTrait::ReturnLike>())
              continue;
            builder.setInsertionPoint(terminator);
            gpu::WaitOp::create(builder, terminator->getLoc(), Type(),
                                ValueRange{stream});
          }
          return WalkResult::skip();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
