//===- NcclMpiTest.cpp - gaccrt_cuda_all_reduce across ranks --------------===//
//
// Run under `mpirun -np 2` on a machine with a CUDA device per rank (see
// runtime/test/CMakeLists.txt): checks the NCCL all-reduce of device memory
// (sum and average for f32, f64, bf16, f16, i32 and i64, a multi-megabyte
// bucket, ordering after compute-stream work), the started and waited-for
// all-reduces of overlap-all-reduce (two buckets in flight at once, waited
// for in the other order, unrelated compute work in between, results equal
// to the blocking all-reduce's), the collective and byte counts, and the
// per-rank trace files (the collectives on the "communication" track). Every
// rank checks its own results; the failure counts are summed with gaccrt's MPI
// all-reduce and rank 0 prints "gaccrt-nccl-mpi-test: PASS".
//
// Without a usable device on every rank, or when two ranks would share one
// device (NCCL needs a device per rank), it prints
// "gaccrt-nccl-mpi-test: skipped: <why>" and exits 0: that is what it does
// on machines without a GPU. With one rank it checks the single-rank path.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt_cuda.h"
#include "gaccrt/half.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace {

int rank = -1;
int failures = 0;

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      std::fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", rank,         \
                   __FILE__, __LINE__, #condition);                            \
      ++failures;                                                              \
    }                                                                          \
  } while (false)

bool fileContains(const std::string &path, const std::string &text) {
  std::ifstream file(path);
  if (!file)
    return false;
  std::string contents((std::istreambuf_iterator<char>(file)),
                       std::istreambuf_iterator<char>());
  return contents.find(text) != std::string::npos;
}

/// Why this run cannot test NCCL, agreed on by all ranks; empty to run.
std::string reasonToSkip(int worldSize) {
  // Every rank fills its slot with (device available, host id, device); the
  // sum over ranks gives everyone the whole table.
  std::vector<int64_t> table(3 * static_cast<size_t>(worldSize), 0);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  table[3 * rank] = gaccrt_cuda_available();
  table[3 * rank + 1] =
      static_cast<int64_t>(std::hash<std::string>()(host) >> 2);
  table[3 * rank + 2] = gaccrt_cuda_device();
  gaccrt_all_reduce(table.data(), static_cast<int64_t>(table.size()),
                    GACCRT_I64, GACCRT_SUM, 0);
  gaccrt_reset_stats();
  for (int r = 0; r < worldSize; ++r)
    if (table[3 * r] == 0)
      return "no CUDA device" +
             (worldSize > 1 ? " on rank " + std::to_string(r) : std::string());
  for (int r = 0; r < worldSize; ++r)
    for (int s = r + 1; s < worldSize; ++s)
      if (table[3 * r + 1] == table[3 * s + 1] &&
          table[3 * r + 2] == table[3 * s + 2])
        return "ranks " + std::to_string(r) + " and " + std::to_string(s) +
               " share CUDA device " + std::to_string(table[3 * r + 2]) +
               " (NCCL needs one device per rank)";
  return "";
}

/// Copies `values` to the device, all-reduces them there and copies them
/// back.
template <typename T>
std::vector<T> reduceOnDevice(const std::vector<T> &values, int32_t dtype,
                              int32_t kind, int64_t bucket) {
  int64_t bytes = static_cast<int64_t>(values.size() * sizeof(T));
  void *device = gaccrt_cuda_alloc(bytes);
  gaccrt_cuda_memcpy_h2d(device, values.data(), bytes);
  gaccrt_cuda_all_reduce(device, static_cast<int64_t>(values.size()), dtype,
                         kind, bucket);
  std::vector<T> result(values.size());
  gaccrt_cuda_memcpy_d2h(result.data(), device, bytes);
  gaccrt_cuda_free(device);
  return result;
}

