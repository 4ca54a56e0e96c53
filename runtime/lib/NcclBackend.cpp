//===- NcclBackend.cpp - The NCCL collective backend on device memory -----===//
//
// gaccrt_cuda_all_reduce: one ncclAllReduce per accumulator bucket on the
// communication stream, which first waits (through an event) for the work
// already issued on the compute stream; the compute stream's next work waits
// for it. gaccrt_cuda_all_reduce_start issues the same collective, but the
// compute stream waits for it (cuStreamWaitEvent on an event recorded after
// it: no host wait) only in gaccrt_cuda_all_reduce_wait, so the rest of the
// final micro-batch's backward runs while it reduces. The communicator is
// created on the
// first multi-rank call: rank 0's ncclGetUniqueId travels to the other ranks
// through gaccrt's own MPI broadcast. NCCL errors never hang or pass
// silently: synchronous results are checked, asynchronous ones are polled
// whenever the host waits for the device (CudaRuntime.cpp), and a failing
// communicator is aborted with ncclCommAbort before every rank is. One rank
// needs no NCCL: the data is left as it is, but the call is still validated,
// counted and traced. Built without NCCL, more than one rank is an error.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt_cuda.h"

#include "CollectiveTimeout.h"
#include "CudaInternal.h"
#include "DTypes.h"
#include "Internal.h"

#if GACCRT_HAVE_NCCL
#include <nccl.h>
#if NCCL_VERSION_CODE < NCCL_VERSION(2, 10, 0)
#error "gaccrt needs NCCL 2.10 or newer (ncclAvg, ncclBfloat16)"
#endif
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace gaccrt;

