//===- Pipelines.h - gacc's pass pipelines ----------------------*- C++ -*-===//
//
// The pipelines built from gacc's and upstream passes, as upstream's
// mlir/Dialect/GPU/Pipelines: gacc-pipeline (prepare, micro-batch, fuse the
// accumulation, sink the all-reduce, scale the loss) with its options, and
// the CPU and CUDA lowerings of a gradient-accumulated step
// (gacc-lower-to-cpu, gacc-lower-to-cuda). Library GaccPipelines
// (libgacc-pipelines.so, target Gacc::GaccPipelines).
//
//===----------------------------------------------------------------------===//

#ifndef GACC_PIPELINES_PIPELINES_H
#define GACC_PIPELINES_PIPELINES_H

#include "gacc/Pipelines/PipelineOptions.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::gacc {

//===----------------------------------------------------------------------===//
// gacc-pipeline
//===----------------------------------------------------------------------===//

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
/// gacc-verify-step), gacc-fuse-accumulation, gacc-sink-all-reduce and
/// (unless loss-scale=none) gacc-loss-scale to `pm`.
void buildGaccPipeline(OpPassManager &pm, const GaccPipelineConfig &config);
void buildGaccPipeline(OpPassManager &pm, const GaccPipelineOptions &options);

/// Registers `gacc-pipeline`.
void registerGaccPipeline();

//===----------------------------------------------------------------------===//
// gacc-lower-to-cpu and gacc-lower-to-cuda
//===----------------------------------------------------------------------===//

/// Options of `gacc-lower-to-cpu`, generated from LoweringOptions.def.
struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
#define GACC_LOWER_TO_CPU_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION)       \
  PassOptions::Option<TYPE> NAME{*this, FLAG, llvm::cl::desc(DESCRIPTION),     \
                                 llvm::cl::init(DEFAULT)};
#include "gacc/Pipelines/LoweringOptions.def"

  /// The option values as a plain struct.
  LowerToCPUConfig getConfig() const;
};

/// Options of `gacc-lower-to-cuda`, generated from LoweringOptions.def.
struct LowerToCUDAOptions : public PassPipelineOptions<LowerToCUDAOptions> {
#define GACC_LOWER_TO_CUDA_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION)      \
  PassOptions::Option<TYPE> NAME{*this, FLAG, llvm::cl::desc(DESCRIPTION),     \
                                 llvm::cl::init(DEFAULT)};
#define GACC_LOWER_TO_CUDA_LIST_OPTION(NAME, TYPE, FLAG, DESCRIPTION)          \
  PassOptions::ListOption<TYPE> NAME{*this, FLAG, llvm::cl::desc(DESCRIPTION)};
#include "gacc/Pipelines/LoweringOptions.def"

  /// The option values as a plain struct.
  LowerToCUDAConfig getConfig() const;
};

/// Adds the common first half of both lowerings: regions inlined, tensor
/// work fused, one-shot bufferization with in-place accumulators in their
/// buckets, results as out-parameters. Data-dependent gather indices are
/// clamped into their tensor; with `reportIndexErrors` an out-of-range one
/// also calls gaccrt_index_error (gacc-guard-gathers). Integer divisions
/// that could trap (by zero, INT_MIN / -1) divide by 1 there instead, also
/// reported with `reportIndexErrors` (gacc-guard-divisions). With
/// `outlineRegions`, regions of one size and form share one loop or function
/// (gacc-outline-micro-batches). With `overlapAllReduce`, the runtime
/// all-reduces of buckets marked `gacc.overlap` become a start and a wait
/// (gacc-overlap-all-reduce; both runtimes have them). Without
/// `outlineFunctions`, regions of one form that do not follow each other
/// stay inline instead of sharing a private function. `gacc.scatter_add`
/// becomes loops right after bufferization: serial positions with the row
/// innermost, or with `atomicScatterAdd` (GPU kernels) one parallel loop
/// with atomic adds (gacc-lower-scatter-add).
void buildBufferizedStepPipeline(OpPassManager &pm, bool traceRegions,
                                 bool reportIndexErrors = true,
                                 bool outlineRegions = false,
                                 bool overlapAllReduce = false,
                                 bool outlineFunctions = true,
                                 bool atomicScatterAdd = false);

/// Checks the option values of `gacc-lower-to-cuda` (chip, features,
/// format, tile sizes within the CUDA block limits, an explicit cuda-path
/// with libdevice); reports the first problem through `emitError`.
LogicalResult
verifyLowerToCUDAOptions(const LowerToCUDAConfig &options,
                         function_ref<void(const Twine &)> emitError);

/// Adds the CUDA lowering of a gradient-accumulated step (after
/// gacc-pipeline): cuBLAS GEMMs, GPU kernels compiled to PTX for the chip,
/// NCCL collectives, host code in the LLVM dialect. Expects options that
/// verifyLowerToCUDAOptions accepts.
void buildLowerToCUDAPipeline(OpPassManager &pm,
                              const LowerToCUDAConfig &options);

/// Registers `gacc-lower-to-cuda`.
void registerLowerToCUDAPipeline();

/// Adds the CPU lowering of a gradient-accumulated step (after
/// gacc-pipeline) down to the LLVM dialect.
void buildLowerToCPUPipeline(OpPassManager &pm,
                             const LowerToCPUConfig &options);

/// Registers `gacc-lower-to-cpu`.
void registerLowerToCPUPipeline();

/// Registers all three pipelines (gacc-pipeline, gacc-lower-to-cpu,
/// gacc-lower-to-cuda).
void registerGaccPipelines();

} // namespace mlir::gacc

#endif // GACC_PIPELINES_PIPELINES_H
