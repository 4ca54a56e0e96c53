//===- LowerToCUDA.cpp - the gacc-lower-to-cuda pipeline --------*- C++ -*-===//
//
// Lowers a gradient-accumulated step (the output of gacc-pipeline) for an
// NVIDIA GPU:
//   the bufferized step of the CPU path (in-place accumulators in buckets;
//   gacc.scatter_add as one parallel loop of atomic adds, which becomes a
//   kernel),
//   f32 GEMMs as cuBLAS calls (gaccrt_cuda_sgemm: beta = 0 in the first
//   region, 1 when accumulating), deallocation after the last use, device
//   allocations and copies, the sunk collectives as NCCL all-reduces per
//   bucket (gaccrt_cuda_all_reduce; a bucket marked gacc.overlap started
//   after the final region's last write into it and waited for before its
//   first read: gaccrt_cuda_all_reduce_start/_wait), the remaining linalg work
//   as parallel loops tiled into thread blocks and outlined as GPU kernels, the
//   kernels through NVVM to PTX for the chip (LLVM's NVPTX back end; ptxas
//   assembles it), and the host code to the LLVM dialect calling the MLIR GPU
//   runtime ABI (mgpu*), which gaccrt_cuda implements.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Pipelines/Pipelines.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <cstdlib>
#include <string>

using namespace mlir;
using namespace mlir::gacc;

LowerToCUDAConfig LowerToCUDAOptions::getConfig() const {
  LowerToCUDAConfig config;
#define GACC_LOWER_TO_CUDA_OPTION(NAME, ...) config.NAME = NAME;
#define GACC_LOWER_TO_CUDA_LIST_OPTION(NAME, ...)                              \
  config.NAME.assign(NAME.begin(), NAME.end());
#include "gacc/Pipelines/LoweringOptions.def"
  return config;
}

/// The CUDA toolkit: the option, else $CUDA_HOME, else /usr/local/cuda.
static std::string getCudaPath(const LowerToCUDAConfig &options) {
  if (!options.cudaPath.empty())
    return options.cudaPath;
  if (const char *home = std::getenv("CUDA_HOME"))
    return home;
  return "/usr/local/cuda";
}

/// The libdevice bitcode of the toolkit.
static std::string getLibdevicePath(const LowerToCUDAConfig &options) {
  return getCudaPath(options) + "/nvvm/libdevice/libdevice.10.bc";
}

LogicalResult mlir::gacc::verifyLowerToCUDAOptions(
    const LowerToCUDAConfig &options,
    function_ref<void(const Twine &)> emitError) {
  // sm_<major><minor> with an optional feature suffix (sm_90a, sm_100f).
  static const llvm::Regex chip("^sm_([0-9]+)[af]?$");
  SmallVector<StringRef> match;
  unsigned version = 0;
  if (!chip.match(options.chip, &match) || match[1].getAsInteger(10, version) ||
      version < 30) {
    emitError("gacc-lower-to-cuda: option chip='" + options.chip +
              "' is not an NVIDIA GPU architecture; expected sm_<version> "
              "such as sm_80 or sm_90");
    return failure();
  }
  static const llvm::Regex features(
      "^([+-][A-Za-z0-9_.]+(,[+-][A-Za-z0-9_.]+)*)?$");
  if (!features.match(options.features)) {
    emitError("gacc-lower-to-cuda: option features='" + options.features +
              "' is not a list of +feature/-feature (e.g. +ptx80)");
    return failure();
  }
  if (options.format != "isa" && options.format != "bin") {
    emitError("gacc-lower-to-cuda: option format='" + options.format +
              "' is not a kernel format; expected isa (PTX) or bin (cubin)");
    return failure();
  }
  if (options.tileSizes.size() > 3) {
    emitError("gacc-lower-to-cuda: option tile-sizes has " +
              Twine(options.tileSizes.size()) +
              " entries; a thread block has at most 3 dimensions");
    return failure();
  }
  int64_t threads = 1;
  for (int64_t size : options.tileSizes) {
    if (size < 1) {
      emitError("gacc-lower-to-cuda: option tile-sizes has the entry " +
                Twine(size) + "; every tile size must be positive");
      return failure();
    }
    threads *= std::min<int64_t>(size, 1 << 20);
    if (threads > 1024) {
      emitError("gacc-lower-to-cuda: option tile-sizes asks for more than "
                "1024 threads per block (the CUDA limit); use smaller tile "
                "sizes such as 32,8");
      return failure();
    }
  }
  if (!options.cudaPath.empty() &&
      !llvm::sys::fs::exists(getLibdevicePath(options))) {
    emitError("gacc-lower-to-cuda: option cuda-path='" + options.cudaPath +
              "' is not a CUDA toolkit: '" + getLibdevicePath(options) +
              "' does not exist");
    return failure();
  }
  return success();
}

