//===- CudaRuntime.cpp - CUDA device, streams, memory and timing ----------===//
//
// The core of libgaccrt_cuda: initialization (driver, device choice, primary
// context, the compute and communication streams, the cuBLAS handle), the
// stream discipline (compute-stream work waits for pending all-reduces),
// host waits that poll NCCL's asynchronous errors, accounted device memory,
// copies, the timing mark, and the device-side trace events, whose device
// times are turned into host-clock times when they are resolved at a
// synchronization.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt_cuda.h"

#include "CollectiveTimeout.h"
#include "CudaInternal.h"
#include "Internal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace gaccrt {

namespace {

/// The trace keeps at most this many unresolved device events; beyond it the
/// oldest are resolved (waiting for them if needed).
constexpr size_t kMaxPendingTraceEvents = 4096;

/// The generation of the backend whose context is current on this thread.
thread_local uint64_t currentGeneration = 0;

/// The local rank under mpirun, or -1.
int localRank() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}) {
    const char *text = std::getenv(name);
    if (!text || !*text)
      continue;
    char *end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (*end == '\0' && value >= 0)
      return static_cast<int>(value);
  }
  return -1;
}

/// Releases what a failed or finished initialization created.
void releaseResources(CudaState &state) {
  if (state.context) {
    // Best effort: the context is made current so the handles can go.
    gCuda.cuCtxSetCurrent(state.context);
    if (state.blas)
      cublasDestroy(state.blas);
    for (CUevent event : state.eventPool)
      gCuda.cuEventDestroy(event);
    {
      std::lock_guard<std::mutex> lock(state.memoryMutex);
      releasePool(state);
    }
    for (PendingTraceEvent &event : state.pendingTrace) {
      gCuda.cuEventDestroy(event.start);
      gCuda.cuEventDestroy(event.end);
    }
    for (auto &[handle, started] : state.started)
      gCuda.cuEventDestroy(started.done);
    for (CUevent event : state.doneEvents)
      gCuda.cuEventDestroy(event);
    for (CUevent event : {state.computeReady, state.commDone, state.mark,
                          state.syncEnd, state.epoch})
      if (event)
        gCuda.cuEventDestroy(event);
    if (state.compute)
      gCuda.cuStreamDestroy(state.compute);
    if (state.comm)
      gCuda.cuStreamDestroy(state.comm);
    gCuda.cuCtxSetCurrent(nullptr);
    gCuda.cuDevicePrimaryCtxRelease(state.cuDevice);
  }
  state.eventPool.clear();
  state.pendingTrace.clear();
  state.started.clear();
  state.doneEvents.clear();
  state.blas = nullptr;
  state.computeReady = state.commDone = state.mark = state.syncEnd =
      state.epoch = nullptr;
  state.compute = state.comm = nullptr;
  state.context = nullptr;
  state.device = -1;
  state.collectivesPending = false;
  currentGeneration = 0;
}

/// Records the epoch: an event on the idle compute stream and the host time
/// at which it completed.
bool recordEpoch(CudaState &state, std::string &error) {
  CUresult result = gCuda.cuEventRecord(state.epoch, state.compute);
  if (result == CUDA_SUCCESS)
    result = gCuda.cuEventSynchronize(state.epoch);
  if (result != CUDA_SUCCESS) {
    error =
        "cuEventRecord/cuEventSynchronize failed: " + cudaResultText(result);
    return false;
  }
  state.epochUs = gaccrt_now_us();
  return true;
}

