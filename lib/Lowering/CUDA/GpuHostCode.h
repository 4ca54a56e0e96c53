//===- GpuHostCode.h - where the host code of a CUDA step is ----*- C++ -*-===//
//
// Helpers of the CUDA lowering's passes that work on the host code of a
// bufferized step: the blocks of its functions and of the host control flow
// nested in them (the loop over the micro-batches of one size, the
// last-iteration start of an overlapped all-reduce), but not the bodies of
// parallel loops (kernels to be).
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_CONVERSION_GPUHOSTCODE_H
#define GACC_LIB_CONVERSION_GPUHOSTCODE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::gacc {

/// Returns true when `access` (a memref.load or memref.store) reads or writes
/// a host stack slot (a memref.alloca: the handle of a started all-reduce),
/// which stays host code.
bool accessesHostSlot(Operation *access);

/// Returns true when `op` has regions that hold host work: parallel loops
/// (kernels to be), calls (cuBLAS GEMMs, collectives, trace marks), gpu ops
/// or host stack slot accesses. Such an op stays on the host and its blocks
/// are host code.
bool holdsHostWork(Operation *op);

/// Returns true when `op` is in a block of host code: a function's, or
/// one of an op that holds host work.
bool isInHostBlock(Operation *op);

/// The blocks of host code of `func`: its own, and those of the ops that
/// hold host work, each block before the blocks nested in it.
SmallVector<Block *> getHostBlocks(func::FuncOp func);

} // namespace mlir::gacc

#endif // GACC_LIB_CONVERSION_GPUHOSTCODE_H
