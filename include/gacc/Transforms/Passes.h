//===- Passes.h - gacc passes -----------------------------------*- C++ -*-===//
//
// Declares the gacc passes (generated from Passes.td), the gacc-pipeline
// options and the function that builds the pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_PASSES_H
#define GACC_TRANSFORMS_PASSES_H

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Pipelines/PipelineOptions.h"
#include "gacc/Transforms/PassDefaults.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::gacc {

#define GEN_PASS_DECL
#include "gacc/Transforms/Passes.h.inc"

/// Options of `gacc-pipeline`: the union of the options of its passes,
/// generated from PipelineOptions.def.
struct GaccPipelineOptions : public PassPipelineOptions<GaccPipelineOptions> {
#define GACC_PIPELINE_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION,           \
                             TOOL_HIDDEN)                                      \
  PassOptions::Option<TYPE> NAME{*this, FLAG, llvm::cl::desc(DESCRIPTION),     \
                                 llvm::cl::init(DEFAULT)};
#define GACC_PIPELINE_LIST_OPTION(NAME, TYPE, FLAG, DESCRIPTION)               \
  PassOptions::ListOption<TYPE> NAME{*this, FLAG, llvm::cl::desc(DESCRIPTION)};
#include "gacc/Pipelines/PipelineOptions.def"

  /// The option values as a plain struct.
  GaccPipelineConfig getConfig() const;
};

/// The options of each pass of gacc-pipeline, copied from `config`.
PrepareStepPassOptions getPrepareStepOptions(const GaccPipelineConfig &config);
MicroBatchPassOptions getMicroBatchOptions(const GaccPipelineConfig &config);
FuseAccumulationPassOptions
getFuseAccumulationOptions(const GaccPipelineConfig &config);
SinkAllReducePassOptions
getSinkAllReduceOptions(const GaccPipelineConfig &config);
LossScalePassOptions getLossScaleOptions(const GaccPipelineConfig &config);

/// Adds gacc-prepare-step, gacc-micro-batch (which runs the checks of
/// gacc-verify-step),
/// gacc-fuse-accumulation, gacc-sink-all-reduce and (unless loss-scale=none)
/// gacc-loss-scale to `pm`.
void buildGaccPipeline(OpPassManager &pm, const GaccPipelineConfig &config);
void buildGaccPipeline(OpPassManager &pm, const GaccPipelineOptions &options);

/// Registers `gacc-pipeline`.
void registerGaccPipeline();

#define GEN_PASS_REGISTRATION
#include "gacc/Transforms/Passes.h.inc"

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_PASSES_H