/// The initialization proper; `state.initMutex` is held. Returns false with
/// the reason in `error` (nothing is left allocated then).
bool initialize(CudaState &state, int requested, std::string &error) {
  if (!loadDriver(error))
    return false;
  CUresult result = gCuda.cuInit(0);
  if (result != CUDA_SUCCESS) {
    error = "cuInit failed: " + cudaResultText(result);
    return false;
  }
  int count = 0;
  result = gCuda.cuDeviceGetCount(&count);
  if (result != CUDA_SUCCESS) {
    error = "cuDeviceGetCount failed: " + cudaResultText(result);
    return false;
  }
  if (count <= 0) {
    error = "no CUDA device found (cuDeviceGetCount returned 0)";
    return false;
  }
  int ordinal = requested;
  if (ordinal < 0) {
    int local = localRank();
    ordinal = local >= 0 ? local % count : 0;
  } else if (ordinal >= count) {
    error = "device " + std::to_string(requested) + " was requested but " +
            std::to_string(count) + " device" + (count == 1 ? " is" : "s are") +
            " visible";
    return false;
  }

  auto fail = [&](const char *call, CUresult failed) {
    error = std::string(call) + " failed on device " + std::to_string(ordinal) +
            ": " + cudaResultText(failed);
    releaseResources(state);
    return false;
  };
  if ((result = gCuda.cuDeviceGet(&state.cuDevice, ordinal)) != CUDA_SUCCESS)
    return fail("cuDeviceGet", result);
  if ((result = gCuda.cuDevicePrimaryCtxRetain(
           &state.context, state.cuDevice)) != CUDA_SUCCESS) {
    state.context = nullptr;
    return fail("cuDevicePrimaryCtxRetain", result);
  }
  state.device = ordinal;
  if ((result = gCuda.cuCtxSetCurrent(state.context)) != CUDA_SUCCESS)
    return fail("cuCtxSetCurrent", result);
  if ((result = gCuda.cuDeviceGetAttribute(
           &state.maxSharedOptin,
           CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
           state.cuDevice)) != CUDA_SUCCESS)
    return fail("cuDeviceGetAttribute", result);
  if ((result = gCuda.cuStreamCreate(&state.compute, CU_STREAM_NON_BLOCKING)) !=
      CUDA_SUCCESS)
    return fail("cuStreamCreate", result);
  if ((result = gCuda.cuStreamCreate(&state.comm, CU_STREAM_NON_BLOCKING)) !=
      CUDA_SUCCESS)
    return fail("cuStreamCreate", result);
  for (CUevent *event : {&state.computeReady, &state.commDone})
    if ((result = gCuda.cuEventCreate(event, CU_EVENT_DISABLE_TIMING)) !=
        CUDA_SUCCESS)
      return fail("cuEventCreate", result);
  for (CUevent *event : {&state.mark, &state.syncEnd, &state.epoch})
    if ((result = gCuda.cuEventCreate(event, CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
      return fail("cuEventCreate", result);
  if ((result = gCuda.cuEventRecord(state.mark, state.compute)) != CUDA_SUCCESS)
    return fail("cuEventRecord", result);
  if (!recordEpoch(state, error)) {
    releaseResources(state);
    return false;
  }
  cublasStatus_t status = cublasCreate(&state.blas);
  if (status != CUBLAS_STATUS_SUCCESS) {
    state.blas = nullptr;
    error = "cublasCreate failed on device " + std::to_string(ordinal) + ": " +
            cublasStatusText(status);
    releaseResources(state);
    return false;
  }
  status = cublasSetStream(state.blas, state.compute);
  if (status != CUBLAS_STATUS_SUCCESS) {
    error = "cublasSetStream failed: " + cublasStatusText(status);
    releaseResources(state);
    return false;
  }
  ++state.generation;
  currentGeneration = state.generation;
  return true;
}

/// Makes the backend's context current on the calling thread.
void makeCurrent(CudaState &state, const char *caller) {
  if (currentGeneration == state.generation)
    return;
  checkCu(gCuda.cuCtxSetCurrent(state.context), "cuCtxSetCurrent", caller);
  currentGeneration = state.generation;
}

/// Polls `query` until it reports completion, checking NCCL's asynchronous
/// errors and the collective timeout in between.
template <typename Query>
void pollUntilDone(Query query, const char *queryName, const char *caller) {
  const double timeout = collectiveTimeoutSecondsCuda();
  PollOutcome outcome = pollWithDeadline(
      [&] {
        CUresult result = query();
        if (result == CUDA_SUCCESS)
          return true;
        if (result != CUDA_ERROR_NOT_READY)
          checkCu(result, queryName, caller);
        checkCollectiveErrors(caller);
        return false;
      },
      timeout, /*firstPauseUs=*/0, /*maxPauseUs=*/1000);
  if (outcome == PollOutcome::TimedOut)
    collectiveWaitTimedOut(caller, timeout);
}

/// Adds the resolved trace events to the trace: `count` from the front of
/// the pending list, waiting for each.
void resolveTraceEvents(CudaState &state, size_t count, const char *caller) {
  count = std::min(count, state.pendingTrace.size());
  for (size_t i = 0; i < count; ++i) {
    PendingTraceEvent &event = state.pendingTrace[i];
    waitForEvent(event.end, caller);
    float startMs = 0.0f, endMs = 0.0f;
    checkCu(gCuda.cuEventElapsedTime(&startMs, state.epoch, event.start),
            "cuEventElapsedTime", caller);
    checkCu(gCuda.cuEventElapsedTime(&endMs, state.epoch, event.end),
            "cuEventElapsedTime", caller);
    double startUs = state.epochUs + 1000.0 * startMs;
    gaccrt_internal_trace_complete_on_track(
        event.name.c_str(), event.category, startUs,
        std::max(0.0, 1000.0 * (endMs - startMs)),
        event.argsJson.empty() ? nullptr : event.argsJson.c_str(), event.track);
    state.eventPool.push_back(event.start);
    state.eventPool.push_back(event.end);
  }
  state.pendingTrace.erase(state.pendingTrace.begin(),
                           state.pendingTrace.begin() +
                               static_cast<std::ptrdiff_t>(count));
}

/// Re-anchors the epoch at most this often outside gaccrt_cuda_synchronize,
/// so that the float milliseconds of event times stay precise in long runs.
constexpr double kEpochRefreshUs = 1e6;

/// Waits for both streams, then resolves the trace events and re-anchors the
/// epoch on the now idle device.
void synchronizeAll(CudaState &state, const char *caller) {
  waitForStream(state.comm, caller);
  waitForStream(state.compute, caller);
  state.collectivesPending = false;
  resolveTraceEvents(state, state.pendingTrace.size(), caller);
  std::string error;
  if (!recordEpoch(state, error))
    cudaFatal(std::string(caller) + ": " + error);
}

void checkBytes(int64_t bytes, const char *caller) {
  if (bytes < 0)
    cudaFatal(std::string(caller) + ": negative size " + std::to_string(bytes));
}

void checkPointers(const void *dst, const void *src, int64_t bytes,
                   const char *caller) {
  if (bytes > 0 && (!dst || !src))
    cudaFatal(std::string(caller) + ": NULL " +
              (dst ? "source" : "destination") + " for " +
              std::to_string(bytes) + " bytes");
}

/// Enqueues a copy on the compute stream; waits for it when `wait`.
void copy(void *dst, const void *src, int64_t bytes, bool wait,
          const char *caller) {
  checkBytes(bytes, caller);
  checkPointers(dst, src, bytes, caller);
  requireCuda(caller);
  if (bytes == 0)
    return;
  CUstream stream = computeStream(caller);
  checkCu(gCuda.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                              reinterpret_cast<CUdeviceptr>(src),
                              static_cast<size_t>(bytes), stream),
          "cuMemcpyAsync", caller);
  if (wait) {
    waitForStream(stream, caller);
    if (!cudaState().pendingTrace.empty())
      flushTraceEvents(caller);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Internal interface
//===----------------------------------------------------------------------===//

void cudaFatal(const std::string &message) {
  gaccrt_abort(message.c_str());
  std::abort(); // gaccrt_abort does not return
}

CudaState &cudaState() {
  static CudaState *state = new CudaState(); // never destroyed
  return *state;
}

CudaState &requireCuda(const char *caller) {
  CudaState &state = cudaState();
  if (!state.ready) {
    std::lock_guard<std::mutex> lock(state.initMutex);
    if (!state.attempted) {
      state.attempted = true;
      std::string error;
      if (initialize(state, state.requestedDevice, error))
        state.ready = true;
      else
        state.unavailable = error;
    }
    if (!state.ready)
      cudaFatal(std::string(caller) +
                ": CUDA is not available: " + state.unavailable);
  }
  makeCurrent(state, caller);
  return state;
}

CUstream computeStream(const char *caller) {
  CudaState &state = cudaState();
  if (state.collectivesPending) {
    // commDone was recorded right after the last blocking all-reduce, so
    // started ones issued since then are not waited for here.
    checkCu(gCuda.cuStreamWaitEvent(state.compute, state.commDone, 0),
            "cuStreamWaitEvent", caller);
    state.collectivesPending = false;
  }
  return state.compute;
}

void orderAfterStartedAllReduces(CudaState &state, uintptr_t data,
                                 int64_t bytes, const char *caller) {
  auto overlaps = [&](uintptr_t begin, int64_t size) {
    return data < begin + static_cast<uint64_t>(size) &&
           begin < data + static_cast<uint64_t>(bytes);
  };
  for (auto &[handle, started] : state.started)
    if (overlaps(started.data, started.bytes) ||
        (started.otherBytes > 0 && overlaps(started.other, started.otherBytes)))
      checkCu(gCuda.cuStreamWaitEvent(state.compute, started.done, 0),
              "cuStreamWaitEvent", caller);
}

void waitForStream(CUstream stream, const char *caller) {
  ++cudaState().syncCount;
  if (!collectiveCommunicatorActive()) {
    checkCu(gCuda.cuStreamSynchronize(stream), "cuStreamSynchronize", caller);
    return;
  }
  pollUntilDone([stream] { return gCuda.cuStreamQuery(stream); },
                "cuStreamQuery", caller);
}

void waitForEvent(CUevent event, const char *caller) {
  ++cudaState().syncCount;
  if (!collectiveCommunicatorActive()) {
    checkCu(gCuda.cuEventSynchronize(event), "cuEventSynchronize", caller);
    return;
  }
  pollUntilDone([event] { return gCuda.cuEventQuery(event); }, "cuEventQuery",
                caller);
}

CUevent acquirePooledEvent(std::vector<CUevent> &pool, unsigned flags,
                           const char *caller) {
  if (!pool.empty()) {
    CUevent event = pool.back();
    pool.pop_back();
    return event;
  }
  CUevent event = nullptr;
  checkCu(gCuda.cuEventCreate(&event, flags), "cuEventCreate", caller);
  return event;
}

CUevent acquireTimingEvent(const char *caller) {
  return acquirePooledEvent(cudaState().eventPool, CU_EVENT_DEFAULT, caller);
}

void addPendingTraceEvent(PendingTraceEvent event, const char *caller) {
  CudaState &state = cudaState();
  state.pendingTrace.push_back(std::move(event));
  if (state.pendingTrace.size() > kMaxPendingTraceEvents)
    resolveTraceEvents(state, kMaxPendingTraceEvents / 2, caller);
}

void flushTraceEvents(const char *caller) {
  CudaState &state = cudaState();
  size_t done = 0;
  while (done < state.pendingTrace.size() &&
         gCuda.cuEventQuery(state.pendingTrace[done].end) == CUDA_SUCCESS)
    ++done;
  resolveTraceEvents(state, done, caller);
  if (state.pendingTrace.empty() &&
      gaccrt_now_us() - state.epochUs > kEpochRefreshUs) {
    // No event refers to the old epoch any more, and the compute stream is
    // idle (the caller just waited for it).
    std::string error;
    if (!recordEpoch(state, error))
      cudaFatal(std::string(caller) + ": " + error);
  }
}

void releasePool(CudaState &state) {
  for (auto &[capacity, blocks] : state.pool)
    for (CUdeviceptr block : blocks)
      gCuda.cuMemFree(block);
  state.pool.clear();
  state.pooledBytes = 0;
}

namespace {
/// Pooled blocks are multiples of this many bytes.
constexpr int64_t kPoolGranule = 512;

/// A pooled block of `capacity` bytes, or 0.
CUdeviceptr takePooled(CudaState &state, int64_t capacity) {
  auto found = state.pool.find(capacity);
  if (found == state.pool.end() || found->second.empty())
    return 0;
  CUdeviceptr block = found->second.back();
  found->second.pop_back();
  state.pooledBytes -= capacity;
  return block;
}
} // namespace

void *accountedAlloc(int64_t bytes, bool managed, const char *caller) {
  checkBytes(bytes, caller);
  CudaState &state = requireCuda(caller);
  if (bytes == 0)
    return nullptr;
  int64_t capacity =
      managed ? 0 : (bytes + kPoolGranule - 1) / kPoolGranule * kPoolGranule;
  std::lock_guard<std::mutex> lock(state.memoryMutex);
  ++state.allocationCount;
  CUdeviceptr pointer = managed ? 0 : takePooled(state, capacity);
  CUresult result = CUDA_SUCCESS;
  if (!pointer) {
    ++state.deviceAllocationCount;
    auto allocate = [&] {
      return managed
                 ? gCuda.cuMemAllocManaged(&pointer, static_cast<size_t>(bytes),
                                           CU_MEM_ATTACH_GLOBAL)
                 : gCuda.cuMemAlloc(&pointer, static_cast<size_t>(capacity));
    };
    result = allocate();
    if (result == CUDA_ERROR_OUT_OF_MEMORY && state.pooledBytes > 0) {
      // The pool holds memory no one uses: give it back and try again.
      releasePool(state);
      result = allocate();
    }
  }
  if (result != CUDA_SUCCESS) {
    size_t freeBytes = 0, totalBytes = 0;
    std::string memory;
    if (gCuda.cuMemGetInfo(&freeBytes, &totalBytes) == CUDA_SUCCESS)
      memory = "; the device has " + std::to_string(freeBytes) + " of " +
               std::to_string(totalBytes) + " bytes free";
    cudaFatal(std::string(caller) + ": " +
              (managed ? "cuMemAllocManaged" : "cuMemAlloc") + " of " +
              std::to_string(bytes) +
              " bytes failed: " + cudaResultText(result) + " (" +
              std::to_string(state.currentBytes) +
              " bytes allocated through gaccrt" + memory + ")");
  }
  state.allocations[static_cast<uintptr_t>(pointer)] = {bytes, capacity};
  state.currentBytes += bytes;
  state.peakBytes = std::max(state.peakBytes, state.currentBytes);
  return reinterpret_cast<void *>(pointer);
}

void accountedFree(void *ptr, const char *caller) {
  if (!ptr)
    return;
  CudaState &state = cudaState();
  CudaState::Allocation allocation;
  {
    std::lock_guard<std::mutex> lock(state.memoryMutex);
    auto found = state.allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (found == state.allocations.end())
      cudaFatal(std::string(caller) +
                ": the pointer was not allocated by gaccrt_cuda_alloc or "
                "mgpuMemAlloc (or was freed twice)");
    allocation = found->second;
    state.currentBytes -= allocation.bytes;
    state.allocations.erase(found);
  }
  requireCuda(caller);
  if (allocation.capacity > 0) {
    // Later work on the compute stream may reuse it at once: that work waits
    // for the blocking all-reduces issued before it (computeStream), and here
    // the compute stream waits, on the device, for a started all-reduce
    // still using the block. No host wait: a free between an all-reduce's
    // start and its wait (an activation of the final micro-batch) must not
    // stall the host until the collective is done.
    orderAfterStartedAllReduces(state, reinterpret_cast<uintptr_t>(ptr),
                                allocation.bytes, caller);
    std::lock_guard<std::mutex> lock(state.memoryMutex);
    state.pool[allocation.capacity].push_back(
        reinterpret_cast<CUdeviceptr>(ptr));
    state.pooledBytes += allocation.capacity;
    return;
  }
  // Managed memory goes back to the driver: an all-reduce in flight may
  // still use it, and cuMemFree's own wait for the device would not notice
  // an NCCL failure.
  if (collectiveCommunicatorActive())
    waitForStream(state.comm, caller);
  checkCu(gCuda.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree",
          caller);
}

} // namespace gaccrt

using namespace gaccrt;

//===----------------------------------------------------------------------===//
// Lifecycle
//===----------------------------------------------------------------------===//

int gaccrt_cuda_init(int device_ordinal_or_minus1) {
  CudaState &state = cudaState();
  std::lock_guard<std::mutex> lock(state.initMutex);
  if (state.ready) {
    if (device_ordinal_or_minus1 >= 0 &&
        device_ordinal_or_minus1 != state.device) {
      std::fprintf(stderr,
                   "gaccrt: error: gaccrt_cuda_init(%d): the CUDA backend "
                   "already runs on device %d (gaccrt_cuda_finalize first)\n",
                   device_ordinal_or_minus1, state.device);
      return 1;
    }
    return 0;
  }
  if (!state.attempted) {
    state.attempted = true;
    std::string error;
    if (initialize(state, device_ordinal_or_minus1, error))
      state.ready = true;
    else
      state.unavailable = error;
  }
  if (!state.ready) {
    std::fflush(stdout);
    std::fprintf(stderr, "gaccrt: CUDA is not available: %s\n",
                 state.unavailable.c_str());
    std::fflush(stderr);
    return 1;
  }
  return 0;
}

int gaccrt_cuda_available(void) { return cudaState().ready ? 1 : 0; }

int gaccrt_cuda_device(void) {
  CudaState &state = cudaState();
  return state.ready ? state.device : -1;
}

void gaccrt_cuda_finalize(void) {
  CudaState &state = cudaState();
  if (state.ready) {
    const char *caller = "gaccrt_cuda_finalize";
    requireCuda(caller);
    synchronizeAll(state, caller);
    finalizeCollectives();
  }
  std::lock_guard<std::mutex> lock(state.initMutex);
  if (state.ready)
    releaseResources(state);
  state.ready = false;
  state.attempted = false;
  state.unavailable.clear();
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

void *gaccrt_cuda_alloc(int64_t bytes) {
  return accountedAlloc(bytes, /*managed=*/false, "gaccrt_cuda_alloc");
}

void gaccrt_cuda_free(void *device_ptr) {
  accountedFree(device_ptr, "gaccrt_cuda_free");
}

void gaccrt_cuda_memcpy_h2d(void *dst, const void *src, int64_t bytes) {
  copy(dst, src, bytes, /*wait=*/true, "gaccrt_cuda_memcpy_h2d");
}

void gaccrt_cuda_memcpy_d2h(void *dst, const void *src, int64_t bytes) {
  copy(dst, src, bytes, /*wait=*/true, "gaccrt_cuda_memcpy_d2h");
}

void gaccrt_cuda_memcpy_d2d(void *dst, const void *src, int64_t bytes) {
  copy(dst, src, bytes, /*wait=*/false, "gaccrt_cuda_memcpy_d2d");
}

void gaccrt_cuda_memset_zero(void *dst, int64_t bytes) {
  const char *caller = "gaccrt_cuda_memset_zero";
  checkBytes(bytes, caller);
  checkPointers(dst, dst, bytes, caller);
  requireCuda(caller);
  if (bytes == 0)
    return;
  checkCu(gCuda.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), 0,
                                static_cast<size_t>(bytes),
                                computeStream(caller)),
          "cuMemsetD8Async", caller);
}

int64_t gaccrt_cuda_current_bytes(void) {
  CudaState &state = cudaState();
  std::lock_guard<std::mutex> lock(state.memoryMutex);
  return state.currentBytes;
}

int64_t gaccrt_cuda_peak_bytes(void) {
  CudaState &state = cudaState();
  std::lock_guard<std::mutex> lock(state.memoryMutex);
  return state.peakBytes;
}

void gaccrt_cuda_reset_peak(void) {
  CudaState &state = cudaState();
  std::lock_guard<std::mutex> lock(state.memoryMutex);
  state.peakBytes = state.currentBytes;
}

int64_t gaccrt_cuda_pooled_bytes(void) {
  CudaState &state = cudaState();
  std::lock_guard<std::mutex> lock(state.memoryMutex);
  return state.pooledBytes;
}

void gaccrt_cuda_get_counts(gaccrt_cuda_counts *counts) {
  if (!counts)
    return;
  CudaState &state = cudaState();
  std::lock_guard<std::mutex> lock(state.memoryMutex);
  counts->launches = state.launchCount;
  counts->syncs = state.syncCount;
  counts->allocations = state.allocationCount;
  counts->device_allocations = state.deviceAllocationCount;
}

void gaccrt_cuda_reset_counts(void) {
  CudaState &state = cudaState();
  std::lock_guard<std::mutex> lock(state.memoryMutex);
  state.launchCount = state.syncCount = state.allocationCount =
      state.deviceAllocationCount = 0;
}

//===----------------------------------------------------------------------===//
// Synchronization and timing
//===----------------------------------------------------------------------===//

void gaccrt_cuda_synchronize(void) {
  const char *caller = "gaccrt_cuda_synchronize";
  synchronizeAll(requireCuda(caller), caller);
}

void gaccrt_cuda_mark(void) {
  const char *caller = "gaccrt_cuda_mark";
  CudaState &state = requireCuda(caller);
  checkCu(gCuda.cuEventRecord(state.mark, computeStream(caller)),
          "cuEventRecord", caller);
}

double gaccrt_cuda_elapsed_ms_since_mark(void) {
  const char *caller = "gaccrt_cuda_elapsed_ms_since_mark";
  CudaState &state = requireCuda(caller);
  checkCu(gCuda.cuEventRecord(state.syncEnd, computeStream(caller)),
          "cuEventRecord", caller);
  waitForEvent(state.syncEnd, caller);
  float ms = 0.0f;
  checkCu(gCuda.cuEventElapsedTime(&ms, state.mark, state.syncEnd),
          "cuEventElapsedTime", caller);
  return static_cast<double>(ms);
}