namespace {

const char *const kCaller = "gaccrt_cuda_all_reduce";
const char *const kStartCaller = "gaccrt_cuda_all_reduce_start";
const char *const kWaitCaller = "gaccrt_cuda_all_reduce_wait";

std::string bucketText(int64_t bucket) {
  return "bucket " + std::to_string(bucket);
}

/// Aborts unless [data, data + bytes) lies in one device allocation, so a
/// host pointer or an overrun becomes a message rather than a fault.
void checkDeviceBuffer(void *data, int64_t bytes, int64_t bucket,
                       const char *caller) {
  CUdeviceptr pointer = reinterpret_cast<CUdeviceptr>(data);
  unsigned int memoryType = 0;
  CUresult result = gCuda.cuPointerGetAttribute(
      &memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer);
  if (result != CUDA_SUCCESS || memoryType == CU_MEMORYTYPE_HOST)
    cudaFatal(std::string(caller) + ": " + bucketText(bucket) +
              " is not in device memory (cuPointerGetAttribute: " +
              (result != CUDA_SUCCESS ? cudaResultText(result)
                                      : std::string("host memory")) +
              ")");
  CUdeviceptr rangeStart = 0;
  size_t rangeSize = 0;
  if (gCuda.cuPointerGetAttribute(&rangeStart,
                                  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                  pointer) == CUDA_SUCCESS &&
      gCuda.cuPointerGetAttribute(&rangeSize, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                  pointer) == CUDA_SUCCESS &&
      rangeSize > 0 &&
      pointer - rangeStart + static_cast<uint64_t>(bytes) > rangeSize)
    cudaFatal(std::string(caller) + ": " + bucketText(bucket) + " (" +
              std::to_string(bytes) + " bytes at offset " +
              std::to_string(pointer - rangeStart) +
              ") overruns its device allocation of " +
              std::to_string(rangeSize) + " bytes");
}

#if GACCRT_HAVE_NCCL

struct NcclState {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int worldSize = 1;
  /// The NCCL collectives this rank issued, and the last one's bucket: what
  /// a timeout names.
  long long collectiveNumber = 0;
  int64_t lastBucket = -1;
};

NcclState &ncclState() {
  static NcclState *state = new NcclState(); // never destroyed
  return *state;
}

std::string ncclText(ncclResult_t result, ncclComm_t comm) {
  std::string text = ncclGetErrorString(result);
  const char *last = ncclGetLastError(comm);
  if (last && *last)
    text += std::string(": ") + last;
  return text;
}

/// Aborts the communicator (if any) and all ranks unless `result` is
/// success.
void checkNccl(ncclResult_t result, const char *call, const char *caller) {
  if (result == ncclSuccess)
    return;
  NcclState &state = ncclState();
  abortCollectives(std::string(caller) + ": " + call + " failed on rank " +
                   std::to_string(state.rank) + ": " +
                   ncclText(result, state.comm));
}

ncclDataType_t toNccl(int32_t dtype) {
  switch (dtype) {
  case GACCRT_F64:
    return ncclFloat64;
  case GACCRT_BF16:
    return ncclBfloat16;
  case GACCRT_F16:
    return ncclFloat16;
  case GACCRT_I32:
    return ncclInt32;
  case GACCRT_I64:
    return ncclInt64;
  default:
    return ncclFloat32;
  }
}

/// What sets the NCCL timeout, for its message.
std::string collectiveTimeoutSetting() {
  return gaccrt_collective_timeout() > 0
             ? "--collective-timeout"
             : "GACCRT_NCCL_TIMEOUT_S or --collective-timeout sets the limit";
}

std::string bucketDetail(int64_t bucket) {
  return bucket >= 0 ? ", " + bucketText(bucket) : std::string();
}

/// Aborts the communicator and every rank with the timeout message of
/// `call`, the collective `number` of this rank.
[[noreturn]] void ncclTimedOut(const std::string &prefix, const char *call,
                               long long number, int64_t bucket,
                               double timeout) {
  NcclState &state = ncclState();
  abortCollectives(prefix + collectiveTimeoutMessage(
                                call, number, bucketDetail(bucket), state.rank,
                                state.worldSize, timeout,
                                collectiveTimeoutSetting(),
                                "the NCCL communicator was aborted, aborting "
                                "all ranks"));
}

/// Finishes an NCCL call on the nonblocking communicator `comm`: while it
/// answers ncclInProgress, polls ncclCommGetAsyncError until the call is
/// done or the collective timeout passes; then checks the outcome.
void completeNccl(ncclResult_t result, ncclComm_t comm, const char *call,
                  const char *caller, long long number, int64_t bucket) {
  if (result == ncclInProgress) {
    const double timeout = collectiveTimeoutSecondsCuda();
    PollOutcome outcome = pollWithDeadline(
        [&] {
          ncclResult_t queried = ncclCommGetAsyncError(comm, &result);
          if (queried != ncclSuccess)
            result = queried;
          return result != ncclInProgress;
        },
        timeout, /*firstPauseUs=*/0, /*maxPauseUs=*/1000);
    if (outcome == PollOutcome::TimedOut)
      ncclTimedOut(std::string(caller) + ": ", call, number, bucket, timeout);
  }
  checkNccl(result, call, caller);
}

/// The communicator over all ranks, created on first use (in the all-reduce
/// of `bucket`, called by `caller`): a collective call, so every rank gets
/// here in the same all-reduce.
ncclComm_t communicator(int rank, int worldSize, int64_t bucket,
                        const char *caller) {
  NcclState &state = ncclState();
  if (state.comm)
    return state.comm;
  state.rank = rank;
  state.worldSize = worldSize;
  ncclUniqueId id{};
  if (rank == 0)
    checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId", caller);
  // The id travels over MPI, under the same deadline as NCCL's calls.
  const double saved = gaccrt_collective_timeout();
  if (saved <= 0)
    gaccrt_set_collective_timeout(collectiveTimeoutSecondsCuda());
  gaccrt_broadcast(&id, static_cast<int64_t>(sizeof(id)), 0);
  gaccrt_set_collective_timeout(saved);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t result =
      ncclCommInitRankConfig(&comm, worldSize, id, rank, &config);
  if (result == ncclSuccess || result == ncclInProgress)
    state.comm = comm; // so that a failure or a timeout aborts it
  completeNccl(result, comm, "ncclCommInitRank", caller,
               state.collectiveNumber + 1, bucket);
  return comm;
}

#endif // GACCRT_HAVE_NCCL

} // namespace

//===----------------------------------------------------------------------===//
// Hooks for the waits (CudaInternal.h)
//===----------------------------------------------------------------------===//

