//===- Core.cpp - gaccrt lifecycle, backend selection, collectives --------===//
//
// The front of the runtime: picks the collective backend from the
// environment, initializes it once, and implements the collective entry
// points on top of a backend's plain in-place sum. Element types a backend
// does not sum natively (bf16, f16) go through f32 temporaries here, and
// "average" is one division by the world size after the sum, so both happen
// identically whatever the backend. Statistics and trace events of the
// collectives are recorded here as well.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"
#include "gaccrt/half.h"

#include "DTypes.h"
#include "Gemm.h"
#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace gaccrt;

namespace {

/// Lifecycle state. `active` is published once the backend is initialized
/// so that queries and the abort path need no lock.
struct RuntimeState {
  std::mutex mutex;
  std::unique_ptr<Backend> backend;
  std::atomic<Backend *> active{nullptr};
};

RuntimeState &runtimeState() {
  static RuntimeState *state = new RuntimeState(); // never destroyed
  return *state;
}

std::atomic<int64_t> collectivesIssued{0};
std::atomic<int64_t> bytesReduced{0};
std::atomic<int64_t> bytesMoved{0};

/// Elements reduced per backend call when going through f32 temporaries,
/// which bounds the temporary buffer (16 MiB).
constexpr int64_t kTemporaryChunk = int64_t(1) << 22;

Backend &ensureInitialized() {
  Backend *backend = runtimeState().active.load(std::memory_order_acquire);
  if (backend)
    return *backend;
  if (gaccrt_init() != 0)
    fatal("the runtime could not be initialized (see the message above)");
  return *runtimeState().active.load(std::memory_order_acquire);
}

template <typename T> void divideAll(T *data, int64_t count, T divisor) {
  for (int64_t i = 0; i < count; ++i)
    data[i] /= divisor;
}

/// Sums 16-bit floats over the ranks through f32 temporaries, chunk by chunk;
/// each element is rounded back to 16 bits once.
void reduceHalf(Backend &backend, uint16_t *data, int64_t count, bool isBF16,
                ReduceOp op, bool average) {
  std::vector<float> temporary(
      static_cast<size_t>(std::min(count, kTemporaryChunk)));
  float divisor = static_cast<float>(backend.worldSize());
  for (int64_t begin = 0; begin < count; begin += kTemporaryChunk) {
    int64_t n = std::min(kTemporaryChunk, count - begin);
    uint16_t *chunk = data + begin;
    for (int64_t i = 0; i < n; ++i)
      temporary[i] =
          isBF16 ? gaccrt_bf16_to_f32(chunk[i]) : gaccrt_f16_to_f32(chunk[i]);
    backend.allReduce(temporary.data(), n, ReduceType::F32, op);
    if (average)
      divideAll(temporary.data(), n, divisor);
    for (int64_t i = 0; i < n; ++i)
      chunk[i] = isBF16 ? gaccrt_f32_to_bf16(temporary[i])
                        : gaccrt_f32_to_f16(temporary[i]);
  }
}

void reduce(Backend &backend, void *data, int64_t count, int32_t dtype,
            ReduceOp op, bool average) {
  switch (dtype) {
  case GACCRT_F32:
    backend.allReduce(data, count, ReduceType::F32, op);
    if (average)
      divideAll(static_cast<float *>(data), count,
                static_cast<float>(backend.worldSize()));
    return;
  case GACCRT_F64:
    backend.allReduce(data, count, ReduceType::F64, op);
    if (average)
      divideAll(static_cast<double *>(data), count,
                static_cast<double>(backend.worldSize()));
    return;
  case GACCRT_BF16:
  case GACCRT_F16:
    reduceHalf(backend, static_cast<uint16_t *>(data), count,
               dtype == GACCRT_BF16, op, average);
    return;
  case GACCRT_I32:
    backend.allReduce(data, count, ReduceType::I32, op);
    return;
  case GACCRT_I64:
    backend.allReduce(data, count, ReduceType::I64, op);
    return;
  default:
    return;
  }
}

} // namespace

