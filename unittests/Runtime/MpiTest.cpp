//===- MpiTest.cpp - gaccrt collectives across ranks ----------------------===//
//
// Run under `mpirun -np 2` (see runtime/test/CMakeLists.txt): checks the MPI
// backend's all-reduce sum and average for f32, f64, bf16, f16, i32 and i64,
// reduce-scatter and all-gather, the collective and byte counts, broadcast,
// and the per-rank trace file
// names. Every rank checks its own results; the failure counts are summed
// with gaccrt itself and rank 0 prints the verdict.
//
// With `--abort-test` one rank makes an invalid call (an integer average)
// while the other waits in a barrier: the run must end with the error
// message on every rank instead of hanging.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"
#include "gaccrt/half.h"

#include <cstdio>
#include <cstring>
#include <fstream>
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

void checkSums() {
  const int size = gaccrt_world_size();
  // Rank r contributes (r + 1) * (i + 1): the sum is S * (i + 1) with
  // S = size * (size + 1) / 2, exact in every type used here.
  const double s = size * (size + 1) / 2.0;
  const int n = 5;
  int64_t expectedBytes = 0;

  std::vector<float> f32(n);
  for (int i = 0; i < n; ++i)
    f32[i] = float((rank + 1) * (i + 1));
  gaccrt_all_reduce(f32.data(), n, GACCRT_F32, GACCRT_SUM, 0);
  for (int i = 0; i < n; ++i)
    CHECK(f32[i] == float(s * (i + 1)));
  gaccrt_all_reduce(f32.data(), n, GACCRT_F32, GACCRT_AVERAGE, 1);
  for (int i = 0; i < n; ++i)
    CHECK(f32[i] == float(s * (i + 1)));
  expectedBytes += 2 * n * 4;

  std::vector<double> f64(n);
  for (int i = 0; i < n; ++i)
    f64[i] = (rank + 1) * (i + 1) * 0.25;
  gaccrt_all_reduce(f64.data(), n, GACCRT_F64, GACCRT_AVERAGE, 2);
  for (int i = 0; i < n; ++i)
    CHECK(f64[i] == s * (i + 1) * 0.25 / size);
  expectedBytes += n * 8;

  std::vector<uint16_t> bf16(n), f16(n);
  for (int i = 0; i < n; ++i) {
    bf16[i] = gaccrt_f32_to_bf16(float((rank + 1) * (i + 1)) * 0.5f);
    f16[i] = gaccrt_f32_to_f16(float((rank + 1) * (i + 1)) * 0.5f);
  }
  gaccrt_all_reduce(bf16.data(), n, GACCRT_BF16, GACCRT_SUM, 3);
  gaccrt_all_reduce(f16.data(), n, GACCRT_F16, GACCRT_AVERAGE, 4);
  for (int i = 0; i < n; ++i) {
    CHECK(gaccrt_bf16_to_f32(bf16[i]) == float(s * (i + 1) * 0.5));
    CHECK(gaccrt_f16_to_f32(f16[i]) == float(s * (i + 1) * 0.5 / size));
  }
  expectedBytes += 2 * n * 2;

  // A bf16 average is computed in f32 and rounded once: 1 and 1 + 2^-7
  // average to 1 + 2^-8, a tie that rounds to the even 1.0.
  uint16_t tie = gaccrt_f32_to_bf16(rank == 0 ? 1.0f : 1.0078125f);
  gaccrt_all_reduce(&tie, 1, GACCRT_BF16, GACCRT_AVERAGE, 5);
  if (size == 2)
    CHECK(tie == gaccrt_f32_to_bf16(1.00390625f));
  expectedBytes += 2;

  std::vector<int32_t> i32 = {rank + 1, -(rank + 1)};
  gaccrt_all_reduce(i32.data(), 2, GACCRT_I32, GACCRT_SUM, 6);
  CHECK(i32[0] == int32_t(s) && i32[1] == -int32_t(s));
  std::vector<int64_t> i64 = {(int64_t(1) << 40) * (rank + 1)};
  gaccrt_all_reduce(i64.data(), 1, GACCRT_I64, GACCRT_SUM, 7);
  CHECK(i64[0] == (int64_t(1) << 40) * int64_t(s));
  expectedBytes += 2 * 4 + 8;

  // The memref form: only the view [offset, offset + size) is reduced.
  std::vector<float> storage = {100.0f, float(rank + 1), float(rank + 1),
                                100.0f};
  gaccrt_all_reduce_memref_f32(storage.data(), storage.data(), 1, 2, 1,
                               GACCRT_SUM, 8);
  CHECK(storage[0] == 100.0f && storage[3] == 100.0f);
  CHECK(storage[1] == float(s) && storage[2] == float(s));
  expectedBytes += 2 * 4;

  CHECK(gaccrt_collectives_issued() == 9);
  CHECK(gaccrt_bytes_reduced() == expectedBytes);
}

