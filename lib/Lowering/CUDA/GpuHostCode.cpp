//===- GpuHostCode.cpp - where the host code of a CUDA step is ------------===//

#include "GpuHostCode.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/CallInterfaces.h"

using namespace mlir;

bool mlir::gacc::isInHostBlock(Operation *op) {
  Operation *parent = op->getParentOp();
  return isa_and_nonnull<FunctionOpInterface>(parent) ||
         (parent && holdsHostWork(parent));
}

bool mlir::gacc::accessesHostSlot(Operation *access) {
  Value memref;
  if (auto load = dyn_cast<memref::LoadOp>(access))
    memref = load.getMemRef();
  else if (auto store = dyn_cast<memref::StoreOp>(access))
    memref = store.getMemRef();
  return memref && isa_and_nonnull<memref::AllocaOp>(memref.getDefiningOp());
}

bool mlir::gacc::holdsHostWork(Operation *op) {
  if (op->getNumRegions() == 0 || isa<scf::ParallelOp, gpu::LaunchOp>(op))
    return false;
  WalkResult result = op->walk([](Operation *nested) {
    bool host = isa<scf::ParallelOp, gpu::LaunchOp, CallOpInterface>(nested) ||
                isa_and_nonnull<gpu::GPUDialect>(nested->getDialect()) ||
                accessesHostSlot(nested);
    return host ? WalkResult::interrupt() : WalkResult::advance();
  });
  return result.wasInterrupted();
}

static void collectHostBlocks(Region &region, SmallVectorImpl<Block *> &out) {
  for (Block &block : region) {
    out.push_back(&block);
    for (Operation &op : block)
      if (mlir::gacc::holdsHostWork(&op))
        for (Region &nested : op.getRegions())
          collectHostBlocks(nested, out);
  }
}

SmallVector<Block *> mlir::gacc::getHostBlocks(func::FuncOp func) {
  SmallVector<Block *> blocks;
  collectHostBlocks(func.getBody(), blocks);
  return blocks;
}
