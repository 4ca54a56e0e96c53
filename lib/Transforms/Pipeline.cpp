//===- Pipeline.cpp - the gacc-pipeline -------------------------*- C++ -*-===//
//
// Builds and registers gacc-pipeline: prepare-step, micro-batch (which verifies
// the step), fuse-accumulation and sink-all-reduce, with the union of their
// options.
//
//===----------------------------------------------------------------------===//

#include "gacc/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::gacc;

PrepareStepPassOptions GaccPipelineOptions::getPrepareStepOptions() const {
  PrepareStepPassOptions options;
  options.entry = entry;
  options.batchSize = batchSize;
  return options;
}

MicroBatchPassOptions GaccPipelineOptions::getMicroBatchOptions() const {
  MicroBatchPassOptions options;
  options.entry = entry;
  options.microBatches = microBatches;
  options.microBatchSizes.assign(microBatchSizes.begin(),
                                 microBatchSizes.end());
  options.allowMicroBatchStatistics = allowMicroBatchStatistics;
  options.testSkipGlobalNormalizer = testSkipGlobalNormalizer;
  return options;
}

FuseAccumulationPassOptions
GaccPipelineOptions::getFuseAccumulationOptions() const {
  FuseAccumulationPassOptions options;
  options.accumulateType = accumulateType;
  return options;
}

SinkAllReducePassOptions GaccPipelineOptions::getSinkAllReduceOptions() const {
  SinkAllReducePassOptions options;
  options.bucketBytes = bucketBytes;
  options.overlap = overlapAllReduce;
  return options;
}

LossScalePassOptions GaccPipelineOptions::getLossScaleOptions() const {
  LossScalePassOptions options;
  options.entry = entry;
  options.lossScale = lossScale;
  options.lossScaleInit = lossScaleInit;
  options.growthFactor = lossScaleGrowthFactor;
  options.backoffFactor = lossScaleBackoffFactor;
  options.growthInterval = lossScaleGrowthInterval;
  return options;
}

void mlir::gacc::buildGaccPipeline(OpPassManager &pm,
                                   const GaccPipelineOptions &options) {
  pm.addPass(createPrepareStepPass(options.getPrepareStepOptions()));
  // gacc-micro-batch runs the same checks as gacc-verify-step (it needs the
  // analysis anyway); running both would report every problem twice.
  pm.addPass(createMicroBatchPass(options.getMicroBatchOptions()));
  pm.addPass(createFuseAccumulationPass(options.getFuseAccumulationOptions()));
  pm.addPass(createSinkAllReducePass(options.getSinkAllReduceOptions()));
  if (StringRef(options.lossScale) != "none")
    pm.addPass(createLossScalePass(options.getLossScaleOptions()));
}

void mlir::gacc::registerGaccPipeline() {
  PassPipelineRegistration<GaccPipelineOptions>(
      "gacc-pipeline",
      "Verify, micro-batch, fuse accumulation and sink the all-reduce of a "
      "training step",
      buildGaccPipeline);
}