/// Max, min and product over the ranks (rank r contributes r + 1), in
/// f32, bf16 (through the f32 temporaries) and i64.
void checkMaxMinProduct() {
  const int size = gaccrt_world_size();
  float f32[3] = {float(rank + 1), float(rank + 1), float(rank + 1)};
  gaccrt_all_reduce(&f32[0], 1, GACCRT_F32, GACCRT_MAX, 20);
  gaccrt_all_reduce(&f32[1], 1, GACCRT_F32, GACCRT_MIN, 21);
  gaccrt_all_reduce(&f32[2], 1, GACCRT_F32, GACCRT_PRODUCT, 22);
  float factorial = 1;
  for (int r = 1; r <= size; ++r)
    factorial *= r;
  CHECK(f32[0] == float(size) && f32[1] == 1.0f && f32[2] == factorial);
  uint16_t bf16 = gaccrt_f32_to_bf16(float(rank + 1));
  gaccrt_all_reduce(&bf16, 1, GACCRT_BF16, GACCRT_MAX, 23);
  CHECK(gaccrt_bf16_to_f32(bf16) == float(size));
  int64_t i64 = -(rank + 1);
  gaccrt_all_reduce(&i64, 1, GACCRT_I64, GACCRT_MIN, 24);
  CHECK(i64 == -size);
}

void checkBroadcast() {
  uint64_t seed = rank == 0 ? 0x5eed5eed12345678ULL : 0;
  gaccrt_broadcast(&seed, sizeof(seed), 0);
  CHECK(seed == 0x5eed5eed12345678ULL);
  int last = gaccrt_world_size() - 1;
  char text[16] = {0};
  if (rank == last)
    std::strcpy(text, "from the last");
  gaccrt_broadcast(text, sizeof(text), last);
  CHECK(std::strcmp(text, "from the last") == 0);
}

/// Started all-reduces give the same bits as blocking ones, finish in the
/// background (in flight while this thread computes), and a blocking
/// collective issued in between waits for them (no mismatched order).
void checkStartAndWait() {
  const int n = 1 << 20; // large enough not to finish inside the start
  std::vector<float> started(n), blocking(n), small(3);
  for (int i = 0; i < n; ++i)
    started[i] = blocking[i] = 0.1f * float((rank + 1) * (i % 97)) + 1e-3f * i;
  gaccrt_all_reduce(blocking.data(), n, GACCRT_F32, GACCRT_AVERAGE, 20);
  int64_t before = gaccrt_collectives_issued();
  int64_t handle = gaccrt_all_reduce_start(started.data(), n, GACCRT_F32,
                                           GACCRT_AVERAGE, 21);
  for (int i = 0; i < 3; ++i)
    small[i] = float(rank + i);
  int64_t second =
      gaccrt_all_reduce_start(small.data(), 3, GACCRT_F32, GACCRT_SUM, 22);
  CHECK(second > handle);
  CHECK(gaccrt_collectives_issued() == before + 2);
  gaccrt_all_reduce_wait(second, small.data());
  for (int i = 0; i < 3; ++i)
    CHECK(small[i] == float(2 * i + 1));
  gaccrt_all_reduce_wait(handle, started.data());
  CHECK(std::memcmp(started.data(), blocking.data(), n * sizeof(float)) == 0);
  CHECK(gaccrt_all_reduces_in_flight() == 0);

  // A blocking collective after a started one: it runs after it on every
  // rank.
  int64_t third =
      gaccrt_all_reduce_start(started.data(), n, GACCRT_F32, GACCRT_SUM, 23);
  int32_t one = 1;
  gaccrt_all_reduce(&one, 1, GACCRT_I32, GACCRT_SUM, 24);
  CHECK(one == gaccrt_world_size());
  CHECK(gaccrt_all_reduces_in_flight() == 0);
  gaccrt_all_reduce_wait(third, started.data());
}