namespace gaccrt {

double collectiveTimeoutSecondsCuda() {
  std::string warning;
  double seconds =
      resolveNcclTimeout(gaccrt_collective_timeout(),
                         std::getenv("GACCRT_NCCL_TIMEOUT_S"), warning);
  static bool warned = false;
  if (!warning.empty() && !warned) {
    warned = true;
    std::fprintf(stderr, "gaccrt: warning: %s\n", warning.c_str());
  }
  return seconds;
}

#if GACCRT_HAVE_NCCL

bool collectiveCommunicatorActive() { return ncclState().comm != nullptr; }

void collectiveWaitTimedOut(const char *caller, double timeout) {
  NcclState &state = ncclState();
  ncclTimedOut(
      std::string(caller) + ": waiting for the device: ", "ncclAllReduce",
      state.collectiveNumber, state.lastBucket, timeout);
}

void checkCollectiveErrors(const char *caller) {
  NcclState &state = ncclState();
  if (!state.comm)
    return;
  ncclResult_t asyncError = ncclSuccess;
  ncclResult_t result = ncclCommGetAsyncError(state.comm, &asyncError);
  if (result != ncclSuccess)
    abortCollectives(
        std::string(caller) + ": ncclCommGetAsyncError failed on rank " +
        std::to_string(state.rank) + ": " + ncclText(result, state.comm));
  if (asyncError != ncclSuccess && asyncError != ncclInProgress)
    abortCollectives(
        std::string(caller) + ": NCCL reported an asynchronous error on rank " +
        std::to_string(state.rank) + ": " + ncclText(asyncError, state.comm) +
        "; the communicator was aborted");
}

void abortCollectives(const std::string &message) {
  NcclState &state = ncclState();
  if (ncclComm_t comm = state.comm) {
    state.comm = nullptr; // the waits stop polling it
    ncclCommAbort(comm);
  }
  cudaFatal(message);
}

void finalizeCollectives() {
  NcclState &state = ncclState();
  if (!state.comm)
    return;
  ncclComm_t comm = state.comm;
  // Finalizing is collective too: a rank that never gets here is a timeout.
  completeNccl(ncclCommFinalize(comm), comm, "ncclCommFinalize",
               "gaccrt_cuda_finalize", state.collectiveNumber + 1, -1);
  checkNccl(ncclCommDestroy(comm), "ncclCommDestroy", "gaccrt_cuda_finalize");
  state.comm = nullptr;
}

#else

bool collectiveCommunicatorActive() { return false; }
void collectiveWaitTimedOut(const char *caller, double timeout) {
  cudaFatal(std::string(caller) + ": the device did not finish within " +
            std::to_string(timeout) + " s");
}
void checkCollectiveErrors(const char *) {}
void abortCollectives(const std::string &message) { cudaFatal(message); }
void finalizeCollectives() {}

#endif // GACCRT_HAVE_NCCL

} // namespace gaccrt

//===----------------------------------------------------------------------===//
// The all-reduce
//===----------------------------------------------------------------------===//

