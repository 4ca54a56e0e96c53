//===- Passes.h - gacc lowering passes --------------------------*- C++ -*-===//
//
// The lowering passes and the bufferization model of shard.all_reduce. The
// pipelines built from them (gacc-lower-to-cpu, gacc-lower-to-cuda) are in
// gacc/Pipelines/Pipelines.h. The passes are defined in lib/Lowering/Common
// (used by both pipelines), lib/Lowering/CPU and lib/Lowering/CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_PASSES_H
#define GACC_LOWERING_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::gacc {

#define GEN_PASS_DECL
#include "gacc/Lowering/Passes.h.inc"

/// Makes `shard.all_reduce` bufferizable: in place on its operand's buffer,
/// as a call to the runtime (`gaccrt_all_reduce`).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

/// Makes one-shot bufferization's alias queries about `scf.for` results
/// linear in the number of iteration arguments instead of quadratic (a
/// workaround for upstream MLIR 22; same answers). Must be registered after
/// the SCF dialect's bufferization models (registerAllExtensions).
void registerLinearForBufferizationQueries(DialectRegistry &registry);

/// Adds the patterns of gacc-expand-narrow-floats: f32/f64 <-> bf16/f16
/// casts as integer arithmetic (round to nearest even), narrow `math.fma`
/// in f32.
void populateExpandNarrowFloatsPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "gacc/Lowering/Passes.h.inc"

} // namespace mlir::gacc

#endif // GACC_LOWERING_PASSES_H