/// shard-optimizer-state's collectives: rank r receives block r of the
/// ranks' summed (or averaged) buffers, and the all-gather concatenates the
/// ranks' blocks in rank order; both counted, with the bytes each rank sends.
void checkReduceScatterAllGather() {
  const int size = gaccrt_world_size(), count = 3;
  std::vector<float> send(size * count), recv(count, -1.0f);
  for (int i = 0; i < size * count; ++i)
    send[i] = float((rank + 1) * (i + 1));
  int64_t before = gaccrt_collectives_issued();
  int64_t movedBefore = gaccrt_bytes_moved();
  gaccrt_reduce_scatter(send.data(), recv.data(), count, GACCRT_F32, GACCRT_SUM,
                        30);
  float ranksSum = float(size * (size + 1) / 2);
  for (int i = 0; i < count; ++i)
    CHECK(recv[i] == ranksSum * float(rank * count + i + 1));
  gaccrt_reduce_scatter(send.data(), recv.data(), count, GACCRT_F32,
                        GACCRT_AVERAGE, 31);
  for (int i = 0; i < count; ++i)
    CHECK(recv[i] == ranksSum * float(rank * count + i + 1) / float(size));
  std::vector<double> mine = {double(rank), double(rank) + 0.5};
  std::vector<double> all(size * 2, -1.0);
  gaccrt_all_gather(mine.data(), all.data(), 2, GACCRT_F64, 32);
  for (int r = 0; r < size; ++r)
    CHECK(all[2 * r] == double(r) && all[2 * r + 1] == double(r) + 0.5);
  CHECK(gaccrt_collectives_issued() == before + 3);
  CHECK(gaccrt_bytes_moved() - movedBefore ==
        2 * (size - 1) * count * 4 + (size - 1) * 2 * 8);

  // bf16 and f16 buckets reduce in f32 and round once: rank r sends
  // (r + 1) * (i + 1) / 4 (exact in both), the sum is rounded to 16 bits.
  for (int32_t dtype : {GACCRT_BF16, GACCRT_F16}) {
    bool bf16 = dtype == GACCRT_BF16;
    std::vector<uint16_t> half(size * count), shard(count);
    for (int i = 0; i < size * count; ++i) {
      float value = float((rank + 1) * (i + 1)) / 4.0f;
      half[i] = bf16 ? gaccrt_f32_to_bf16(value) : gaccrt_f32_to_f16(value);
    }
    gaccrt_reduce_scatter(half.data(), shard.data(), count, dtype,
                          GACCRT_AVERAGE, 33);
    for (int i = 0; i < count; ++i) {
      float expected =
          ranksSum * float(rank * count + i + 1) / 4.0f / float(size);
      uint16_t rounded =
          bf16 ? gaccrt_f32_to_bf16(expected) : gaccrt_f32_to_f16(expected);
      CHECK(shard[i] == rounded);
    }
  }
}

