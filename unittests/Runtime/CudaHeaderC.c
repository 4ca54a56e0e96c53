/*===- CudaHeaderC.c - gaccrt_cuda.h compiles as C and links from C -------===*\
 *
 * Compiled as C to keep the CUDA backend's header C-compatible (no CUDA
 * header needed); CudaTest calls it. The mgpu* prototypes are checked
 * against function pointer types of the ABI that gpu-to-llvm emits.
 *
\*===----------------------------------------------------------------------===*/

#include "gaccrt/gaccrt_cuda.h"

typedef void *(*ModuleLoadFn)(void *, size_t);
typedef void *(*ModuleLoadJitFn)(void *, int);
typedef void (*LaunchKernelFn)(void *, intptr_t, intptr_t, intptr_t, intptr_t,
                               intptr_t, intptr_t, int32_t, void *, void **,
                               void **, size_t);
typedef void *(*MemAllocFn)(uint64_t, void *, bool);
typedef void (*MemcpyFn)(void *, void *, size_t, void *);

int gaccrtCudaTestCallFromC(void) {
  ModuleLoadFn load = mgpuModuleLoad;
  ModuleLoadJitFn loadJit = mgpuModuleLoadJIT;
  LaunchKernelFn launch = mgpuLaunchKernel;
  MemAllocFn alloc = mgpuMemAlloc;
  MemcpyFn copy = mgpuMemcpy;
  if (!load || !loadJit || !launch || !alloc || !copy)
    return 1;
  if (gaccrt_cuda_current_bytes() < 0 ||
      gaccrt_cuda_peak_bytes() < gaccrt_cuda_current_bytes())
    return 2;
  return gaccrt_cuda_available() == 0 || gaccrt_cuda_available() == 1 ? 0 : 3;
}