namespace {

const char *const kKindNames[] = {"sum", "average", "max", "min", "product"};

/// Checks the arguments of an all-reduce of `caller` (before the device is
/// needed, so the messages are the same without a GPU).
void validateAllReduce(const char *caller, void *device_data, int64_t count,
                       int32_t dtype, int32_t kind, int64_t bucket) {
  const char *typeName = dtypeName(dtype);
  if (!typeName)
    cudaFatal(std::string(caller) + ": unknown dtype " + std::to_string(dtype) +
              " for " + bucketText(bucket) +
              " (expected 0=f32, 1=f64, 2=bf16, 3=f16, 4=i32, 5=i64)");
  if (kind < GACCRT_SUM || kind > GACCRT_PRODUCT)
    cudaFatal(std::string(caller) + ": unknown reduction kind " +
              std::to_string(kind) + " for " + bucketText(bucket) +
              " (expected 0=sum, 1=average, 2=max, 3=min, 4=product)");
  if (count < 0 || (count > 0 && !device_data))
    cudaFatal(std::string(caller) + ": invalid buffer for " +
              bucketText(bucket) + " (" + std::to_string(count) +
              " elements at " + (device_data ? "a valid pointer" : "NULL") +
              ")");
  if (kind == GACCRT_AVERAGE && (dtype == GACCRT_I32 || dtype == GACCRT_I64))
    cudaFatal(std::string(caller) + ": average of an integer (" + typeName +
              ") " + bucketText(bucket) + " is not supported; use sum");
}

/// A done event for a started all-reduce: a finished wait's, else a new one
/// (so steps after the first create none).
CUevent acquireDoneEvent(CudaState &cuda, const char *caller) {
  return acquirePooledEvent(cuda.doneEvents, CU_EVENT_DISABLE_TIMING, caller);
}

/// Validates, counts and issues the all-reduce of `caller` on the
/// communication stream after the compute stream's work issued so far, and
/// traces it (on track 1, "communication", with device times). Returns true
/// when the communication stream got work: with one rank the data is left
/// as it is, but a started all-reduce (`started`) still orders the streams,
/// so that the start/wait path is the same on one rank as on several.
bool issueAllReduce(const char *caller, void *device_data, int64_t count,
                    int32_t dtype, int32_t kind, int64_t bucket, bool started) {
  validateAllReduce(caller, device_data, count, dtype, kind, bucket);
  CudaState &cuda = requireCuda(caller);
  int64_t bytes = count * dtypeBytes(dtype);
  if (count > 0)
    checkDeviceBuffer(device_data, bytes, bucket, caller);
  // gaccrt_world_size initializes the core (which resets the statistics)
  // before this call is counted.
  const int worldSize = gaccrt_world_size();
  const int rank = gaccrt_rank();
  gaccrt_internal_count_collective(bytes);

  bool tracing = gaccrt_trace_enabled() != 0;
  std::string name = "all-reduce " + bucketText(bucket);
  std::string args = "{\"bytes\": " + std::to_string(bytes) +
                     ", \"count\": " + std::to_string(count) +
                     ", \"kind\": \"" + kKindNames[kind] + "\", \"dtype\": \"" +
                     dtypeName(dtype) + "\", \"device\": \"cuda\"" +
                     (started ? ", \"overlapped\": true" : "") + "}";
  bool reduce = worldSize > 1 && count > 0;
  if (!reduce) {
    if (tracing)
      gaccrt_trace_complete(name.c_str(), "collective", gaccrt_now_us(), 0.0,
                            args.c_str());
    if (!started || count == 0)
      return false;
  }
#if !GACCRT_HAVE_NCCL
  if (reduce)
    cudaFatal(std::string(caller) + ": " + bucketText(bucket) +
              " must be reduced over " + std::to_string(worldSize) +
              " ranks, but libgaccrt_cuda was built without NCCL");
#endif

  // The reduction must see everything issued on the compute stream so far.
  checkCu(gCuda.cuEventRecord(cuda.computeReady, cuda.compute), "cuEventRecord",
          caller);
  checkCu(gCuda.cuStreamWaitEvent(cuda.comm, cuda.computeReady, 0),
          "cuStreamWaitEvent", caller);
  if (!reduce)
    return true;

#if GACCRT_HAVE_NCCL
  ncclComm_t comm = communicator(rank, worldSize, bucket, caller);
  CUevent start = nullptr;
  if (tracing) {
    start = acquireTimingEvent(caller);
    checkCu(gCuda.cuEventRecord(start, cuda.comm), "cuEventRecord", caller);
  }
  NcclState &state = ncclState();
  ++state.collectiveNumber;
  state.lastBucket = bucket;
  completeNccl(ncclAllReduce(device_data, device_data,
                             static_cast<size_t>(count), toNccl(dtype),
                             kind == GACCRT_AVERAGE   ? ncclAvg
                             : kind == GACCRT_MAX     ? ncclMax
                             : kind == GACCRT_MIN     ? ncclMin
                             : kind == GACCRT_PRODUCT ? ncclProd
                                                      : ncclSum,
                             comm, cuda.comm),
               comm, "ncclAllReduce", caller, state.collectiveNumber, bucket);
  if (tracing) {
    CUevent end = acquireTimingEvent(caller);
    checkCu(gCuda.cuEventRecord(end, cuda.comm), "cuEventRecord", caller);
    addPendingTraceEvent({name, "collective", args, start, end, /*track=*/1},
                         caller);
  }
  checkCollectiveErrors(caller);
#else
  (void)rank;
#endif
  return true;
}

} // namespace

void gaccrt_cuda_all_reduce(void *device_data, int64_t count, int32_t dtype,
                            int32_t kind, int64_t bucket) {
  if (!issueAllReduce(kCaller, device_data, count, dtype, kind, bucket,
                      /*started=*/false))
    return;
  // The compute stream's next work waits for this event (computeStream).
  CudaState &cuda = cudaState();
  checkCu(gCuda.cuEventRecord(cuda.commDone, cuda.comm), "cuEventRecord",
          kCaller);
  cuda.collectivesPending = true;
}

