//===- MlirGpuWrappers.cpp - The MLIR GPU runtime ABI on gaccrt -----------===//
//
// The mgpu* functions that MLIR's gpu-to-llvm lowering (LLVM 22) calls from
// host code, with the signatures of upstream's CudaRuntimeWrappers.cpp
// (which Debian's MLIR does not ship). They run on gaccrt's CUDA backend
// instead of a context of their own: the streams they hand out are the
// compute stream, so compiled kernels are ordered with cuBLAS GEMMs, gaccrt's
// copies and the all-reduces; device allocations are accounted; and every
// failing driver call aborts with a message naming it, where upstream prints
// and carries on. GACCRT_CUDA_SYNC_LAUNCHES=1 waits after every launch so a
// faulting kernel is reported by name.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt_cuda.h"

#include "CudaInternal.h"

#include <climits>
#include <cstdlib>
#include <string>

using namespace gaccrt;

namespace {

CUmodule asModule(void *module) { return static_cast<CUmodule>(module); }
CUfunction asFunction(void *function) {
  return static_cast<CUfunction>(function);
}
CUevent asEvent(void *event) { return static_cast<CUevent>(event); }

/// A stream of the lowered code: NULL and the compute stream mean the
/// compute stream (after pending all-reduces); other streams pass through.
CUstream resolveStream(void *stream, const char *caller) {
  CudaState &state = requireCuda(caller);
  if (!stream || static_cast<CUstream>(stream) == state.compute)
    return computeStream(caller);
  return static_cast<CUstream>(stream);
}

bool syncLaunches() {
  static const bool enabled = [] {
    const char *text = std::getenv("GACCRT_CUDA_SYNC_LAUNCHES");
    return text && *text && std::string(text) != "0";
  }();
  return enabled;
}

std::string kernelName(CUfunction function) {
  const char *name = nullptr;
  if (gCuda.cuFuncGetName &&
      gCuda.cuFuncGetName(&name, function) == CUDA_SUCCESS && name)
    return std::string("'") + name + "'";
  return "(unnamed)";
}

/// Loads a module with the driver's JIT options; the JIT's error log is
/// part of the message when loading fails.
void *loadModule(void *data, int optLevel, const char *caller) {
  requireCuda(caller);
  if (!data)
    cudaFatal(std::string(caller) + ": NULL module image");
  char errorLog[8192] = {0};
  CUjit_option options[3] = {CU_JIT_ERROR_LOG_BUFFER,
                             CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                             CU_JIT_OPTIMIZATION_LEVEL};
  void *values[3] = {errorLog,
                     reinterpret_cast<void *>(uintptr_t(sizeof(errorLog))),
                     reinterpret_cast<void *>(uintptr_t(optLevel))};
  unsigned int optionCount = optLevel >= 0 ? 3 : 2;
  CUmodule module = nullptr;
  CUresult result =
      gCuda.cuModuleLoadDataEx(&module, data, optionCount, options, values);
  if (result != CUDA_SUCCESS)
    cudaFatal(
        std::string(caller) +
        ": cuModuleLoadDataEx failed: " + cudaResultText(result) +
        (errorLog[0] ? std::string("; JIT log:\n") + errorLog : std::string()));
  return module;
}

} // namespace

void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  (void)gpuBlobSize; // the driver reads the size from the image itself
  return loadModule(data, /*optLevel=*/-1, "mgpuModuleLoad");
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  if (optLevel < 0 || optLevel > 4)
    cudaFatal("mgpuModuleLoadJIT: optimization level " +
              std::to_string(optLevel) + " is not in 0..4");
  return loadModule(data, optLevel, "mgpuModuleLoadJIT");
}

