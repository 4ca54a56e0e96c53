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
#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
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
  state.active.store(state.backend.get(), std::memory_order_release);
  return 0;
}

void gaccrt_finalize(void) {
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

void gaccrt_barrier(void) { ensureInitialized().barrier(); }

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

void gaccrt_all_reduce(void *data, int64_t count, int32_t dtype, int32_t kind,
                       int64_t bucket) {
  Backend &backend = ensureInitialized();
  const char *typeName = dtypeName(dtype);
  if (!typeName)
    fatal("gaccrt_all_reduce: unknown dtype " + std::to_string(dtype) +
          " for bucket " + std::to_string(bucket) +
          " (expected 0=f32, 1=f64, 2=bf16, 3=f16, 4=i32, 5=i64)");
  ReduceOp op;
  if (!toReduceOp(kind, op))
    fatal("gaccrt_all_reduce: unknown reduction kind " + std::to_string(kind) +
          " for bucket " + std::to_string(bucket) +
          " (expected 0=sum, 1=average, 2=max, 3=min, 4=product)");
  if (count < 0 || (count > 0 && !data))
    fatal("gaccrt_all_reduce: invalid buffer for bucket " +
          std::to_string(bucket) + " (" + std::to_string(count) +
          " elements at " + (data ? "a valid pointer" : "NULL") + ")");
  bool average = kind == GACCRT_AVERAGE;
  if (average && (dtype == GACCRT_I32 || dtype == GACCRT_I64))
    fatal(std::string("gaccrt_all_reduce: average of an integer (") + typeName +
          ") bucket " + std::to_string(bucket) + " is not supported; use sum");

  int64_t bytes = count * dtypeBytes(dtype);
  collectivesIssued.fetch_add(1, std::memory_order_relaxed);
  bytesReduced.fetch_add(bytes, std::memory_order_relaxed);

  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;
  if (backend.worldSize() > 1 && count > 0)
    reduce(backend, data, count, dtype, op, average);
  if (tracing) {
    double end = gaccrt_now_us();
    std::string args = "{\"bytes\": " + std::to_string(bytes) +
                       ", \"count\": " + std::to_string(count) +
                       ", \"kind\": \"" + reductionKindName(kind) +
                       "\", \"dtype\": \"" + typeName + "\"}";
    traceComplete("all-reduce bucket " + std::to_string(bucket), "collective",
                  start, end - start, args);
  }
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

void gaccrt_reset_stats(void) {
  collectivesIssued = 0;
  bytesReduced = 0;
}

void gaccrt_internal_count_collective(int64_t bytes) {
  collectivesIssued.fetch_add(1, std::memory_order_relaxed);
  bytesReduced.fetch_add(bytes, std::memory_order_relaxed);
}