int64_t gaccrt_cuda_all_reduce_start(void *device_data, int64_t count,
                                     int32_t dtype, int32_t kind,
                                     int64_t bucket) {
  bool issued = issueAllReduce(kStartCaller, device_data, count, dtype, kind,
                               bucket, /*started=*/true);
  CudaState &cuda = cudaState();
  int64_t handle = ++cuda.lastStartedHandle;
  if (!issued)
    return handle; // no data: nothing to wait for
  CUevent done = acquireDoneEvent(cuda, kStartCaller);
  checkCu(gCuda.cuEventRecord(done, cuda.comm), "cuEventRecord", kStartCaller);
  cuda.started[handle] = {reinterpret_cast<uintptr_t>(device_data),
                          count * dtypeBytes(dtype), bucket, done};
  return handle;
}

namespace {
/// Makes the compute stream wait for the started collective `handle` (a
/// `what` whose wait names `data`), or aborts with a message.
void waitForStarted(const char *caller, const char *what, int64_t handle,
                    const void *data) {
  CudaState &cuda = cudaState();
  if (handle <= 0 || handle > cuda.lastStartedHandle)
    cudaFatal(std::string(caller) + ": " + std::to_string(handle) +
              " is not a handle of a started collective (" +
              std::to_string(cuda.lastStartedHandle) + " started so far)");
  auto found = cuda.started.find(handle);
  if (found == cuda.started.end())
    return; // nothing to wait for (no data), or waited for before
  StartedAllReduce startedCall = found->second;
  if (std::strcmp(startedCall.what, what) != 0)
    cudaFatal(std::string(caller) + ": handle " + std::to_string(handle) +
              " (" + bucketText(startedCall.bucket) + ") is a started " +
              startedCall.what + ", not a " + what);
  if (startedCall.data != reinterpret_cast<uintptr_t>(data))
    cudaFatal(std::string(caller) + ": handle " + std::to_string(handle) +
              " (" + bucketText(startedCall.bucket) +
              ") was started on another buffer than the one waited for");
  requireCuda(caller);
  // On the device: the host goes on issuing work.
  checkCu(gCuda.cuStreamWaitEvent(cuda.compute, startedCall.done, 0),
          "cuStreamWaitEvent", caller);
  cuda.started.erase(found);
  // Safe to record again at once: the wait above is bound to the record
  // that precedes it.
  cuda.doneEvents.push_back(startedCall.done);
}
} // namespace

void gaccrt_cuda_all_reduce_wait(int64_t handle, void *device_data) {
  waitForStarted(kWaitCaller, "all-reduce", handle, device_data);
}

int64_t gaccrt_cuda_all_reduces_in_flight(void) {
  return static_cast<int64_t>(cudaState().started.size());
}

//===----------------------------------------------------------------------===//
// Sharded buckets (shard-optimizer-state)
//===----------------------------------------------------------------------===//

