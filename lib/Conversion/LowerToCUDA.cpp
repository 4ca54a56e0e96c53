//===- LowerToCUDA.cpp - the gacc-lower-to-cuda pipeline --------*- C++ -*-===//
//
// Lowers a gradient-accumulated step (the output of gacc-pipeline) for an
// NVIDIA GPU:
//   the bufferized step of the CPU path (in-place accumulators in buckets),
//   f32 GEMMs as cuBLAS calls (gaccrt_cuda_sgemm: beta = 0 in the first
//   region, 1 when accumulating), deallocation after the last use, device
//   allocations and copies, the sunk collectives as NCCL all-reduces per
//   bucket (gaccrt_cuda_all_reduce), the remaining linalg work as parallel
//   loops tiled into thread blocks and outlined as GPU kernels, the kernels
//   through NVVM to PTX for the chip (LLVM's NVPTX back end; ptxas assembles
//   it), and the host code to the LLVM dialect calling the MLIR GPU runtime
//   ABI (mgpu*), which gaccrt_cuda implements.
//
//===----------------------------------------------------------------------===//

#include "gacc/Conversion/Passes.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
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

#include <cstdlib>

using namespace mlir;
using namespace mlir::gacc;

/// The CUDA toolkit: the option, else $CUDA_HOME, else /usr/local/cuda.
static std::string getCudaPath(const LowerToCUDAOptions &options) {
  if (!options.cudaPath.empty())
    return options.cudaPath;
  if (const char *home = std::getenv("CUDA_HOME"))
    return home;
  return "/usr/local/cuda";
}

void mlir::gacc::buildLowerToCUDAPipeline(OpPassManager &pm,
                                          const LowerToCUDAOptions &options) {
  buildBufferizedStepPipeline(pm, options.traceRegions);
  MatmulToBlasPassOptions blas;
  blas.callee = "gaccrt_cuda_sgemm";
  pm.addPass(createMatmulToBlasPass(blas));
  pm.addPass(createDeallocateBuffersPass());
  // Strided copies (out of bucket slices, into insert_slice views) become
  // kernels; gpu.memcpy only lowers for identity layouts.
  pm.addPass(createStridedCopiesToLinalgPass());
  pm.addPass(createGpuPreparePass());

  // Kernels: parallel loops, tiled into blocks of threads, mapped, outlined.
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createGpuSerialKernelsPass());
  SmallVector<int64_t> tileSizes(options.tileSizes.begin(),
                                 options.tileSizes.end());
  if (tileSizes.empty())
    tileSizes = {32, 8};
  // Guards instead of min bounds: launch sizes stay constant.
  pm.addPass(createParallelLoopTilingPass(tileSizes, /*noMinMaxBounds=*/true));
  pm.addPass(createGpuMapParallelLoopsPass());
  pm.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuKernelOutliningPass());
  if (options.kernelsOnly)
    return;
  // gpu-to-llvm lowers device allocations, copies and launches in their
  // async form; tokens order them, and host calls (cuBLAS, NCCL) wait.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());

  // As upstream's gpu-lower-to-nvvm-pipeline, with the host allocations of
  // the CPU path (the runtime's accounted allocator is not used: buffers are
  // gpu.alloc'ed).
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(arith::createArithExpandOpsPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = 3;
  // Math functions in kernels call libdevice (__nv_expf, ...).
  std::string libdevice =
      getCudaPath(options) + "/nvvm/libdevice/libdevice.10.bc";
  if (llvm::sys::fs::exists(libdevice))
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
  PassPipelineRegistration<LowerToCUDAOptions>(
      "gacc-lower-to-cuda",
      "Lower a gradient-accumulated step for an NVIDIA GPU: cuBLAS GEMMs, "
      "PTX kernels, NCCL collectives, host code in LLVM",
      buildLowerToCUDAPipeline);
}