/// Every blocking collective first lets the started ones
/// (gaccrt_all_reduce_start) finish.
static void drainStartedCollectives();
/// Lets the started collectives finish and ends the communication thread.
static void stopCommunicationThread();

//===----------------------------------------------------------------------===//
// Internal helpers
//===----------------------------------------------------------------------===//

void gaccrt::printError(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "gaccrt: error: %s\n", message.c_str());
  std::fflush(stderr);
}

void gaccrt::fatal(const std::string &message) {
  printError(message);
  if (Backend *backend = runtimeState().active.load(std::memory_order_acquire))
    backend->abortAll();
  std::abort();
}

int gaccrt::currentRankOrZero() {
  Backend *backend = runtimeState().active.load(std::memory_order_acquire);
  return backend ? backend->rank() : 0;
}

int gaccrt::currentWorldSizeOrOne() {
  Backend *backend = runtimeState().active.load(std::memory_order_acquire);
  return backend ? backend->worldSize() : 1;
}

//===----------------------------------------------------------------------===//
// Lifecycle
//===----------------------------------------------------------------------===//

int gaccrt_init(void) {
  RuntimeState &state = runtimeState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.active.load(std::memory_order_acquire))
    return 0;

  bool useMpi = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
                std::getenv("PMI_SIZE") != nullptr;
  if (const char *forced = std::getenv("GACCRT_BACKEND"); forced && *forced) {
    if (std::strcmp(forced, "mpi") == 0) {
      useMpi = true;
    } else if (std::strcmp(forced, "single") == 0) {
      useMpi = false;
    } else {
      std::fprintf(stderr,
                   "gaccrt: error: GACCRT_BACKEND must be 'single' or 'mpi', "
                   "got '%s'\n",
                   forced);
      return 1;
    }
  }

  for (const std::string &envError : {checkGemmLibraryEnv(), checkCopiesEnv()})
    if (!envError.empty()) {
      std::fprintf(stderr, "gaccrt: error: %s\n", envError.c_str());
      return 1;
    }

  std::unique_ptr<Backend> backend =
      useMpi ? createMpiBackend() : createSingleBackend();
  std::string error;
  if (!backend->init(error)) {
    std::fprintf(stderr,
                 "gaccrt: error: cannot initialize the %s backend: %s\n",
                 backend->name(), error.c_str());
    return 1;
  }
  state.backend = std::move(backend);
  collectivesIssued = 0;
  bytesReduced = 0;
  bytesMoved = 0;
  state.active.store(state.backend.get(), std::memory_order_release);
  return 0;
}

void gaccrt_finalize(void) {
  stopCommunicationThread();
  RuntimeState &state = runtimeState();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (gaccrt_trace_enabled()) {
    gaccrt_trace_write();
    gaccrt_trace_enable(nullptr); // stop tracing, drop the events
  }
  if (!state.backend)
    return;
  state.active.store(nullptr, std::memory_order_release);
  state.backend->finalize();
  state.backend.reset();
}

int gaccrt_rank(void) { return ensureInitialized().rank(); }

int gaccrt_world_size(void) { return ensureInitialized().worldSize(); }

const char *gaccrt_backend_name(void) { return ensureInitialized().name(); }

void gaccrt_barrier(void) {
  Backend &backend = ensureInitialized();
  drainStartedCollectives();
  backend.barrier();
}

void gaccrt_abort(const char *message) { fatal(message ? message : "aborted"); }

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

bool gaccrt::toReduceOp(int32_t kind, ReduceOp &op) {
  switch (kind) {
  case GACCRT_SUM:
  case GACCRT_AVERAGE:
    op = ReduceOp::Sum;
    return true;
  case GACCRT_MAX:
    op = ReduceOp::Max;
    return true;
  case GACCRT_MIN:
    op = ReduceOp::Min;
    return true;
  case GACCRT_PRODUCT:
    op = ReduceOp::Product;
    return true;
  default:
    return false;
  }
}

