//===- CudaInternal.h - Shared declarations of libgaccrt_cuda -------------===//
//
// The pieces of the CUDA backend that its files share: the driver API loaded
// at run time (CudaDriver.cpp), the backend state and its stream discipline
// (CudaRuntime.cpp), and the hooks of the NCCL collective backend
// (NcclBackend.cpp) that the waits call. The driver is reached only through
// `gCuda`, never by linking libcuda, so the library loads without a driver.
//
//===----------------------------------------------------------------------===//

#ifndef GACCRT_LIB_CUDAINTERNAL_H
#define GACCRT_LIB_CUDAINTERNAL_H

#include <cublas_v2.h>
#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace gaccrt {

//===----------------------------------------------------------------------===//
// The driver API
//===----------------------------------------------------------------------===//

/// The driver functions the backend uses. cuda.h maps several names to
/// versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the table uses the mapped
/// names both for its members and for the symbols it looks up, so a call
/// `gCuda.cuMemAlloc(...)` is exactly the call a program linked against
/// libcuda would make.
#define GACCRT_CUDA_DRIVER_FUNCTIONS(REQUIRED, OPTIONAL)                       \
  REQUIRED(cuInit)                                                             \
  REQUIRED(cuDriverGetVersion)                                                 \
  REQUIRED(cuGetErrorName)                                                     \
  REQUIRED(cuGetErrorString)                                                   \
  REQUIRED(cuDeviceGetCount)                                                   \
  REQUIRED(cuDeviceGet)                                                        \
  REQUIRED(cuDeviceGetName)                                                    \
  REQUIRED(cuDeviceGetAttribute)                                               \
  REQUIRED(cuDevicePrimaryCtxRetain)                                           \
  REQUIRED(cuDevicePrimaryCtxRelease)                                          \
  REQUIRED(cuCtxSetCurrent)                                                    \
  REQUIRED(cuStreamCreate)                                                     \
  REQUIRED(cuStreamDestroy)                                                    \
  REQUIRED(cuStreamSynchronize)                                                \
  REQUIRED(cuStreamQuery)                                                      \
  REQUIRED(cuStreamWaitEvent)                                                  \
  REQUIRED(cuEventCreate)                                                      \
  REQUIRED(cuEventDestroy)                                                     \
  REQUIRED(cuEventRecord)                                                      \
  REQUIRED(cuEventSynchronize)                                                 \
  REQUIRED(cuEventQuery)                                                       \
  REQUIRED(cuEventElapsedTime)                                                 \
  REQUIRED(cuMemAlloc)                                                         \
  REQUIRED(cuMemAllocManaged)                                                  \
  REQUIRED(cuMemFree)                                                          \
  REQUIRED(cuMemAllocAsync)                                                    \
  REQUIRED(cuMemFreeAsync)                                                     \
  REQUIRED(cuMemGetInfo)                                                       \
  REQUIRED(cuMemcpyAsync)                                                      \
  REQUIRED(cuMemsetD8Async)                                                    \
  REQUIRED(cuMemsetD16Async)                                                   \
  REQUIRED(cuMemsetD32Async)                                                   \
  REQUIRED(cuPointerGetAttribute)                                              \
  REQUIRED(cuModuleLoadDataEx)                                                 \
  REQUIRED(cuModuleUnload)                                                     \
  REQUIRED(cuModuleGetFunction)                                                \
  REQUIRED(cuFuncSetAttribute)                                                 \
  REQUIRED(cuLaunchKernel)                                                     \
  OPTIONAL(cuFuncGetName)

struct DriverApi {
#define GACCRT_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  GACCRT_CUDA_DRIVER_FUNCTIONS(GACCRT_DRIVER_MEMBER, GACCRT_DRIVER_MEMBER)
#undef GACCRT_DRIVER_MEMBER
};

/// Filled by loadDriver; all members are null before.
extern DriverApi gCuda;

/// Loads the driver library (GACCRT_CUDA_DRIVER, else libcuda.so.1) and
/// resolves every required function. Returns false with the reason in
/// `error`. Idempotent; the library stays loaded.
bool loadDriver(std::string &error);

