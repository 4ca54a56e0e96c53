//===- GpuPrepare.cpp - a bufferized step for the GPU -----------*- C++ -*-===//
//
// The gacc-gpu-prepare pass of the CUDA lowering: buffers become device
// allocations, copies become gpu.memcpy, and the collective calls the CUDA
// runtime's, so that the host only launches kernels, cuBLAS GEMMs and NCCL
// collectives (gacc-gpu-serial-kernels moves the remaining host code that
// touches memory to the device).
//
//===----------------------------------------------------------------------===//

#include "gacc/Conversion/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "gacc-gpu-prepare"

namespace mlir::gacc {
#define GEN_PASS_DEF_GPUPREPAREPASS
#include "gacc/Conversion/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct GpuPreparePass : public gacc::impl::GpuPreparePassBase<GpuPreparePass> {
  void runOnOperation() override {
    mlir::gacc::PassResultVerifier verifyResult(
        getOperation(), getArgument(), [this] { signalPassFailure(); },
        [this] {
          getAnalysisManager().invalidate({});
          markAllAnalysesPreserved();
        });
    ModuleOp module = getOperation();
    // The collective of the CUDA runtime has the CPU one's signature.
    if (auto decl = module.lookupSymbol<func::FuncOp>("gaccrt_all_reduce")) {
      if (failed(SymbolTable::replaceAllSymbolUses(
              decl, StringAttr::get(&getContext(), "gaccrt_cuda_all_reduce"),
              module)))
        return signalPassFailure();
      decl.setSymName("gaccrt_cuda_all_reduce");
    }

    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder builder(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto device = gpu::AllocOp::create(
            builder, loc, alloc.getType(), /*asyncToken=*/Type(),
            /*asyncDependencies=*/ValueRange{}, alloc.getDynamicSizes(),
            alloc.getSymbolOperands(), /*hostShared=*/false);
        alloc.replaceAllUsesWith(device.getMemref());
        alloc.erase();
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(builder, loc, /*asyncToken=*/Type(),
                               ValueRange{}, dealloc.getMemref());
        dealloc.erase();
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        gpu::MemcpyOp::create(builder, loc, /*asyncToken=*/Type(), ValueRange{},
                              copy.getTarget(), copy.getSource());
        copy.erase();
      }
    }
  }
};
} // namespace