const char *gaccrt::reductionKindName(int32_t kind) {
  static const char *const names[] = {"sum", "average", "max", "min",
                                      "product"};
  return kind >= 0 && kind < 5 ? names[kind] : nullptr;
}

namespace {

/// A validated all-reduce call.
struct AllReduceCall {
  void *data;
  int64_t count;
  int32_t dtype;
  int32_t kind;
  int64_t bucket;
  ReduceOp op;
};

/// Checks the arguments of an all-reduce entry point `caller` (aborting with
/// a message naming the bucket) and counts the call in the statistics.
AllReduceCall validateAllReduce(const char *caller, void *data, int64_t count,
                                int32_t dtype, int32_t kind, int64_t bucket) {
  const char *typeName = dtypeName(dtype);
  if (!typeName)
    fatal(std::string(caller) + ": unknown dtype " + std::to_string(dtype) +
          " for bucket " + std::to_string(bucket) +
          " (expected 0=f32, 1=f64, 2=bf16, 3=f16, 4=i32, 5=i64)");
  ReduceOp op;
  if (!toReduceOp(kind, op))
    fatal(std::string(caller) + ": unknown reduction kind " +
          std::to_string(kind) + " for bucket " + std::to_string(bucket) +
          " (expected 0=sum, 1=average, 2=max, 3=min, 4=product)");
  if (count < 0 || (count > 0 && !data))
    fatal(std::string(caller) + ": invalid buffer for bucket " +
          std::to_string(bucket) + " (" + std::to_string(count) +
          " elements at " + (data ? "a valid pointer" : "NULL") + ")");
  bool average = kind == GACCRT_AVERAGE;
  if (average && (dtype == GACCRT_I32 || dtype == GACCRT_I64))
    fatal(std::string(caller) + ": average of an integer (" + typeName +
          ") bucket " + std::to_string(bucket) + " is not supported; use sum");
  collectivesIssued.fetch_add(1, std::memory_order_relaxed);
  bytesReduced.fetch_add(count * dtypeBytes(dtype), std::memory_order_relaxed);
  int64_t world = currentWorldSizeOrOne();
  bytesMoved.fetch_add(2 * count * dtypeBytes(dtype) * (world - 1) / world,
                       std::memory_order_relaxed);
  return {data, count, dtype, kind, bucket, op};
}

/// The trace args of a collective run on track `track` that began at
/// `begin` and was started at `start`: a started one (track 1) says how long
/// it was queued behind earlier ones.
std::string startedTraceArgs(int track, double begin, double start) {
  return track ? ", \"overlapped\": true, \"queued_us\": " +
                     std::to_string(static_cast<int64_t>(begin - start))
               : std::string();
}

/// Reduces `call` over the ranks and records its trace event on `track`.
/// A started call's event begins at its start (`startedUs`, >= 0), and says
/// how long it was queued behind earlier ones.
void runAllReduce(Backend &backend, const AllReduceCall &call, int track,
                  double startedUs = -1.0) {
  bool tracing = traceEnabled();
  double begin = tracing ? gaccrt_now_us() : 0.0;
  double start = startedUs >= 0 ? startedUs : begin;
  if (backend.worldSize() > 1 && call.count > 0)
    reduce(backend, call.data, call.count, call.dtype, call.op,
           call.kind == GACCRT_AVERAGE);
  if (tracing) {
    double end = gaccrt_now_us();
    std::string args =
        "{\"bytes\": " + std::to_string(call.count * dtypeBytes(call.dtype)) +
        ", \"count\": " + std::to_string(call.count) + ", \"kind\": \"" +
        reductionKindName(call.kind) + "\", \"dtype\": \"" +
        dtypeName(call.dtype) + "\"" + startedTraceArgs(track, begin, start) +
        "}";
    traceComplete("all-reduce bucket " + std::to_string(call.bucket),
                  "collective", start, end - start, args, track);
  }
}

/// The communication thread of the overlapped collectives: it runs the
/// started calls (gaccrt_all_reduce_start, gaccrt_reduce_scatter_start,
/// gaccrt_all_gather_start) one after the other, in the order they were
/// started, with the same backend calls as the blocking entry points (so the
/// results are the same bits). Every other collective first waits until it
/// is idle, so the backend is never called from two threads at once and
/// every rank issues its collectives in program order.
struct CommunicationThread {
  /// A started call not yet finished: the buffer its wait names, its bucket
  /// and what it is ("all-reduce", "reduce-scatter", "all-gather").
  struct Pending {
    const void *buffer;
    int64_t bucket;
    const char *what;
  };
  std::mutex mutex;
  std::condition_variable changed;
  /// Started calls by handle, with the time of their start (trace); the
  /// work runs on the communication thread and is given its trace track
  /// and that time.
  std::deque<std::tuple<int64_t, std::function<void(int, double)>, double>>
      queue;
  /// Started calls not yet finished, by handle.
  std::map<int64_t, Pending> pending;
  /// The last handle given out.
  int64_t lastHandle = 0;
  bool running = false;
  bool stopping = false;
  std::thread thread;

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return;
      auto [handle, work, startedUs] = queue.front();
      lock.unlock();
      work(/*track=*/1, startedUs);
      lock.lock();
      queue.pop_front();
      pending.erase(handle);
      changed.notify_all();
    }
  }

  /// Starts `work`, a collective of `count` elements, and returns its
  /// handle; with one rank, no data, or a backend that must stay on this
  /// thread, runs it at once (after the started ones) instead.
  int64_t start(Backend &backend, int64_t count, const Pending &call,
                std::function<void(int, double)> work) {
    std::unique_lock<std::mutex> lock(mutex);
    int64_t handle = ++lastHandle;
    if (backend.worldSize() == 1 || count == 0 ||
        !backend.allowsCommunicationThread()) {
      changed.wait(lock, [&] { return pending.empty(); });
      lock.unlock();
      work(/*track=*/0, -1.0);
      return handle;
    }
    if (!running) {
      running = true;
      thread = std::thread([this] { loop(); });
    }
    pending[handle] = call;
    queue.emplace_back(handle, std::move(work),
                       traceEnabled() ? gaccrt_now_us() : 0.0);
    changed.notify_all();
    return handle;
  }

  /// Waits for the started call `handle` of `caller` (a call of `what` on
  /// `buffer`); aborts with a message for a handle that is not one.
  void wait(const char *caller, const char *what, int64_t handle,
            const void *buffer) {
    std::unique_lock<std::mutex> lock(mutex);
    if (handle <= 0 || handle > lastHandle)
      fatal(std::string(caller) + ": " + std::to_string(handle) +
            " is not a handle of a started collective (" +
            std::to_string(lastHandle) + " started so far)");
    auto it = pending.find(handle);
    if (it == pending.end())
      return; // finished already (or waited for before)
    int64_t bucket = it->second.bucket;
    if (std::strcmp(it->second.what, what) != 0)
      fatal(std::string(caller) + ": handle " + std::to_string(handle) +
            " (bucket " + std::to_string(bucket) + ") is a started " +
            it->second.what + ", not a " + what);
    if (it->second.buffer != buffer)
      fatal(std::string(caller) + ": handle " + std::to_string(handle) +
            " (bucket " + std::to_string(bucket) +
            ") was started on another buffer than the one waited for");
    bool tracing = traceEnabled();
    double start = tracing ? gaccrt_now_us() : 0.0;
    changed.wait(lock, [&] { return !pending.count(handle); });
    if (tracing)
      traceComplete(std::string("wait for ") + what + " bucket " +
                        std::to_string(bucket),
                    "wait", start, gaccrt_now_us() - start,
                    "{\"handle\": " + std::to_string(handle) + "}");
  }

  /// Waits until every started call has finished.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return pending.empty(); });
  }

  /// Drains and stops the thread (gaccrt_finalize).
  void stop() {
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return pending.empty(); });
      if (!running)
        return;
      stopping = true;
      changed.notify_all();
    }
    thread.join();
    std::lock_guard<std::mutex> lock(mutex);
    running = false;
    stopping = false;
  }
};

