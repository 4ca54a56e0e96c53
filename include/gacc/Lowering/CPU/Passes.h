//===- Passes.h - lowering passes of the CPU target -------------*- C++ -*-===//
//
// The lowering passes that only gacc-lower-to-cpu runs (generated from
// Passes.td beside this file; library GaccLoweringCPU). gacc/Lowering/Passes.h
// includes the passes of every target.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_CPU_PASSES_H
#define GACC_LOWERING_CPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::gacc {

#define GEN_PASS_DECL
#include "gacc/Lowering/CPU/Passes.h.inc"

/// Adds the patterns of gacc-expand-narrow-floats: f32/f64 <-> bf16/f16
/// casts as integer arithmetic (round to nearest even), narrow `math.fma`
/// in f32.
void populateExpandNarrowFloatsPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "gacc/Lowering/CPU/Passes.h.inc"

} // namespace mlir::gacc

#endif // GACC_LOWERING_CPU_PASSES_H