int64_t checkSums(int worldSize) {
  // Rank r contributes (r + 1) * (i + 1): the sum is S * (i + 1) with
  // S = size * (size + 1) / 2, exact in every type used here.
  const double s = worldSize * (worldSize + 1) / 2.0;
  const int n = 5;
  int64_t bytes = 0;

  std::vector<float> f32(n);
  for (int i = 0; i < n; ++i)
    f32[i] = float((rank + 1) * (i + 1));
  std::vector<float> f32Sum = reduceOnDevice(f32, GACCRT_F32, GACCRT_SUM, 0);
  std::vector<float> f32Average =
      reduceOnDevice(f32Sum, GACCRT_F32, GACCRT_AVERAGE, 1);
  for (int i = 0; i < n; ++i) {
    CHECK(f32Sum[i] == float(s * (i + 1)));
    CHECK(f32Average[i] == float(s * (i + 1)));
  }
  bytes += 2 * n * 4;

  std::vector<double> f64(n);
  for (int i = 0; i < n; ++i)
    f64[i] = (rank + 1) * (i + 1) * 0.25;
  std::vector<double> f64Average =
      reduceOnDevice(f64, GACCRT_F64, GACCRT_AVERAGE, 2);
  for (int i = 0; i < n; ++i)
    CHECK(f64Average[i] == s * (i + 1) * 0.25 / worldSize);
  bytes += n * 8;

  std::vector<uint16_t> bf16(n), f16(n);
  for (int i = 0; i < n; ++i) {
    bf16[i] = gaccrt_f32_to_bf16(float((rank + 1) * (i + 1)) * 0.5f);
    f16[i] = gaccrt_f32_to_f16(float((rank + 1) * (i + 1)) * 0.5f);
  }
  std::vector<uint16_t> bf16Sum =
      reduceOnDevice(bf16, GACCRT_BF16, GACCRT_SUM, 3);
  std::vector<uint16_t> f16Sum = reduceOnDevice(f16, GACCRT_F16, GACCRT_SUM, 4);
  for (int i = 0; i < n; ++i) {
    CHECK(gaccrt_bf16_to_f32(bf16Sum[i]) == float(s * (i + 1) * 0.5));
    CHECK(gaccrt_f16_to_f32(f16Sum[i]) == float(s * (i + 1) * 0.5));
  }
  bytes += 2 * n * 2;

  std::vector<int32_t> i32(n);
  std::vector<int64_t> i64(n);
  for (int i = 0; i < n; ++i) {
    i32[i] = (rank + 1) * (i + 1);
    i64[i] = (int64_t(rank + 1) << 33) * (i + 1);
  }
  std::vector<int32_t> i32Sum = reduceOnDevice(i32, GACCRT_I32, GACCRT_SUM, 5);
  std::vector<int64_t> i64Sum = reduceOnDevice(i64, GACCRT_I64, GACCRT_SUM, 6);
  for (int i = 0; i < n; ++i) {
    CHECK(i32Sum[i] == int32_t(s) * (i + 1));
    CHECK(i64Sum[i] == (int64_t(s) << 33) * (i + 1));
  }
  bytes += n * 4 + n * 8;
  return bytes;
}

/// A bucket of 3M floats written on the compute stream right before the
/// all-reduce: the reduction must see the compute stream's work, and the
/// copy back must see the reduction.
int64_t checkLargeBucketAfterComputeWork(int worldSize) {
  const int64_t n = 3 << 20;
  std::vector<float> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    host[i] = float(rank + 1) * float(i % 1000);
  void *device = gaccrt_cuda_alloc(n * 4);
  gaccrt_cuda_memcpy_h2d(device, host.data(), n * 4);
  // Zero the first half on the compute stream (asynchronously).
  gaccrt_cuda_memset_zero(device, n * 2);
  gaccrt_cuda_all_reduce(device, n, GACCRT_F32, GACCRT_SUM, 7);
  gaccrt_cuda_memcpy_d2h(host.data(), device, n * 4);
  gaccrt_cuda_free(device);
  const float s = float(worldSize * (worldSize + 1) / 2);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    wrong += host[i] != (i < n / 2 ? 0.0f : s * float(i % 1000));
  CHECK(wrong == 0);
  return n * 4;
}