namespace {
/// Issues the reduce-scatter (`gather` false) or all-gather of a bucket on
/// the communication stream after the compute stream's work so far; the
/// compute stream's next work waits for it, or, for a started one
/// (`handle` > 0), the compute stream waits for it only in the wait. One
/// rank: a device copy on the compute stream.
void issueShardCollective(const char *caller, const void *send, void *recv,
                          int64_t count, int32_t dtype, int32_t kind,
                          int64_t bucket, bool gather, int64_t handle = 0) {
  validateAllReduce(caller, const_cast<void *>(send), count, dtype, kind,
                    bucket);
  if (kind != GACCRT_SUM && kind != GACCRT_AVERAGE)
    cudaFatal(std::string(caller) + ": reduction kind " + kKindNames[kind] +
              " for " + bucketText(bucket) + " (expected sum or average)");
  CudaState &cuda = requireCuda(caller);
  const int worldSize = gaccrt_world_size();
  const int rank = gaccrt_rank();
  int64_t bytes = count * dtypeBytes(dtype);
  int64_t sendBytes = gather ? bytes : bytes * worldSize;
  int64_t recvBytes = gather ? bytes * worldSize : bytes;
  if (count > 0) {
    checkDeviceBuffer(const_cast<void *>(send), sendBytes, bucket, caller);
    checkDeviceBuffer(recv, recvBytes, bucket, caller);
  }
  gaccrt_internal_count_collective(gather ? 0 : sendBytes);
  if (count == 0)
    return;
  if (worldSize == 1) {
    checkCu(gCuda.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(recv),
                                reinterpret_cast<CUdeviceptr>(send), bytes,
                                cuda.compute),
            "cuMemcpyAsync", caller);
    return;
  }
#if GACCRT_HAVE_NCCL
  checkCu(gCuda.cuEventRecord(cuda.computeReady, cuda.compute), "cuEventRecord",
          caller);
  checkCu(gCuda.cuStreamWaitEvent(cuda.comm, cuda.computeReady, 0),
          "cuStreamWaitEvent", caller);
  ncclComm_t comm = communicator(rank, worldSize, bucket, caller);
  NcclState &state = ncclState();
  ++state.collectiveNumber;
  state.lastBucket = bucket;
  if (gather)
    completeNccl(ncclAllGather(send, recv, static_cast<size_t>(count),
                               toNccl(dtype), comm, cuda.comm),
                 comm, "ncclAllGather", caller, state.collectiveNumber, bucket);
  else
    completeNccl(
        ncclReduceScatter(send, recv, static_cast<size_t>(count), toNccl(dtype),
                          kind == GACCRT_AVERAGE ? ncclAvg : ncclSum, comm,
                          cuda.comm),
        comm, "ncclReduceScatter", caller, state.collectiveNumber, bucket);
  checkCollectiveErrors(caller);
  if (handle > 0) {
    CUevent done = acquireDoneEvent(cuda, caller);
    checkCu(gCuda.cuEventRecord(done, cuda.comm), "cuEventRecord", caller);
    StartedAllReduce started{reinterpret_cast<uintptr_t>(recv), recvBytes,
                             bucket, done};
    started.other = reinterpret_cast<uintptr_t>(send);
    started.otherBytes = sendBytes;
    started.what = gather ? "all-gather" : "reduce-scatter";
    cuda.started[handle] = started;
    return;
  }
  checkCu(gCuda.cuEventRecord(cuda.commDone, cuda.comm), "cuEventRecord",
          caller);
  cuda.collectivesPending = true;
#else
  (void)rank;
  cudaFatal(std::string(caller) + ": " + bucketText(bucket) + " spans " +
            std::to_string(worldSize) +
            " ranks, but libgaccrt_cuda was built without NCCL");
#endif
}
} // namespace

void gaccrt_cuda_reduce_scatter(const void *send, void *recv, int64_t count,
                                int32_t dtype, int32_t kind, int64_t bucket) {
  issueShardCollective("gaccrt_cuda_reduce_scatter", send, recv, count, dtype,
                       kind, bucket, /*gather=*/false);
}

void gaccrt_cuda_all_gather(const void *send, void *recv, int64_t count,
                            int32_t dtype, int64_t bucket) {
  issueShardCollective("gaccrt_cuda_all_gather", send, recv, count, dtype,
                       GACCRT_SUM, bucket, /*gather=*/true);
}

int64_t gaccrt_cuda_reduce_scatter_start(const void *send, void *recv,
                                         int64_t count, int32_t dtype,
                                         int32_t kind, int64_t bucket) {
  int64_t handle = ++cudaState().lastStartedHandle;
  issueShardCollective("gaccrt_cuda_reduce_scatter_start", send, recv, count,
                       dtype, kind, bucket, /*gather=*/false, handle);
  return handle;
}

int64_t gaccrt_cuda_all_gather_start(const void *send, void *recv,
                                     int64_t count, int32_t dtype,
                                     int64_t bucket) {
  int64_t handle = ++cudaState().lastStartedHandle;
  issueShardCollective("gaccrt_cuda_all_gather_start", send, recv, count, dtype,
                       GACCRT_SUM, bucket, /*gather=*/true, handle);
  return handle;
}

void gaccrt_cuda_reduce_scatter_wait(int64_t handle, const void *send,
                                     void *recv) {
  (void)send;
  waitForStarted("gaccrt_cuda_reduce_scatter_wait", "reduce-scatter", handle,
                 recv);
}

void gaccrt_cuda_all_gather_wait(int64_t handle, const void *send, void *recv) {
  (void)send;
  waitForStarted("gaccrt_cuda_all_gather_wait", "all-gather", handle, recv);
}