CommunicationThread &communicationThread() {
  static CommunicationThread *state = new CommunicationThread(); // never freed
  return *state;
}

} // namespace

static void drainStartedCollectives() { communicationThread().drain(); }
static void stopCommunicationThread() { communicationThread().stop(); }

void gaccrt_all_reduce(void *data, int64_t count, int32_t dtype, int32_t kind,
                       int64_t bucket) {
  Backend &backend = ensureInitialized();
  AllReduceCall call =
      validateAllReduce("gaccrt_all_reduce", data, count, dtype, kind, bucket);
  drainStartedCollectives();
  runAllReduce(backend, call, /*track=*/0);
}

int64_t gaccrt_all_reduce_start(void *data, int64_t count, int32_t dtype,
                                int32_t kind, int64_t bucket) {
  Backend &backend = ensureInitialized();
  AllReduceCall call = validateAllReduce("gaccrt_all_reduce_start", data, count,
                                         dtype, kind, bucket);
  return communicationThread().start(
      backend, count, {data, bucket, "all-reduce"},
      [&backend, call](int track, double startedUs) {
        runAllReduce(backend, call, track, startedUs);
      });
}

void gaccrt_all_reduce_wait(int64_t handle, void *data) {
  communicationThread().wait("gaccrt_all_reduce_wait", "all-reduce", handle,
                             data);
}