void mgpuModuleUnload(void *module) {
  const char *caller = "mgpuModuleUnload";
  // A compiled step unloads its module when it is destroyed; after
  // gaccrt_cuda_finalize the context, and the module with it, is gone, and
  // unloading must not bring CUDA (and cuBLAS) back up.
  if (!gaccrt_cuda_available())
    return;
  requireCuda(caller);
  checkCu(gCuda.cuModuleUnload(asModule(module)), "cuModuleUnload", caller);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  const char *caller = "mgpuModuleGetFunction";
  requireCuda(caller);
  CUfunction function = nullptr;
  CUresult result =
      gCuda.cuModuleGetFunction(&function, asModule(module), name ? name : "");
  if (result != CUDA_SUCCESS)
    cudaFatal(std::string(caller) + ": cuModuleGetFunction of kernel '" +
              (name ? name : "") + "' failed: " + cudaResultText(result));
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount) {
  (void)paramsCount;
  const char *caller = "mgpuLaunchKernel";
  CudaState &state = requireCuda(caller);
  CUfunction kernel = asFunction(function);
  auto configuration = [&] {
    return "kernel " + kernelName(kernel) + " (grid " + std::to_string(gridX) +
           "x" + std::to_string(gridY) + "x" + std::to_string(gridZ) +
           ", block " + std::to_string(blockX) + "x" + std::to_string(blockY) +
           "x" + std::to_string(blockZ) + ", " + std::to_string(smem) +
           " bytes of dynamic shared memory)";
  };
  for (intptr_t dimension : {gridX, gridY, gridZ, blockX, blockY, blockZ})
    if (dimension <= 0 || static_cast<uint64_t>(dimension) > UINT_MAX)
      cudaFatal(std::string(caller) + ": invalid launch dimensions for " +
                configuration());
  if (smem < 0 || smem > state.maxSharedOptin)
    cudaFatal(std::string(caller) + ": " + configuration() +
              " requests more dynamic shared memory than the device allows (" +
              std::to_string(state.maxSharedOptin) + " bytes)");
  if (smem > 48 * 1024)
    checkCu(gCuda.cuFuncSetAttribute(
                kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
            "cuFuncSetAttribute", caller);
  CUstream onStream = resolveStream(stream, caller);
  ++state.launchCount;
  CUresult result = gCuda.cuLaunchKernel(
      kernel, static_cast<unsigned>(gridX), static_cast<unsigned>(gridY),
      static_cast<unsigned>(gridZ), static_cast<unsigned>(blockX),
      static_cast<unsigned>(blockY), static_cast<unsigned>(blockZ),
      static_cast<unsigned>(smem), onStream, params, extra);
  if (result != CUDA_SUCCESS)
    cudaFatal(std::string(caller) + ": cuLaunchKernel of " + configuration() +
              " failed: " + cudaResultText(result));
  if (syncLaunches()) {
    CUresult done = gCuda.cuStreamSynchronize(onStream);
    if (done != CUDA_SUCCESS)
      cudaFatal(std::string(caller) + ": " + configuration() +
                " failed on the device: " + cudaResultText(done));
  }
}

void *mgpuStreamCreate(void) { return requireCuda("mgpuStreamCreate").compute; }

void mgpuStreamDestroy(void *stream) {
  const char *caller = "mgpuStreamDestroy";
  CudaState &state = requireCuda(caller);
  if (!stream || static_cast<CUstream>(stream) == state.compute)
    return;
  checkCu(gCuda.cuStreamDestroy(static_cast<CUstream>(stream)),
          "cuStreamDestroy", caller);
}

void mgpuStreamSynchronize(void *stream) {
  const char *caller = "mgpuStreamSynchronize";
  CUstream onStream = resolveStream(stream, caller);
  waitForStream(onStream, caller);
  // The compiled step ends by waiting here: its device trace events are
  // complete now.
  CudaState &state = cudaState();
  if (onStream == state.compute && !state.pendingTrace.empty())
    flushTraceEvents(caller);
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  const char *caller = "mgpuStreamWaitEvent";
  checkCu(
      gCuda.cuStreamWaitEvent(resolveStream(stream, caller), asEvent(event), 0),
      "cuStreamWaitEvent", caller);
}

void *mgpuEventCreate(void) {
  const char *caller = "mgpuEventCreate";
  requireCuda(caller);
  CUevent event = nullptr;
  checkCu(gCuda.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate",
          caller);
  return event;
}

void mgpuEventDestroy(void *event) {
  const char *caller = "mgpuEventDestroy";
  requireCuda(caller);
  checkCu(gCuda.cuEventDestroy(asEvent(event)), "cuEventDestroy", caller);
}

void mgpuEventSynchronize(void *event) {
  const char *caller = "mgpuEventSynchronize";
  requireCuda(caller);
  waitForEvent(asEvent(event), caller);
}

void mgpuEventRecord(void *event, void *stream) {
  const char *caller = "mgpuEventRecord";
  checkCu(gCuda.cuEventRecord(asEvent(event), resolveStream(stream, caller)),
          "cuEventRecord", caller);
}

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared) {
  (void)stream; // as upstream: a synchronous allocation
  if (sizeBytes > static_cast<uint64_t>(INT64_MAX))
    cudaFatal("mgpuMemAlloc: " + std::to_string(sizeBytes) +
              " bytes is too large");
  return accountedAlloc(static_cast<int64_t>(sizeBytes), isHostShared,
                        "mgpuMemAlloc");
}

void mgpuMemFree(void *ptr, void *stream) {
  (void)stream;
  accountedFree(ptr, "mgpuMemFree");
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  const char *caller = "mgpuMemcpy";
  CUstream onStream = resolveStream(stream, caller);
  if (sizeBytes == 0)
    return;
  checkCu(gCuda.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                              reinterpret_cast<CUdeviceptr>(src), sizeBytes,
                              onStream),
          "cuMemcpyAsync", caller);
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  const char *caller = "mgpuMemset32";
  CUstream onStream = resolveStream(stream, caller);
  if (count == 0)
    return;
  checkCu(gCuda.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                 count, onStream),
          "cuMemsetD32Async", caller);
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  const char *caller = "mgpuMemset16";
  CUstream onStream = resolveStream(stream, caller);
  if (count == 0)
    return;
  checkCu(gCuda.cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                 count, onStream),
          "cuMemsetD16Async", caller);
}

void mgpuSetDefaultDevice(int32_t device) {
  CudaState &state = cudaState();
  std::lock_guard<std::mutex> lock(state.initMutex);
  if (state.ready && device != state.device)
    cudaFatal("mgpuSetDefaultDevice(" + std::to_string(device) +
              "): the CUDA backend already runs on device " +
              std::to_string(state.device) +
              "; choose the device before any other CUDA call");
  state.requestedDevice = device;
}

namespace {
/// Every function that lowered host code calls (gaccrt_cuda_symbols.def) is
/// declared by gaccrt_cuda.h and defined in this library.
[[maybe_unused]] void *const kHostSymbols[] = {
#define GACCRT_CUDA_HOST_SYMBOL(NAME) reinterpret_cast<void *>(&NAME),
#include "gaccrt/gaccrt_cuda_symbols.def"
};
} // namespace
