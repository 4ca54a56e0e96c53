//===- Passes.h - gacc lowering passes --------------------------*- C++ -*-===//
//
// The lowering passes, the bufferization model of shard.all_reduce, and the
// gacc-lower-to-cpu pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_CONVERSION_PASSES_H
#define GACC_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::gacc {

#define GEN_PASS_DECL
#include "gacc/Conversion/Passes.h.inc"

/// Makes `shard.all_reduce` bufferizable: in place on its operand's buffer,
/// as a call to the runtime (`gaccrt_all_reduce`).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

/// Adds the patterns of gacc-expand-narrow-floats: f32/f64 <-> bf16/f16
/// casts as integer arithmetic (round to nearest even), narrow `math.fma`
/// in f32.
void populateExpandNarrowFloatsPatterns(RewritePatternSet &patterns);

/// Options of `gacc-lower-to-cpu`.
struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
  PassOptions::Option<bool> blas{
      *this, "blas",
      llvm::cl::desc("Lower f32 matmuls to gaccrt_sgemm (OpenBLAS)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> traceRegions{
      *this, "trace-regions",
      llvm::cl::desc("Mark micro-batch regions with runtime trace calls"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outlineMicroBatches{
      *this, "outline-micro-batches",
      llvm::cl::desc("Lower regions of one size to one function called once "
                     "per region (compile time independent of m)"),
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
/// (gacc-overlap-all-reduce; the CPU runtime has them, the CUDA one does
/// not yet).
void buildBufferizedStepPipeline(OpPassManager &pm, bool traceRegions,
                                 bool reportIndexErrors = true,
                                 bool outlineRegions = false,
                                 bool overlapAllReduce = false);

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

#define GEN_PASS_REGISTRATION
#include "gacc/Conversion/Passes.h.inc"

} // namespace mlir::gacc

#endif // GACC_CONVERSION_PASSES_H