/// Two buckets started one after the other, each right after compute-stream
/// work writes it, with unrelated compute work while they reduce, waited for
/// in the other order: the results equal the blocking all-reduce's, bit for
/// bit, and nothing is left in flight.
int64_t checkStartedAllReduces(int worldSize) {
  const int64_t n = 1 << 20;
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    a[i] = float(rank + 1) * float(i % 1000) * 0.125f;
    b[i] = float(rank + 2) * float(i % 77);
  }
  void *da = gaccrt_cuda_alloc(n * 4), *db = gaccrt_cuda_alloc(n * 4);
  void *reference = gaccrt_cuda_alloc(n * 4),
       *scratch = gaccrt_cuda_alloc(n * 4);
  gaccrt_cuda_memcpy_h2d(da, a.data(), n * 4);
  gaccrt_cuda_memcpy_h2d(db, b.data(), n * 4);
  gaccrt_cuda_memcpy_h2d(reference, a.data(), n * 4);
  gaccrt_cuda_memset_zero(da, n); // the first quarter, asynchronously
  gaccrt_cuda_memset_zero(reference, n);
  int64_t ha = gaccrt_cuda_all_reduce_start(da, n, GACCRT_F32, GACCRT_SUM, 10);
  gaccrt_cuda_memset_zero(db, n * 2);
  int64_t hb =
      gaccrt_cuda_all_reduce_start(db, n, GACCRT_F32, GACCRT_AVERAGE, 11);
  CHECK(hb > ha && ha > 0);
  CHECK(gaccrt_cuda_all_reduces_in_flight() == 2);
  gaccrt_cuda_memcpy_d2d(scratch, reference, n * 4);
  gaccrt_cuda_all_reduce_wait(hb, db);
  gaccrt_cuda_all_reduce_wait(ha, da);
  CHECK(gaccrt_cuda_all_reduces_in_flight() == 0);
  gaccrt_cuda_all_reduce(reference, n, GACCRT_F32, GACCRT_SUM, 12);
  std::vector<float> ra(static_cast<size_t>(n)), rb(static_cast<size_t>(n)),
      rref(static_cast<size_t>(n));
  gaccrt_cuda_memcpy_d2h(ra.data(), da, n * 4);
  gaccrt_cuda_memcpy_d2h(rb.data(), db, n * 4);
  gaccrt_cuda_memcpy_d2h(rref.data(), reference, n * 4);
  for (void *p : {da, db, reference, scratch})
    gaccrt_cuda_free(p);
  const float s = float(worldSize * (worldSize + 1) / 2);
  const float s2 = float(worldSize * (worldSize + 3) / 2); // sum of rank + 2
  int64_t wrongA = 0, wrongB = 0, differs = 0;
  for (int64_t i = 0; i < n; ++i) {
    wrongA += ra[i] != (i < n / 4 ? 0.0f : s * float(i % 1000) * 0.125f);
    wrongB +=
        rb[i] != (i < n / 2 ? 0.0f : s2 * float(i % 77) / float(worldSize));
    differs += ra[i] != rref[i];
  }
  CHECK(wrongA == 0);
  CHECK(wrongB == 0);
  CHECK(differs == 0);
  return 3 * n * 4;
}

