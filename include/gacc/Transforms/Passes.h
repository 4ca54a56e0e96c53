//===- Passes.h - gacc passes -----------------------------------*- C++ -*-===//
//
// Declares the gacc passes (generated from Passes.td), the gacc-pipeline
// options and the function that builds the pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_PASSES_H
#define GACC_TRANSFORMS_PASSES_H

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
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

/// Options of `gacc-pipeline`: the union of the options of its passes.
struct GaccPipelineOptions : public PassPipelineOptions<GaccPipelineOptions> {
  PassOptions::Option<std::string> entry{
      *this, "entry", llvm::cl::desc("Name of the training-step function"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> batchSize{
      *this, "batch-size",
      llvm::cl::desc("Number of samples of batch arguments whose sample "
                     "dimension is dynamic"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> microBatches{
      *this, "micro-batches", llvm::cl::desc("Number of micro-batches m"),
      llvm::cl::init(1)};
  PassOptions::ListOption<int64_t> microBatchSizes{
      *this, "micro-batch-sizes",
      llvm::cl::desc(
          "Explicit micro-batch sizes (must sum to the batch size)")};
  PassOptions::Option<bool> allowMicroBatchStatistics{
      *this, "allow-micro-batch-statistics",
      llvm::cl::desc("Accept parameter-dependent batch statistics with a "
                     "warning and per-micro-batch semantics"),
      llvm::cl::init(false)};
  PassOptions::Option<std::string> accumulateType{
      *this, "accumulate-type",
      llvm::cl::desc("Element type of accumulators for narrower float "
                     "partials (empty or f32)"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("Maximum size of an accumulator bucket in bytes"),
      llvm::cl::init(26214400)};
  PassOptions::Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("Loss scaling: none, static (loss-scale-init), "
                     "static=S, or dynamic"),
      llvm::cl::init("none")};
  PassOptions::Option<double> lossScaleInit{
      *this, "loss-scale-init",
      llvm::cl::desc("Static scale, or the initial dynamic scale"),
      llvm::cl::init(65536.0)};
  PassOptions::Option<double> lossScaleGrowthFactor{
      *this, "loss-scale-growth-factor",
      llvm::cl::desc("Dynamic loss scale: growth factor"), llvm::cl::init(2.0)};
  PassOptions::Option<double> lossScaleBackoffFactor{
      *this, "loss-scale-backoff-factor",
      llvm::cl::desc("Dynamic loss scale: backoff factor"),
      llvm::cl::init(0.5)};
  PassOptions::Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("Dynamic loss scale: clean steps before growth"),
      llvm::cl::init(2000)};
  // Overlap of the bucket all-reduces with the final region.
  PassOptions::Option<bool> overlapAllReduce{
      *this, "overlap-all-reduce",
      llvm::cl::desc("Start each bucket's all-reduce as soon as the final "
                     "region has finished it, wait only where it is read"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> testSkipGlobalNormalizer{
      *this, "test-skip-global-normalizer",
      llvm::cl::desc("Test only: a deliberately wrong normalizer"),
      llvm::cl::init(false)};

  /// The options of each pass, copied from these.
  PrepareStepPassOptions getPrepareStepOptions() const;
  MicroBatchPassOptions getMicroBatchOptions() const;
  FuseAccumulationPassOptions getFuseAccumulationOptions() const;
  SinkAllReducePassOptions getSinkAllReduceOptions() const;
  LossScalePassOptions getLossScaleOptions() const;
};

/// Adds gacc-prepare-step, gacc-micro-batch (which runs the checks of
/// gacc-verify-step),
/// gacc-fuse-accumulation, gacc-sink-all-reduce and (unless loss-scale=none)
/// gacc-loss-scale to `pm`.
void buildGaccPipeline(OpPassManager &pm, const GaccPipelineOptions &options);

/// Registers `gacc-pipeline`.
void registerGaccPipeline();

#define GEN_PASS_REGISTRATION
#include "gacc/Transforms/Passes.h.inc"

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_PASSES_H