/// "CUDA_ERROR_X (the driver's text)" for a driver status.
std::string cudaResultText(CUresult result);
/// "CUBLAS_STATUS_X (cuBLAS's text)".
std::string cublasStatusText(cublasStatus_t status);

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// gaccrt_abort(message): the message on stderr, then every rank aborts.
[[noreturn]] void cudaFatal(const std::string &message);

/// Aborts with "<caller>: <call> failed: <status>" unless `result` is success.
inline void checkCu(CUresult result, const char *call, const char *caller) {
  if (result != CUDA_SUCCESS)
    cudaFatal(std::string(caller) + ": " + call +
              " failed: " + cudaResultText(result));
}
inline void checkBlas(cublasStatus_t status, const char *call,
                      const char *caller) {
  if (status != CUBLAS_STATUS_SUCCESS)
    cudaFatal(std::string(caller) + ": " + call +
              " failed: " + cublasStatusText(status));
}

//===----------------------------------------------------------------------===//
// The backend state
//===----------------------------------------------------------------------===//

/// A GEMM or collective whose device times become a trace event once its
/// events have completed.
struct PendingTraceEvent {
  std::string name;
  const char *category;
  std::string argsJson;
  CUevent start;
  CUevent end;
  /// Trace track (tid): 0 for the compute stream, 1 ("communication") for
  /// the communication stream's collectives.
  int track = 0;
};

/// A collective of gaccrt_cuda_all_reduce_start (or _reduce_scatter_start,
/// _all_gather_start) not yet waited for: the buffer its wait names, the
/// event recorded on the communication stream after it, the other buffer it
/// uses (the send buffer of a reduce-scatter or all-gather) and what it is.
struct StartedAllReduce {
  uintptr_t data;
  int64_t bytes;
  int64_t bucket;
  CUevent done;
  uintptr_t other = 0;
  int64_t otherBytes = 0;
  const char *what = "all-reduce";
};

struct CudaState {
  std::mutex initMutex;
  bool attempted = false;   // an initialization was tried since finalize
  bool ready = false;       // ... and succeeded
  std::string unavailable;  // why it failed
  int requestedDevice = -1; // mgpuSetDefaultDevice, for lazy initialization
  uint64_t generation = 0;  // incremented by every successful init

  int device = -1;
  CUdevice cuDevice = 0;
  CUcontext context = nullptr;
  CUstream compute = nullptr;
  CUstream comm = nullptr;
  cublasHandle_t blas = nullptr;
  int maxSharedOptin = 0; // bytes of dynamic shared memory a kernel may opt in

  /// Compute-stream work must wait for the blocking all-reduces
  /// (gaccrt_cuda_all_reduce) issued since the compute stream last waited
  /// for commDone.
  bool collectivesPending = false;
  CUevent computeReady = nullptr; // recorded on compute, waited on by comm
  CUevent commDone = nullptr;     // recorded on comm after each blocking one

  /// Started all-reduces (gaccrt_cuda_all_reduce_start) by handle; the
  /// compute stream waits for one only in gaccrt_cuda_all_reduce_wait (or
  /// when its buffer is freed).
  std::map<int64_t, StartedAllReduce> started;
  int64_t lastStartedHandle = 0;
  /// Events of finished waits, reused by the next starts (created once).
  std::vector<CUevent> doneEvents;

  CUevent mark = nullptr;
  CUevent syncEnd = nullptr; // end event of gaccrt_cuda_elapsed_ms_since_mark

  /// Device times of trace events: an event recorded when the host clock read
  /// `epochUs` (re-anchored at every synchronization).
  CUevent epoch = nullptr;
  double epochUs = 0.0;
  std::vector<PendingTraceEvent> pendingTrace;
  std::vector<CUevent> eventPool; // timing events for reuse

