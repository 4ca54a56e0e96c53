//===- Passes.h - lowering passes of both targets ---------------*- C++ -*-===//
//
// The lowering passes that gacc-lower-to-cpu and gacc-lower-to-cuda both run
// (generated from Passes.td beside this file; library GaccLoweringCommon).
// The lowering's bufferization models are in ExternalModels.h beside it.
// gacc/Lowering/Passes.h includes the passes of every target.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_COMMON_PASSES_H
#define GACC_LOWERING_COMMON_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::gacc {

#define GEN_PASS_DECL
#include "gacc/Lowering/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gacc/Lowering/Common/Passes.h.inc"

} // namespace mlir::gacc

#endif // GACC_LOWERING_COMMON_PASSES_H