/// shard-optimizer-state's collectives on the device, blocking and started
/// (with compute work between the start and the wait): rank r receives
/// block r of the summed send buffers, the all-gather concatenates the
/// ranks' blocks; started and blocking results are the same bits.
int64_t checkShardCollectives(int worldSize) {
  const int64_t count = 1 << 18, total = count * worldSize;
  std::vector<float> send(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i)
    send[i] = float(rank + 1) * float(i % 113) * 0.5f;
  void *dsend = gaccrt_cuda_alloc(total * 4);
  void *blocking = gaccrt_cuda_alloc(count * 4),
       *started = gaccrt_cuda_alloc(count * 4);
  void *gatheredBlocking = gaccrt_cuda_alloc(total * 4),
       *gatheredStarted = gaccrt_cuda_alloc(total * 4),
       *scratch = gaccrt_cuda_alloc(total * 4);
  gaccrt_cuda_memcpy_h2d(dsend, send.data(), total * 4);
  gaccrt_cuda_reduce_scatter(dsend, blocking, count, GACCRT_F32, GACCRT_SUM,
                             20);
  int64_t scatter = gaccrt_cuda_reduce_scatter_start(
      dsend, started, count, GACCRT_F32, GACCRT_SUM, 21);
  gaccrt_cuda_memcpy_d2d(scratch, dsend, total * 4); // reads only
  gaccrt_cuda_reduce_scatter_wait(scatter, dsend, started);
  gaccrt_cuda_all_gather(started, gatheredBlocking, count, GACCRT_F32, 22);
  int64_t gather = gaccrt_cuda_all_gather_start(started, gatheredStarted, count,
                                                GACCRT_F32, 23);
  CHECK(gather > scatter && scatter > 0);
  gaccrt_cuda_all_gather_wait(gather, started, gatheredStarted);
  CHECK(gaccrt_cuda_all_reduces_in_flight() == 0);
  std::vector<float> rb(static_cast<size_t>(count)),
      rs(static_cast<size_t>(count)), gb(static_cast<size_t>(total)),
      gs(static_cast<size_t>(total));
  gaccrt_cuda_memcpy_d2h(rb.data(), blocking, count * 4);
  gaccrt_cuda_memcpy_d2h(rs.data(), started, count * 4);
  gaccrt_cuda_memcpy_d2h(gb.data(), gatheredBlocking, total * 4);
  gaccrt_cuda_memcpy_d2h(gs.data(), gatheredStarted, total * 4);
  for (void *p :
       {dsend, blocking, started, gatheredBlocking, gatheredStarted, scratch})
    gaccrt_cuda_free(p);
  const float s = float(worldSize * (worldSize + 1) / 2);
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i)
    wrong += rb[i] != s * float((rank * count + i) % 113) * 0.5f;
  CHECK(wrong == 0);
  CHECK(rb == rs);
  CHECK(gb == gs);
  for (int64_t i = 0; i < total; ++i)
    wrong += gb[i] != s * float(i % 113) * 0.5f;
  CHECK(wrong == 0);
  // Counted with their send bytes (the all-gathers with none).
  return 2 * total * 4;
}

} // namespace

int main(int argc, char **argv) {
  std::string tracePath = argc > 1 ? argv[1] : "";
  if (gaccrt_init() != 0)
    return 1;
  rank = gaccrt_rank();
  const int worldSize = gaccrt_world_size();
  // Prints "gaccrt: CUDA is not available: ..." where there is no device.
  gaccrt_cuda_init(-1);
  std::string skip = reasonToSkip(worldSize);
  if (!skip.empty()) {
    if (rank == 0)
      std::printf("gaccrt-nccl-mpi-test: skipped: %s\n", skip.c_str());
    gaccrt_cuda_finalize();
    gaccrt_finalize();
    return 0;
  }

  if (!tracePath.empty())
    gaccrt_trace_enable(tracePath.c_str());
  int64_t bytes = checkSums(worldSize);
  bytes += checkLargeBucketAfterComputeWork(worldSize);
  bytes += checkStartedAllReduces(worldSize);
  bytes += checkShardCollectives(worldSize);
  CHECK(gaccrt_collectives_issued() == 15);
  CHECK(gaccrt_bytes_reduced() == bytes);
  gaccrt_cuda_synchronize();
  double ms = gaccrt_cuda_elapsed_ms_since_mark();
  CHECK(ms >= 0.0);

  if (!tracePath.empty()) {
    CHECK(gaccrt_trace_write() == 0);
    std::string written = tracePath;
    if (worldSize > 1) {
      size_t slash = written.find_last_of('/');
      size_t dot = written.find_last_of('.');
      size_t at = dot != std::string::npos &&
                          (slash == std::string::npos || dot > slash)
                      ? dot
                      : written.size();
      written.insert(at, ".rank" + std::to_string(rank));
    }
    CHECK(fileContains(written, "\"name\":\"all-reduce bucket 7\","
                                "\"cat\":\"collective\""));
    CHECK(fileContains(written, "\"device\": \"cuda\""));
    CHECK(fileContains(written, "\"overlapped\": true"));
    if (worldSize > 1)
      CHECK(fileContains(written, "\"tid\":1,\"args\":{\"name\":"
                                  "\"communication\"}"));
  }

  gaccrt_cuda_finalize();
  int total = failures;
  gaccrt_all_reduce(&total, 1, GACCRT_I32, GACCRT_SUM, 99);
  if (rank == 0)
    std::printf("gaccrt-nccl-mpi-test: %s (%d ranks)\n",
                total == 0 ? "PASS" : "FAIL", worldSize);
  gaccrt_finalize();
  return total == 0 ? 0 : 1;
}
