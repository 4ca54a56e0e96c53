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
/* What gacc-overlap-all-reduce calls (i64 address, i64 handle). */
typedef int64_t (*AllReduceStartFn)(void *, int64_t, int32_t, int32_t, int64_t);
typedef void (*AllReduceWaitFn)(int64_t, void *);

int gaccrtCudaTestCallFromC(void) {
  ModuleLoadFn load = mgpuModuleLoad;
  ModuleLoadJitFn loadJit = mgpuModuleLoadJIT;
  LaunchKernelFn launch = mgpuLaunchKernel;
  MemAllocFn alloc = mgpuMemAlloc;
  MemcpyFn copy = mgpuMemcpy;
  AllReduceStartFn start = gaccrt_cuda_all_reduce_start;
  AllReduceWaitFn wait = gaccrt_cuda_all_reduce_wait;
  if (!load || !loadJit || !launch || !alloc || !copy || !start || !wait)
    return 1;
  if (gaccrt_cuda_all_reduces_in_flight() != 0)
    return 4;
  if (gaccrt_cuda_current_bytes() < 0 ||
      gaccrt_cuda_peak_bytes() < gaccrt_cuda_current_bytes())
    return 2;
  return gaccrt_cuda_available() == 0 || gaccrt_cuda_available() == 1 ? 0 : 3;
}