int64_t gaccrt_all_reduces_in_flight(void) {
  CommunicationThread &comm = communicationThread();
  std::lock_guard<std::mutex> lock(comm.mutex);
  return static_cast<int64_t>(comm.pending.size());
}

void gaccrt_all_reduce_memref_f32(float *allocated, float *aligned,
                                  int64_t offset, int64_t size, int64_t stride,
                                  int32_t kind, int64_t bucket) {
  (void)allocated;
  // A memref of at most one element has no meaningful stride.
  if (stride != 1 && size > 1)
    fatal("gaccrt_all_reduce_memref_f32: bucket " + std::to_string(bucket) +
          " has stride " + std::to_string(stride) +
          "; collectives need a contiguous memref (stride 1)");
  gaccrt_all_reduce(aligned ? aligned + offset : nullptr, size, GACCRT_F32,
                    kind, bucket);
}

void gaccrt_broadcast(void *data, int64_t bytes, int root) {
  Backend &backend = ensureInitialized();
  if (root < 0 || root >= backend.worldSize())
    fatal("gaccrt_broadcast: root " + std::to_string(root) +
          " is not a rank (world size " + std::to_string(backend.worldSize()) +
          ")");
  if (bytes < 0 || (bytes > 0 && !data))
    fatal("gaccrt_broadcast: invalid buffer (" + std::to_string(bytes) +
          " bytes)");
  drainStartedCollectives();
  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;
  if (backend.worldSize() > 1 && bytes > 0)
    backend.broadcast(data, bytes, root);
  if (tracing)
    traceComplete("broadcast", "collective", start, gaccrt_now_us() - start,
                  "{\"bytes\": " + std::to_string(bytes) +
                      ", \"root\": " + std::to_string(root) + "}");
}

int64_t gaccrt_collectives_issued(void) {
  return collectivesIssued.load(std::memory_order_relaxed);
}

int64_t gaccrt_bytes_reduced(void) {
  return bytesReduced.load(std::memory_order_relaxed);
}

int64_t gaccrt_bytes_moved(void) {
  return bytesMoved.load(std::memory_order_relaxed);
}

void gaccrt_reset_stats(void) {
  collectivesIssued = 0;
  bytesReduced = 0;
  bytesMoved = 0;
}

void gaccrt_internal_count_collective(int64_t bytes) {
  collectivesIssued.fetch_add(1, std::memory_order_relaxed);
  bytesReduced.fetch_add(bytes, std::memory_order_relaxed);
}

//===----------------------------------------------------------------------===//
// Sharded buckets (shard-optimizer-state)
//===----------------------------------------------------------------------===//