  std::mutex memoryMutex;
  /// Live allocations: pointer -> requested and pooled (rounded) sizes.
  struct Allocation {
    int64_t bytes;
    int64_t capacity; // 0 for managed memory, which is not pooled
  };
  std::unordered_map<uintptr_t, Allocation> allocations;
  int64_t currentBytes = 0;
  int64_t peakBytes = 0;
  /// Freed device blocks by capacity, reused by later allocations of the
  /// same rounded size (a step allocates the same sizes every time). All
  /// device work is ordered on the compute stream, so a block freed there
  /// may be handed out again at once; cuMemFree (which waits for the
  /// device) runs only at finalize or when an allocation fails.
  std::unordered_map<int64_t, std::vector<CUdeviceptr>> pool;
  int64_t pooledBytes = 0;

  /// Counts of device work since gaccrt_cuda_reset_counts.
  int64_t launchCount = 0;
  int64_t syncCount = 0;
  int64_t allocationCount = 0;
  int64_t deviceAllocationCount = 0;
};

/// Returns the pooled blocks to the driver (cuMemFree); the memory mutex is
/// held and the context current.
void releasePool(CudaState &state);

CudaState &cudaState();

/// The initialized backend with its context current on this thread; on first
/// use initializes it (without printing) and aborts with
/// "<caller>: CUDA is not available: <reason>" when that fails.
CudaState &requireCuda(const char *caller);

/// The compute stream, after making it wait for pending blocking
/// all-reduces: the stream to use for any work on it. Started all-reduces
/// are waited for by gaccrt_cuda_all_reduce_wait only.
CUstream computeStream(const char *caller);

/// Makes the compute stream wait (on the device) for the started
/// all-reduces whose buffer overlaps [data, data + bytes): a freed block may
/// be handed out again at once.
void orderAfterStartedAllReduces(CudaState &state, uintptr_t data,
                                 int64_t bytes, const char *caller);

/// Waits for `stream` (or `event`) on the host. While an NCCL communicator
/// exists this polls, checking NCCL's asynchronous errors and the timeout.
void waitForStream(CUstream stream, const char *caller);
void waitForEvent(CUevent event, const char *caller);

/// Timing events for device-side trace events.
CUevent acquireTimingEvent(const char *caller);

/// An event from `pool` (returned there after use), else a new one created
/// with `flags`: steps after the first create no event.
CUevent acquirePooledEvent(std::vector<CUevent> &pool, unsigned flags,
                           const char *caller);
void addPendingTraceEvent(PendingTraceEvent event, const char *caller);
/// Adds the pending trace events that have completed to the trace; call it
/// right after waiting for the compute stream (it may re-anchor the epoch).
void flushTraceEvents(const char *caller);

/// Accounted allocation and free (gaccrt_cuda_alloc, mgpuMemAlloc).
void *accountedAlloc(int64_t bytes, bool managed, const char *caller);
void accountedFree(void *ptr, const char *caller);

//===----------------------------------------------------------------------===//
// Hooks of the collective backend (NcclBackend.cpp)
//===----------------------------------------------------------------------===//

/// True while an NCCL communicator exists (waits must then poll).
bool collectiveCommunicatorActive();
/// The seconds an NCCL call or a host wait while a communicator exists may
/// take: --collective-timeout (gaccrt_set_collective_timeout) when set, else
/// GACCRT_NCCL_TIMEOUT_S, else 600; 0 = no limit.
double collectiveTimeoutSecondsCuda();
/// A host wait took longer than `timeout` seconds while a communicator
/// exists: aborts the communicator and all ranks, naming the last NCCL
/// collective of this rank and the ranks that may not have joined it.
[[noreturn]] void collectiveWaitTimedOut(const char *caller, double timeout);
/// Aborts the communicator and all ranks if NCCL reported an asynchronous
/// error.
void checkCollectiveErrors(const char *caller);
/// Aborts the communicator and all ranks with `message`.
[[noreturn]] void abortCollectives(const std::string &message);
/// Destroys the communicator (the streams are idle).
void finalizeCollectives();

} // namespace gaccrt

#endif // GACCRT_LIB_CUDAINTERNAL_H