void mlir::gacc::buildLowerToCUDAPipeline(OpPassManager &pm,
                                          const LowerToCUDAConfig &options) {
  // Gather indices are clamped on the GPU, and integer divisions that
  // could trap divide by 1 there, not reported (kernels cannot call the host
  // runtime).
  // Regions of one size that follow each other share one loop body, as on
  // the CPU (kernels and compile time independent of m); buckets marked
  // gacc.overlap start in the final region, in the loop's last iteration
  // (gacc-overlap-all-reduce; gacc-gpu-prepare makes them NCCL calls on the
  // communication stream). Regions that do not follow each other (sizes
  // such as 3,1,3,1) stay inline: a shared function would take the scalars
  // the regions use from outside (a token count computed on the device) as
  // host arguments.
  buildBufferizedStepPipeline(pm, options.traceRegions,
                              /*reportIndexErrors=*/false,
                              options.outlineMicroBatches,
                              /*overlapAllReduce=*/true,
                              /*outlineFunctions=*/false,
                              /*atomicScatterAdd=*/true);
  MatmulToBlasPassOptions blas;
  blas.callee = "gaccrt_cuda_sgemm";
  // A host loop of cuBLAS calls would not become kernels; batch_matmul stays
  // a kernel of its own.
  blas.splitBatches = false;
  pm.addPass(createMatmulToBlasPass(blas));
  pm.addPass(createDeallocateBuffersPass());
  // Strided copies (out of bucket slices, into insert_slice views) become
  // kernels; gpu.memcpy only lowers for identity layouts.
  pm.addPass(createStridedCopiesToLinalgPass());
  pm.addPass(createGpuPreparePass());

  // Kernels: parallel loops (parallel dimensions outermost, innermost
  // first), tiled into blocks of threads, mapped, outlined into one module.
  pm.addPass(createGpuLoopOrderPass());
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  // Reductions in too few threads: split into chunks combined atomically.
  pm.addPass(createGpuSplitReductionsPass());
  pm.addPass(createGpuSerialKernelsPass());
  SmallVector<int64_t> tileSizes(options.tileSizes.begin(),
                                 options.tileSizes.end());
  if (tileSizes.empty())
    tileSizes = {32, 8};
  // Guards instead of min bounds: launch sizes stay constant.
  pm.addPass(createParallelLoopTilingPass(tileSizes, /*noMinMaxBounds=*/true));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createGpuMergeModulesPass());
  if (options.kernelsOnly)
    return;

  // As upstream's gpu-lower-to-nvvm-pipeline, with the host allocations of
  // the CPU path (the runtime's accounted allocator is not used: buffers are
  // gpu.alloc'ed).
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  // As on the CPU: maximumf/minimumf keep IEEE signed zeros.
  pm.addPass(createExpandMathOpsPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = 3;
  // Math functions in kernels call libdevice (__nv_expf, ...).
  std::string libdevice = getLibdevicePath(options);
  bool haveLibdevice = llvm::sys::fs::exists(libdevice);
  if (haveLibdevice)
    target.linkLibs.push_back(libdevice);
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addNestedPass<gpu::GPUModuleOp>(LLVM::createNVVMOptimizeForTargetPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // Without libdevice, kernels that call its math functions would become PTX
  // with unresolved calls: an error instead.
  RequireLibdevicePassOptions require;
  require.libdevice = haveLibdevice ? libdevice : "";
  require.searched = libdevice;
  pm.addPass(createRequireLibdevicePass(require));

  // One in-order stream per step (the runtime's compute stream, which cuBLAS
  // and NCCL calls use too), waited for once before returning; after the
  // last canonicalization, which would fold that wait away.
  pm.addPass(createGpuInOrderStreamPass());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = getCudaPath(options);
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::gacc::registerLowerToCUDAPipeline() {
  // As PassPipelineRegistration, with the option values checked before any
  // upstream pass sees them.
  registerPassPipeline(
      "gacc-lower-to-cuda",
      "Lower a gradient-accumulated step for an NVIDIA GPU: cuBLAS GEMMs, "
      "PTX kernels, NCCL collectives, host code in LLVM",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        LowerToCUDAOptions parsed;
        if (failed(parsed.parseFromString(text)))
          return failure();
        LowerToCUDAConfig options = parsed.getConfig();
        bool ok = succeeded(
            verifyLowerToCUDAOptions(options, [&](const Twine &message) {
              (void)errorHandler(message);
            }));
        if (!ok)
          return failure();
        buildLowerToCUDAPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const ::mlir::detail::PassOptions &)> optHandler) {
        optHandler(LowerToCUDAOptions());
      });
}