namespace {
/// The backend type of a reduce-scatter or all-gather dtype (bf16 and f16
/// reduce in f32 temporaries).
ReduceType shardedType(const char *caller, int32_t dtype, int64_t bucket) {
  switch (dtype) {
  case GACCRT_F32:
  case GACCRT_BF16:
  case GACCRT_F16:
    return ReduceType::F32;
  case GACCRT_F64:
    return ReduceType::F64;
  case GACCRT_I32:
    return ReduceType::I32;
  case GACCRT_I64:
    return ReduceType::I64;
  default:
    fatal(std::string(caller) + ": unsupported dtype " + std::to_string(dtype) +
          " for bucket " + std::to_string(bucket) +
          " (expected 0=f32, 1=f64, 2=bf16, 3=f16, 4=i32, 5=i64)");
  }
}

/// A validated reduce-scatter (`gather` false) or all-gather of a bucket.
struct ShardCall {
  const void *send;
  void *recv;
  int64_t count;
  int32_t dtype;
  int32_t kind;
  int64_t bucket;
  ReduceType type;
  bool gather;
};

/// Checks the arguments of a reduce-scatter or all-gather entry point
/// `caller` (aborting with a message naming the bucket) and counts the call.
ShardCall validateShardCall(const char *caller, const void *send, void *recv,
                            int64_t count, int32_t dtype, int32_t kind,
                            int64_t bucket, bool gather) {
  ReduceType type = shardedType(caller, dtype, bucket);
  if (!gather) {
    if (kind != GACCRT_SUM && kind != GACCRT_AVERAGE)
      fatal(std::string(caller) + ": unsupported reduction kind " +
            std::to_string(kind) + " for bucket " + std::to_string(bucket) +
            " (expected 0=sum, 1=average)");
    if (kind == GACCRT_AVERAGE &&
        (type == ReduceType::I32 || type == ReduceType::I64))
      fatal(std::string(caller) + ": average of an integer bucket " +
            std::to_string(bucket) + " is not supported; use sum");
  }
  if (count < 0 || (count > 0 && (!send || !recv)))
    fatal(std::string(caller) + ": invalid buffers for bucket " +
          std::to_string(bucket));
  int64_t world = currentWorldSizeOrOne(), bytes = count * dtypeBytes(dtype);
  collectivesIssued.fetch_add(1, std::memory_order_relaxed);
  if (!gather)
    bytesReduced.fetch_add(world * bytes, std::memory_order_relaxed);
  bytesMoved.fetch_add((world - 1) * bytes, std::memory_order_relaxed);
  return {send, recv, count, dtype, kind, bucket, type, gather};
}

/// Reduce-scatters a bf16 or f16 bucket through f32 temporaries (the whole
/// send buffer: world_size * count floats); each received element is
/// rounded back to 16 bits once, after the sum (and the division of an
/// average), as reduceHalf does for an all-reduce.
void reduceScatterHalf(Backend &backend, const ShardCall &call) {
  bool isBF16 = call.dtype == GACCRT_BF16;
  int64_t world = backend.worldSize();
  auto *send = static_cast<const uint16_t *>(call.send);
  auto *recv = static_cast<uint16_t *>(call.recv);
  std::vector<float> in(static_cast<size_t>(world * call.count)),
      out(static_cast<size_t>(call.count));
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = isBF16 ? gaccrt_bf16_to_f32(send[i]) : gaccrt_f16_to_f32(send[i]);
  backend.reduceScatter(in.data(), out.data(), call.count, ReduceType::F32,
                        ReduceOp::Sum);
  if (call.kind == GACCRT_AVERAGE)
    divideAll(out.data(), call.count, static_cast<float>(world));
  for (int64_t i = 0; i < call.count; ++i)
    recv[i] = isBF16 ? gaccrt_f32_to_bf16(out[i]) : gaccrt_f32_to_f16(out[i]);
}

/// Runs `call` and records its trace event (on `track`; a started call's
/// event begins at its start, `startedUs` >= 0).
void runShardCall(Backend &backend, const ShardCall &call, int track,
                  double startedUs = -1.0) {
  bool tracing = traceEnabled();
  double begin = tracing ? gaccrt_now_us() : 0.0;
  double start = startedUs >= 0 ? startedUs : begin;
  int64_t world = backend.worldSize();
  int64_t bytes = call.count * dtypeBytes(call.dtype);
  bool half = call.dtype == GACCRT_BF16 || call.dtype == GACCRT_F16;
  if (world == 1 || call.count == 0)
    std::memmove(call.recv, call.send, bytes);
  else if (call.gather)
    backend.allGather(call.send, call.recv, bytes);
  else if (half)
    reduceScatterHalf(backend, call);
  else
    backend.reduceScatter(call.send, call.recv, call.count, call.type,
                          ReduceOp::Sum);
  if (!call.gather && !half && world > 1 && call.kind == GACCRT_AVERAGE) {
    if (call.type == ReduceType::F32)
      divideAll(static_cast<float *>(call.recv), call.count,
                static_cast<float>(world));
    else
      divideAll(static_cast<double *>(call.recv), call.count,
                static_cast<double>(world));
  }
  if (!tracing)
    return;
  traceComplete(std::string(call.gather ? "all-gather" : "reduce-scatter") +
                    " bucket " + std::to_string(call.bucket),
                "collective", start, gaccrt_now_us() - start,
                "{\"bytes\": " + std::to_string(world * bytes) +
                    ", \"dtype\": \"" + dtypeName(call.dtype) + "\"" +
                    startedTraceArgs(track, begin, start) + "}",
                track);
}

/// Starts `call` on the communication thread (or runs it at once where
/// nothing can overlap) and returns its handle.
int64_t startShardCall(Backend &backend, const ShardCall &call) {
  return communicationThread().start(
      backend, call.count,
      {call.recv, call.bucket, call.gather ? "all-gather" : "reduce-scatter"},
      [&backend, call](int track, double startedUs) {
        runShardCall(backend, call, track, startedUs);
      });
}
} // namespace

