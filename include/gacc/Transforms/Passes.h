//===- Passes.h - gacc passes -----------------------------------*- C++ -*-===//
//
// Declares the gacc passes (generated from Passes.td). gacc-pipeline, which
// runs them, is in gacc/Pipelines/Pipelines.h.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_PASSES_H
#define GACC_TRANSFORMS_PASSES_H

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Transforms/PassDefaults.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::gacc {

#define GEN_PASS_DECL
#include "gacc/Transforms/Passes.h.inc"

/// Adds the patterns that turn TOSA's GEMMs (`linalg.batch_matmul` of a
/// single batch, on [1, M, K] x [1, K, N] views) into `linalg.matmul` and its
/// transposes ([0, 2, 1] of [1, a, b]) into 2-D ones, with the reshape folds
/// that make the views disappear (gacc-prepare-step runs them).
void populateUnitBatchMatmulPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "gacc/Transforms/Passes.h.inc"

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_PASSES_H