/// Started reduce-scatters and all-gathers (overlapped shard-optimizer-state)
/// give the same bits as the blocking calls, run in start order with a
/// started all-reduce between them, and are counted like them.
void checkStartedReduceScatterAllGather() {
  const int size = gaccrt_world_size();
  const int count = 1 << 18; // large enough not to finish inside the start
  std::vector<float> send(size * count), blocking(count), started(count, -1.f);
  for (int i = 0; i < size * count; ++i)
    send[i] = 0.25f * float((rank + 1) * (i % 101)) + 1e-3f * float(i % 7);
  gaccrt_reduce_scatter(send.data(), blocking.data(), count, GACCRT_F32,
                        GACCRT_AVERAGE, 40);
  int64_t before = gaccrt_collectives_issued();
  int64_t movedBefore = gaccrt_bytes_moved();
  int64_t scatter = gaccrt_reduce_scatter_start(
      send.data(), started.data(), count, GACCRT_F32, GACCRT_AVERAGE, 41);
  std::vector<float> small = {float(rank), 1.0f};
  int64_t reduce =
      gaccrt_all_reduce_start(small.data(), 2, GACCRT_F32, GACCRT_SUM, 42);
  std::vector<double> mine(count, double(rank) + 0.5), all(size * count, -1);
  int64_t gather =
      gaccrt_all_gather_start(mine.data(), all.data(), count, GACCRT_F64, 43);
  CHECK(scatter < reduce && reduce < gather);
  CHECK(gaccrt_collectives_issued() == before + 3);
  gaccrt_all_gather_wait(gather, mine.data(), all.data());
  for (int r = 0; r < size; ++r)
    CHECK(all[size_t(r) * count] == double(r) + 0.5 &&
          all[size_t(r) * count + count - 1] == double(r) + 0.5);
  gaccrt_reduce_scatter_wait(scatter, send.data(), started.data());
  CHECK(std::memcmp(started.data(), blocking.data(), count * sizeof(float)) ==
        0);
  gaccrt_all_reduce_wait(reduce, small.data());
  CHECK(small[1] == float(size));
  CHECK(gaccrt_all_reduces_in_flight() == 0);
  CHECK(gaccrt_bytes_moved() - movedBefore ==
        (size - 1) * int64_t(count) * 4 + 2 * 2 * 4 * (size - 1) / size +
            (size - 1) * int64_t(count) * 8);
}

void checkTraceFiles(const std::string &path) {
  CHECK(gaccrt_trace_write() == 0);
  gaccrt_barrier();
  // trace.json -> trace.rank<r>.json for every rank.
  size_t dot = path.rfind('.');
  for (int r = 0; r < gaccrt_world_size(); ++r) {
    std::string rankPath =
        path.substr(0, dot) + ".rank" + std::to_string(r) + path.substr(dot);
    CHECK(
        fileContains(rankPath, "\"name\":\"rank " + std::to_string(r) + "\""));
    CHECK(fileContains(rankPath, "\"pid\":" + std::to_string(r) + ","));
    CHECK(fileContains(rankPath, "all-reduce bucket 3"));
    CHECK(fileContains(rankPath, "\"dtype\": \"bf16\""));
    // The started all-reduces ran on the communication thread's track.
    CHECK(fileContains(rankPath, "\"name\":\"communication\""));
    CHECK(fileContains(rankPath, "\"overlapped\": true, \"queued_us\": "));
    CHECK(fileContains(rankPath, "\"name\":\"all-reduce bucket 21\""));
  }
  CHECK(!fileContains(path, "traceEvents"));
}

} // namespace

int main(int argc, char **argv) {
  if (gaccrt_init() != 0)
    return 1;
  rank = gaccrt_rank();
  CHECK(std::strcmp(gaccrt_backend_name(), "mpi") == 0);
  CHECK(gaccrt_world_size() == 2);

  if (argc > 1 && std::strcmp(argv[1], "--abort-test") == 0) {
    if (rank == 1) {
      int32_t value = 1;
      gaccrt_all_reduce(&value, 1, GACCRT_I32, GACCRT_AVERAGE, 9);
    }
    gaccrt_barrier(); // rank 0 waits here until MPI_Abort ends it
    std::fprintf(stderr, "rank %d: the abort did not end the run\n", rank);
    return 1;
  }

  std::string tracePath = argc > 1 ? argv[1] : "gaccrt-mpi-trace.json";
  std::remove(tracePath.c_str());
  gaccrt_trace_enable(tracePath.c_str());
  gaccrt_reset_stats();
  checkSums();
  checkMaxMinProduct();
  checkBroadcast();
  checkStartAndWait();
  checkReduceScatterAllGather();
  checkStartedReduceScatterAllGather();
  gaccrt_barrier();
  checkTraceFiles(tracePath);

  int32_t totalFailures = failures;
  gaccrt_all_reduce(&totalFailures, 1, GACCRT_I32, GACCRT_SUM, 99);
  if (rank == 0)
    std::printf("gaccrt-mpi-test: %s (%d failed checks on %d ranks)\n",
                totalFailures == 0 ? "PASS" : "FAIL", totalFailures,
                gaccrt_world_size());
  gaccrt_finalize();
  return totalFailures == 0 ? 0 : 1;
}