void gaccrt_reduce_scatter(const void *send, void *recv, int64_t count,
                           int32_t dtype, int32_t kind, int64_t bucket) {
  Backend &backend = ensureInitialized();
  ShardCall call = validateShardCall("gaccrt_reduce_scatter", send, recv, count,
                                     dtype, kind, bucket, false);
  drainStartedCollectives();
  runShardCall(backend, call, /*track=*/0);
}

void gaccrt_all_gather(const void *send, void *recv, int64_t count,
                       int32_t dtype, int64_t bucket) {
  Backend &backend = ensureInitialized();
  ShardCall call = validateShardCall("gaccrt_all_gather", send, recv, count,
                                     dtype, GACCRT_SUM, bucket, true);
  drainStartedCollectives();
  runShardCall(backend, call, /*track=*/0);
}

int64_t gaccrt_reduce_scatter_start(const void *send, void *recv, int64_t count,
                                    int32_t dtype, int32_t kind,
                                    int64_t bucket) {
  Backend &backend = ensureInitialized();
  return startShardCall(
      backend, validateShardCall("gaccrt_reduce_scatter_start", send, recv,
                                 count, dtype, kind, bucket, false));
}

int64_t gaccrt_all_gather_start(const void *send, void *recv, int64_t count,
                                int32_t dtype, int64_t bucket) {
  Backend &backend = ensureInitialized();
  return startShardCall(backend, validateShardCall("gaccrt_all_gather_start",
                                                   send, recv, count, dtype,
                                                   GACCRT_SUM, bucket, true));
}

void gaccrt_reduce_scatter_wait(int64_t handle, const void *send, void *recv) {
  (void)send;
  communicationThread().wait("gaccrt_reduce_scatter_wait", "reduce-scatter",
                             handle, recv);
}

void gaccrt_all_gather_wait(int64_t handle, const void *send, void *recv) {
  (void)send;
  communicationThread().wait("gaccrt_all_gather_wait", "all-gather", handle,
                             recv);
}
