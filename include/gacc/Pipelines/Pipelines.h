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

/// Options of `gacc-lower-to-cpu`.
struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
  PassOptions::Option<bool> blas{
      *this, "blas",
      llvm::cl::desc("Lower f32 matmuls to gaccrt_sgemm (oneDNN's matmul, "
                     "gaccrt's AVX-512 kernels or OpenBLAS, chosen at run "
                     "time)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> pairGemms{
      *this, "pair-gemms",
      llvm::cl::desc("Accumulate two micro-batches' weight gradients in one "
                     "GEMM pass over the accumulator "
                     "(gacc-pair-accumulating-gemms; with blas)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> concurrentCopies{
      *this, "concurrent-copies",
      llvm::cl::desc("With pair-gemms: run the two micro-batches of a pair "
                     "side by side where independent "
                     "(gaccrt_parallel_copies)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> lockstepCopies{
      *this, "lockstep-copies",
      llvm::cl::desc("With concurrent-copies: a second form of the copies "
                     "for when they run in turn, in lockstep, two "
                     "micro-batches' GEMMs of one large weight as one pass "
                     "over it (gaccrt_sgemm_rows_pair)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> pairedCopies{
      *this, "paired-copies",
      llvm::cl::desc("With lockstep-copies: where the loop of pairs runs "
                     "twice or more, two copies of two micro-batches each, "
                     "each in lockstep, their weight gradients one pass "
                     "over C per four micro-batches (gaccrt_sgemm_quad)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outlineCopies{
      *this, "outline-copies",
      llvm::cl::desc("With concurrent-copies: one function for the like "
                     "forms of the copies (gacc-outline-copies: less code "
                     "for LLVM to compile)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> pairAnySize{
      *this, "pair-any-size",
      llvm::cl::desc("With pair-gemms: pair (and run side by side) whatever "
                     "the sizes of the operands, as tests on small graphs "
                     "need (gacc-pair-accumulating-gemms{any-size})"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> traceRegions{
      *this, "trace-regions",
      llvm::cl::desc("Mark micro-batch regions with runtime trace calls"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outlineMicroBatches{
      *this, "outline-micro-batches",
      llvm::cl::desc("Lower regions of one size to one body: an scf.for "
                     "over them when they follow each other, else a private "
                     "function called once per region (compile time "
                     "independent of m)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> parallelLoops{
      *this, "parallel-loops",
      llvm::cl::desc("Run the outermost parallel loops on the runtime's GEMM "
                     "threads (gaccrt_parallel_for)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> bufferizeOnly{
      *this, "bufferize-only",
      llvm::cl::desc("Stop after bufferization, bucket placement and the "
                     "BLAS calls (to inspect the buffers)"),
      llvm::cl::init(false)};
};

/// Options of `gacc-lower-to-cuda`.
struct LowerToCUDAOptions : public PassPipelineOptions<LowerToCUDAOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("GPU architecture of the kernels"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX features (PTX ISA version)"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit (libdevice for math functions, ptxas for "
                     "format=bin); default $CUDA_HOME or /usr/local/cuda"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel binary format: isa (PTX, JIT-compiled by the "
                     "driver) or bin (cubin, assembled by ptxas)"),
      llvm::cl::init("isa")};
  PassOptions::ListOption<int64_t> tileSizes{
      *this, "tile-sizes",
      llvm::cl::desc("Threads per block along the innermost parallel loop "
                     "dimensions (default 32,8)")};
  PassOptions::Option<bool> traceRegions{
      *this, "trace-regions",
      llvm::cl::desc("Mark micro-batch regions with runtime trace calls"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outlineMicroBatches{
      *this, "outline-micro-batches",
      llvm::cl::desc("Lower regions of one size that follow each other to "
                     "one loop body (kernels and compile time independent "
                     "of m)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> kernelsOnly{
      *this, "kernels-only",
      llvm::cl::desc("Stop once kernels are outlined, before NVVM and LLVM "
                     "(to inspect launches and runtime calls)"),
      llvm::cl::init(false)};
};

/// Adds the common first half of both lowerings: regions inlined, tensor
/// work fused, one-shot bufferization with in-place accumulators in their
/// buckets, results as out-parameters. Data-dependent gather indices are
/// clamped into their tensor; with `reportIndexErrors` an out-of-range one
/// also calls gaccrt_index_error (gacc-guard-gathers). With `outlineRegions`,
/// regions of one size and form share one loop or function
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
verifyLowerToCUDAOptions(const LowerToCUDAOptions &options,
                         function_ref<void(const Twine &)> emitError);

/// Adds the CUDA lowering of a gradient-accumulated step (after
/// gacc-pipeline): cuBLAS GEMMs, GPU kernels compiled to PTX for the chip,
/// NCCL collectives, host code in the LLVM dialect. Expects options that
/// verifyLowerToCUDAOptions accepts.
void buildLowerToCUDAPipeline(OpPassManager &pm,
                              const LowerToCUDAOptions &options);

/// Registers `gacc-lower-to-cuda`.
void registerLowerToCUDAPipeline();

/// Adds the CPU lowering of a gradient-accumulated step (after
/// gacc-pipeline) down to the LLVM dialect.
void buildLowerToCPUPipeline(OpPassManager &pm,
                             const LowerToCPUOptions &options);

/// Registers `gacc-lower-to-cpu`.
void registerLowerToCPUPipeline();

/// Registers all three pipelines (gacc-pipeline, gacc-lower-to-cpu,
/// gacc-lower-to-cuda).
void registerGaccPipelines();

} // namespace mlir::gacc

#endif // GACC_PIPELINES_PIPELINES_H
