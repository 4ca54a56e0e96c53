//===- Passes.h - lowering passes of the CUDA target ------------*- C++ -*-===//
//
// The lowering passes that only gacc-lower-to-cuda runs (generated from
// Passes.td beside this file; library GaccLoweringCUDA).
// gacc/Lowering/Passes.h includes the passes of every target.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_CUDA_PASSES_H
#define GACC_LOWERING_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::gacc {

#define GEN_PASS_DECL
#include "gacc/Lowering/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gacc/Lowering/CUDA/Passes.h.inc"

} // namespace mlir::gacc

#endif // GACC_LOWERING_CUDA_PASSES_H
