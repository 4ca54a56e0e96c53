//===- GpuPrepare.cpp - a bufferized step for the GPU -----------*- C++ -*-===//
//
// The gacc-gpu-prepare pass: device allocations and copies, the CUDA runtime's
// collective, and one-iteration parallel loops around linalg ops that have no
// parallel dimension, so that all compute becomes GPU kernels and the host
// only launches kernels, cuBLAS GEMMs and NCCL collectives.
//
//===----------------------------------------------------------------------===//

#include "gacc/Conversion/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "gacc-gpu-prepare"

namespace mlir::gacc {
#define GEN_PASS_DEF_GPUPREPAREPASS
#define GEN_PASS_DEF_GPUSERIALKERNELSPASS
#include "gacc/Conversion/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct GpuPreparePass : public gacc::impl::GpuPreparePassBase<GpuPreparePass> {
  void runOnOperation() override {
    mlir::gacc::PassResultVerifier verifyResult(
        getOperation(), getArgument(), [this] { signalPassFailure(); });
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

/// Returns true when `op` reads or writes memory through memref.load/store
/// (itself or nested).
static bool touchesMemory(Operation *op) {
  WalkResult result = op->walk([](Operation *nested) {
    return isa<memref::LoadOp, memref::StoreOp>(nested)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// Returns true when `op` may join a run of serial device code.
static bool isComputeOp(Operation *op) {
  if (isa<scf::ParallelOp, gpu::LaunchOp>(op) ||
      op->hasTrait<OpTrait::IsTerminator>() ||
      op->hasTrait<OpTrait::ConstantLike>())
    return false;
  if (touchesMemory(op))
    return true;
  Dialect *dialect = op->getDialect();
  return dialect && (dialect->getNamespace() == "arith" ||
                     dialect->getNamespace() == "math");
}

struct GpuSerialKernelsPass
    : public gacc::impl::GpuSerialKernelsPassBase<GpuSerialKernelsPass> {
  void runOnOperation() override {
    mlir::gacc::PassResultVerifier verifyResult(
        getOperation(), getArgument(), [this] { signalPassFailure(); });
    getOperation().walk([&](func::FuncOp func) {
      for (Block &block : func.getBody()) {
        // Maximal runs of compute ops that contain at least one memory
        // access and whose values do not escape the run.
        SmallVector<SmallVector<Operation *>> runs;
        SmallVector<Operation *> current;
        auto flush = [&] {
          bool memory = llvm::any_of(current, touchesMemory);
          // Trailing pure ops that feed nothing in the run stay outside.
          if (memory)
            runs.push_back(current);
          current.clear();
        };
        for (Operation &op : block) {
          if (isComputeOp(&op))
            current.push_back(&op);
          else
            flush();
        }
        flush();
        for (SmallVector<Operation *> &run : runs) {
          DenseSet<Operation *> inRun(run.begin(), run.end());
          bool escapes = llvm::any_of(run, [&](Operation *op) {
            return llvm::any_of(op->getUsers(), [&](Operation *user) {
              return !inRun.contains(block.findAncestorOpInBlock(*user));
            });
          });
          if (escapes) {
            run.front()->emitOpError(
                "computes a value used outside its serial kernel; cannot "
                "move it to the GPU");
            return signalPassFailure();
          }
          OpBuilder builder(run.front());
          Location loc = run.front()->getLoc();
          Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
          Value one = arith::ConstantIndexOp::create(builder, loc, 1);
          auto loop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                              ValueRange{one}, ValueRange{one});
          for (Operation *op : run)
            op->moveBefore(loop.getBody()->getTerminator());
        }
      }
    });
  }
};
} // namespace
