//===- Internal.h - Shared declarations of the gaccrt implementation ------===//
//
// The interface between the runtime's front (Core.cpp: lifecycle, statistics,
// dtype handling) and its collective backends (SingleBackend.cpp,
// MpiBackend.cpp), plus the small helpers the other parts share. A backend
// only moves bytes and sums f32/f64/i32/i64 elements; everything else
// (16-bit floats, averaging, counting, tracing) is done once in the front.
//
//===----------------------------------------------------------------------===//

#ifndef GACCRT_LIB_INTERNAL_H
#define GACCRT_LIB_INTERNAL_H

#include "gaccrt/gaccrt.h"

#include <cstdint>
#include <memory>
#include <string>

extern "C" {
/// Counts one collective of `bytes` bytes in gaccrt_collectives_issued and
/// gaccrt_bytes_reduced: how libgaccrt_cuda's device all-reduce shares the
/// statistics. Exported (gaccrt_* prefix) but not part of the public API.
GACCRT_API void gaccrt_internal_count_collective(int64_t bytes);
/// The library ("onednn", "openblas"; "none" when no GEMM ran or k = 0)
/// of the calling thread's last gaccrt_sgemm: how the unit tests see which
/// library a layout went to. Exported but not part of the public API.
GACCRT_API const char *gaccrt_internal_last_gemm_library(void);
/// The threads that ran the calling thread's last gaccrt_sgemm when
/// gaccrt's AVX-512 kernels ran it, else 0. Exported but not part of the
/// public API.
GACCRT_API int32_t gaccrt_internal_last_gemm_threads(void);
/// Whether the calling thread's last gaccrt_sgemm_pair or
/// gaccrt_sgemm_rows_pair ran as one paired pass of gaccrt's kernels (1) or
/// as two gaccrt_sgemm calls (0).
GACCRT_API int32_t gaccrt_internal_last_gemm_paired(void);
/// Sets the GEMM thread count (OpenBLAS's, which gaccrt's kernels follow):
/// how the unit tests run the kernels on several threads. Exported but not
/// part of the public API.
GACCRT_API void gaccrt_internal_set_gemm_threads(int32_t threads);
/// The GEMM thread count.
GACCRT_API int32_t gaccrt_internal_gemm_threads(void);
/// The library "auto" keeps for a shape whose libraries `timed` (bit 0
/// oneDNN, 1 OpenBLAS, 2 the AVX-512 kernels) had the fastest calls
/// `fastest_us` (indexed the same way): 0, 1 or 2. `incumbent` is one of the
/// timed ones. How the unit tests check the decision. Exported but not part
/// of the public API.
GACCRT_API int32_t gaccrt_internal_choose_gemm_library(const double *fastest_us,
                                                       int32_t timed,
                                                       int32_t incumbent);
/// gaccrt_trace_complete on track (trace tid) `track`: how libgaccrt_cuda
/// puts the communication stream's collectives on track 1, "communication".
/// Exported (gaccrt_* prefix) but not part of the public API.
GACCRT_API void
gaccrt_internal_trace_complete_on_track(const char *name, const char *category,
                                        double ts_us, double dur_us,
                                        const char *args_json, int32_t track);
}

namespace gaccrt {

/// Element types a backend reduces natively.
enum class ReduceType { F32, F64, I32, I64 };
/// Elementwise reductions a backend performs.
enum class ReduceOp { Sum, Max, Min, Product };

/// The backend operation of a gaccrt reduction kind (average: Sum), or
/// false for an unknown kind.
bool toReduceOp(int32_t kind, ReduceOp &op);
/// "sum", "average", "max", "min", "product", or null.
const char *reductionKindName(int32_t kind);

/// A collective backend. All calls except `name` happen after `init`
/// succeeded and before `finalize`.
class Backend {
public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  /// Returns false with a message in `error` on failure.
  virtual bool init(std::string &error) = 0;
  virtual void finalize() = 0;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  virtual void barrier() = 0;
  /// In-place elementwise reduction over all ranks.
  virtual void allReduce(void *data, int64_t count, ReduceType type,
                         ReduceOp op) = 0;
  virtual void broadcast(void *data, int64_t bytes, int root) = 0;
  /// Reduces `worldSize() * count` elements of `send` over all ranks and
  /// leaves this rank's block of `count` in `recv`.
  virtual void reduceScatter(const void *send, void *recv, int64_t count,
                             ReduceType type, ReduceOp op) = 0;
  /// Gathers every rank's `bytes` bytes of `send` into `recv`, by rank.
  virtual void allGather(const void *send, void *recv, int64_t bytes) = 0;
  /// True when the collectives may be called from a thread other than the
  /// one that initialized the backend (one thread at a time): the
  /// communication thread of gaccrt_all_reduce_start then runs them.
  virtual bool allowsCommunicationThread() const { return false; }
  /// Prints nothing; ends every rank with a failure status.
  [[noreturn]] virtual void abortAll() = 0;
};

std::unique_ptr<Backend> createSingleBackend();
std::unique_ptr<Backend> createMpiBackend();

/// The collective timeout of gaccrt_set_collective_timeout (0: none).
double collectiveTimeoutSeconds();

/// Prints "gaccrt: error: <message>" on stderr.
void printError(const std::string &message);

/// printError, then aborts every rank.
[[noreturn]] void fatal(const std::string &message);

/// The rank and world size for file naming and trace process ids, without
/// initializing the runtime (0 and 1 before gaccrt_init).
int currentRankOrZero();
int currentWorldSizeOrOne();

/// Records a complete trace event if tracing is enabled (see gaccrt.h), on
/// track (trace tid) `track`: 0 for the calling threads, 1 for the
/// communication thread of the overlapped all-reduces (and the CUDA
/// backend's communication stream).
void traceComplete(const std::string &name, const char *category, double tsUs,
                   double durUs, const std::string &argsJson, int track = 0);
bool traceEnabled();

/// The trace track of the calling thread's events recorded on track 0
/// (0: the calling threads' own; gaccrt_parallel_copies puts the copies run
/// off the caller on kCopiesTraceTrack and up).
void setThreadTraceTrack(int track);
constexpr int kCopiesTraceTrack = 2;

} // namespace gaccrt

#endif // GACCRT_LIB_INTERNAL_H
