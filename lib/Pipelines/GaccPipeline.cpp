//===- GaccPipeline.cpp - the gacc-pipeline ---------------------*- C++ -*-===//
//
// Builds and registers gacc-pipeline: prepare-step, micro-batch (which verifies
// the step), fuse-accumulation and sink-all-reduce (then, with
// shard-optimizer-state, gacc-shard-optimizer-state), with the union of their
// options.
//
//===----------------------------------------------------------------------===//

#include "gacc/Pipelines/Pipelines.h"
#include "gacc/Transforms/LossScaleMode.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::gacc;

GaccPipelineConfig GaccPipelineOptions::getConfig() const {
  GaccPipelineConfig config;
#define GACC_PIPELINE_OPTION(NAME, ...) config.NAME = NAME;
#define GACC_PIPELINE_LIST_OPTION(NAME, ...)                                   \
  config.NAME.assign(NAME.begin(), NAME.end());
#include "gacc/Pipelines/PipelineOptions.def"
  return config;
}

PrepareStepPassOptions
mlir::gacc::getPrepareStepOptions(const GaccPipelineConfig &config) {
  PrepareStepPassOptions options;
  options.entry = config.entry;
  options.batchSize = config.batchSize;
  options.runtimeBatchSize = config.runtimeBatchSize;
  return options;
}

MicroBatchPassOptions
mlir::gacc::getMicroBatchOptions(const GaccPipelineConfig &config) {
  MicroBatchPassOptions options;
  options.entry = config.entry;
  options.microBatches = config.microBatches;
  options.microBatchSizes.assign(config.microBatchSizes.begin(),
                                 config.microBatchSizes.end());
  options.allowMicroBatchStatistics = config.allowMicroBatchStatistics;
  options.testSkipGlobalNormalizer = config.testSkipGlobalNormalizer;
  return options;
}

FuseAccumulationPassOptions
mlir::gacc::getFuseAccumulationOptions(const GaccPipelineConfig &config) {
  FuseAccumulationPassOptions options;
  options.accumulateType = config.accumulateType;
  return options;
}

SinkAllReducePassOptions
mlir::gacc::getSinkAllReduceOptions(const GaccPipelineConfig &config) {
  SinkAllReducePassOptions options;
  options.bucketBytes = config.bucketBytes;
  options.overlap = config.overlapAllReduce;
  return options;
}

LossScalePassOptions
mlir::gacc::getLossScaleOptions(const GaccPipelineConfig &config) {
  LossScalePassOptions options;
  options.entry = config.entry;
  options.lossScale = config.lossScale;
  options.lossScaleInit = config.lossScaleInit;
  options.growthFactor = config.lossScaleGrowthFactor;
  options.backoffFactor = config.lossScaleBackoffFactor;
  options.growthInterval = config.lossScaleGrowthInterval;
  return options;
}

void mlir::gacc::buildGaccPipeline(OpPassManager &pm,
                                   const GaccPipelineConfig &config) {
  pm.addPass(createPrepareStepPass(getPrepareStepOptions(config)));
  if (config.runtimeBatchSize) {
    RuntimeBatchSizePassOptions runtimeBatch;
    runtimeBatch.entry = config.entry;
    pm.addPass(createRuntimeBatchSizePass(runtimeBatch));
  }
  // gacc-micro-batch runs the same checks as gacc-verify-step (it needs the
  // analysis anyway); running both would report every problem twice.
  pm.addPass(createMicroBatchPass(getMicroBatchOptions(config)));
  pm.addPass(createFuseAccumulationPass(getFuseAccumulationOptions(config)));
  // Loss scaling sees the graph's own collectives (which values reach
  // which all-reduce), not the buckets that share them.
  // An option the parser refuses adds the pass, which reports it.
  std::string error;
  std::optional<LossScaleMode> lossScale =
      parseLossScaleMode(config.lossScale, config.lossScaleInit, error);
  if (!lossScale || lossScale->kind != LossScaleKind::None)
    pm.addPass(createLossScalePass(getLossScaleOptions(config)));
  pm.addPass(createSinkAllReducePass(getSinkAllReduceOptions(config)));
  if (config.shardOptimizerState) {
    ShardOptimizerStatePassOptions shard;
    shard.dataParallelSize = config.dataParallelSize;
    pm.addPass(createShardOptimizerStatePass(shard));
  }
}

void mlir::gacc::buildGaccPipeline(OpPassManager &pm,
                                   const GaccPipelineOptions &options) {
  buildGaccPipeline(pm, options.getConfig());
}

void mlir::gacc::registerGaccPipeline() {
  PassPipelineRegistration<GaccPipelineOptions>(
      "gacc-pipeline",
      "Verify, micro-batch, fuse accumulation and sink the all-reduce of a "
      "training step",
      [](OpPassManager &pm, const GaccPipelineOptions &options) {
        buildGaccPipeline(pm, options);
      });
}

void mlir::gacc::registerGaccPipelines() {
  registerGaccPipeline();
  registerLowerToCPUPipeline();
  registerLowerToCUDAPipeline();
}
