//===- GpuPrepare.cpp - a bufferized step for the GPU -----------*- C++ -*-===//
//
// The gacc-gpu-prepare pass of the CUDA lowering: buffers become device
// allocations, copies become gpu.memcpy, and the collectives (blocking, or
// started and waited for) call the CUDA runtime's, so that the host only
// launches kernels, cuBLAS GEMMs and NCCL collectives (gacc-gpu-serial-kernels
// moves the remaining host code that touches memory to the device).
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/CUDA/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "gacc-gpu-prepare"

namespace mlir::gacc {
#define GEN_PASS_DEF_GPUPREPAREPASS
#include "gacc/Lowering/CUDA/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct GpuPreparePass : public gacc::impl::GpuPreparePassBase<GpuPreparePass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    // The collectives of the CUDA runtime have the CPU ones' signatures
    // (the blocking all-reduce, and the start and wait of an overlapped one;
    // shard-optimizer-state's reduce-scatter and all-gather, blocking or
    // started and waited for).
    for (StringRef name :
         {"gaccrt_all_reduce", "gaccrt_all_reduce_start",
          "gaccrt_all_reduce_wait", "gaccrt_reduce_scatter",
          "gaccrt_all_gather", "gaccrt_reduce_scatter_start",
          "gaccrt_reduce_scatter_wait", "gaccrt_all_gather_start",
          "gaccrt_all_gather_wait"}) {
      auto decl = module.lookupSymbol<func::FuncOp>(name);
      if (!decl)
        continue;
      std::string cudaName = ("gaccrt_cuda_" + name.drop_front(7)).str();
      if (failed(SymbolTable::replaceAllSymbolUses(
              decl, StringAttr::get(&getContext(), cudaName), module)))
        return signalPassFailure();
      decl.setSymName(cudaName);
    }

    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp,
              memref::GetGlobalOp>(op))
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
      } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        // A constant tensor (non-splat) is a host global: the kernels read
        // a device copy, made in each step and freed at its end.
        auto type = global.getType();
        auto func = op->getParentOfType<func::FuncOp>();
        if (!type.hasStaticShape() || !type.getLayout().isIdentity() || !func)
          continue;
        builder.setInsertionPointAfter(global);
        auto device = gpu::AllocOp::create(
            builder, loc, type, /*asyncToken=*/Type(), ValueRange{},
            ValueRange{}, ValueRange{}, /*hostShared=*/false);
        auto memcpy =
            gpu::MemcpyOp::create(builder, loc, /*asyncToken=*/Type(),
                                  ValueRange{}, device.getMemref(), global);
        global.getResult().replaceAllUsesExcept(device.getMemref(), memcpy);
        func.walk([&](func::ReturnOp ret) {
          OpBuilder atEnd(ret);
          gpu::DeallocOp::create(atEnd, loc, /*asyncToken=*/Type(),
                                 ValueRange{}, device.getMemref());
        });
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        gpu::MemcpyOp::create(builder, loc, /*asyncToken=*/Type(), ValueRange{},
                              copy.getTarget(), copy.getSource());
        copy.erase();
      }
    }
  }
};
} // namespace
