//===- CollectiveTest.cpp - Lifecycle and single-rank collectives ---------===//

#include "gaccrt/gaccrt.h"
#include "gaccrt/half.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int gaccrtTestCallFromC(void);

namespace {

TEST(Lifecycle, SingleBackendIsIdempotent) {
  ASSERT_EQ(gaccrt_init(), 0);
  ASSERT_EQ(gaccrt_init(), 0);
  EXPECT_STREQ(gaccrt_backend_name(), "single");
  EXPECT_EQ(gaccrt_rank(), 0);
  EXPECT_EQ(gaccrt_world_size(), 1);
  gaccrt_barrier();
}

TEST(Lifecycle, FinalizeWritesTheTraceAndAllowsSingleReinit) {
  ASSERT_EQ(gaccrt_init(), 0);
  std::string path = testing::TempDir() + "gaccrt-finalize-trace.json";
  std::remove(path.c_str());
  gaccrt_trace_enable(path.c_str());
  gaccrt_trace_region_begin(0);
  gaccrt_trace_region_end(0);
  gaccrt_finalize();
  EXPECT_EQ(gaccrt_trace_enabled(), 0);
  std::ifstream written(path);
  std::string text((std::istreambuf_iterator<char>(written)),
                   std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"micro-batch 0\""), std::string::npos) << text;
  gaccrt_finalize(); // idempotent
  ASSERT_EQ(gaccrt_init(), 0);
  EXPECT_STREQ(gaccrt_backend_name(), "single");
}

TEST(Lifecycle, HeaderWorksFromC) { EXPECT_EQ(gaccrtTestCallFromC(), 0); }

TEST(LifecycleDeathTest, UnknownBackendIsAnError) {
  // Runs in a fresh process (threadsafe death tests), before any init.
  EXPECT_EXIT(
      {
        setenv("GACCRT_BACKEND", "nccl-on-cpu", 1);
        std::exit(gaccrt_init() == 0 ? 0 : 3);
      },
      testing::ExitedWithCode(3),
      "gaccrt: error: GACCRT_BACKEND must be 'single' or 'mpi', got "
      "'nccl-on-cpu'");
}

TEST(Collectives, SingleRankReduceScatterAndAllGatherCopy) {
  ASSERT_EQ(gaccrt_init(), 0);
  gaccrt_reset_stats();
  std::vector<float> send = {1.0f, 2.0f, 3.0f}, recv(3, 0.0f);
  gaccrt_reduce_scatter(send.data(), recv.data(), 3, GACCRT_F32, GACCRT_AVERAGE,
                        0);
  EXPECT_EQ(recv, send);
  std::vector<int64_t> mine = {4, 5}, all(2, 0);
  gaccrt_all_gather(mine.data(), all.data(), 2, GACCRT_I64, 1);
  EXPECT_EQ(all, mine);
  EXPECT_EQ(gaccrt_collectives_issued(), 2);
  EXPECT_EQ(gaccrt_bytes_reduced(), 3 * 4);
  // Nothing crosses the network with one rank.
  EXPECT_EQ(gaccrt_bytes_moved(), 0);
}

TEST(Collectives, SingleRankHalfReduceScatterCopies) {
  ASSERT_EQ(gaccrt_init(), 0);
  std::vector<uint16_t> send = {gaccrt_f32_to_bf16(1.5f),
                                gaccrt_f32_to_bf16(-2.25f)},
                        recv(2, 0);
  gaccrt_reduce_scatter(send.data(), recv.data(), 2, GACCRT_BF16,
                        GACCRT_AVERAGE, 0);
  EXPECT_EQ(recv, send);
}

TEST(Collectives, SingleRankStartedReduceScatterAndAllGatherCopy) {
  ASSERT_EQ(gaccrt_init(), 0);
  gaccrt_reset_stats();
  std::vector<float> send = {1.0f, 2.0f, 3.0f}, recv(3, 0.0f);
  int64_t scatter = gaccrt_reduce_scatter_start(send.data(), recv.data(), 3,
                                                GACCRT_F32, GACCRT_AVERAGE, 0);
  std::vector<int64_t> mine = {4, 5}, all(2, 0);
  int64_t gather =
      gaccrt_all_gather_start(mine.data(), all.data(), 2, GACCRT_I64, 1);
  EXPECT_GT(scatter, 0);
  EXPECT_GT(gather, scatter);
  gaccrt_all_gather_wait(gather, mine.data(), all.data());
  gaccrt_reduce_scatter_wait(scatter, send.data(), recv.data());
  // Waiting twice is harmless.
  gaccrt_reduce_scatter_wait(scatter, send.data(), recv.data());
  EXPECT_EQ(recv, send);
  EXPECT_EQ(all, mine);
  EXPECT_EQ(gaccrt_collectives_issued(), 2);
  EXPECT_EQ(gaccrt_bytes_moved(), 0);
}

TEST(CollectivesDeathTest, StartedReduceScatterValidatesLikeTheBlockingCall) {
  ASSERT_EQ(gaccrt_init(), 0);
  float f[2] = {0, 0};
  EXPECT_DEATH(
      gaccrt_reduce_scatter_start(f, f, 2, GACCRT_F32, GACCRT_MAX, 8),
      "gaccrt_reduce_scatter_start: unsupported reduction kind 2 for bucket 8");
  EXPECT_DEATH(gaccrt_all_gather_start(f, nullptr, 2, GACCRT_F32, 9),
               "gaccrt_all_gather_start: invalid buffers for bucket 9");
}

TEST(CollectivesDeathTest, ReduceScatterRefusesUnknownTypesAndMax) {
  ASSERT_EQ(gaccrt_init(), 0);
  uint16_t half[2] = {0, 0};
  EXPECT_DEATH(gaccrt_reduce_scatter(half, half, 2, 9, GACCRT_SUM, 7),
               "gaccrt_reduce_scatter: unsupported dtype 9 for bucket 7");
  float f[2] = {0, 0};
  EXPECT_DEATH(gaccrt_reduce_scatter(f, f, 2, GACCRT_F32, GACCRT_MAX, 8),
               "gaccrt_reduce_scatter: unsupported reduction kind 2 for "
               "bucket 8");
}

TEST(LifecycleDeathTest, AbortPrintsTheMessage) {
  EXPECT_DEATH(gaccrt_abort("something broke"),
               "gaccrt: error: something broke");
}

TEST(Collectives, SingleRankSumAndAverageAreIdentityButCounted) {
  ASSERT_EQ(gaccrt_init(), 0);
  gaccrt_reset_stats();
  EXPECT_EQ(gaccrt_collectives_issued(), 0);
  EXPECT_EQ(gaccrt_bytes_reduced(), 0);

  std::vector<float> f32 = {1.5f, -2.0f, 3.25f};
  gaccrt_all_reduce(f32.data(), 3, GACCRT_F32, GACCRT_SUM, 0);
  EXPECT_EQ(f32, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  gaccrt_all_reduce(f32.data(), 3, GACCRT_F32, GACCRT_AVERAGE, 1);
  EXPECT_EQ(f32, (std::vector<float>{1.5f, -2.0f, 3.25f}));

  std::vector<double> f64 = {0.1, 0.2};
  gaccrt_all_reduce(f64.data(), 2, GACCRT_F64, GACCRT_AVERAGE, 2);
  EXPECT_EQ(f64, (std::vector<double>{0.1, 0.2}));

  std::vector<int64_t> i64 = {7, -9};
  gaccrt_all_reduce(i64.data(), 2, GACCRT_I64, GACCRT_SUM, 3);
  EXPECT_EQ(i64, (std::vector<int64_t>{7, -9}));

  std::vector<int32_t> i32 = {42};
  gaccrt_all_reduce(i32.data(), 1, GACCRT_I32, GACCRT_SUM, 4);
  EXPECT_EQ(i32[0], 42);

  EXPECT_EQ(gaccrt_collectives_issued(), 5);
  EXPECT_EQ(gaccrt_bytes_reduced(), 3 * 4 + 3 * 4 + 2 * 8 + 2 * 8 + 4);

  // An empty bucket is still one collective.
  gaccrt_all_reduce(nullptr, 0, GACCRT_F32, GACCRT_SUM, 5);
  EXPECT_EQ(gaccrt_collectives_issued(), 6);

  gaccrt_reset_stats();
  EXPECT_EQ(gaccrt_collectives_issued(), 0);
  EXPECT_EQ(gaccrt_bytes_reduced(), 0);
}

TEST(Collectives, SixteenBitFloatsAreCountedAtTheirSize) {
  ASSERT_EQ(gaccrt_init(), 0);
  gaccrt_reset_stats();
  std::vector<float> values = {1.0f, -0.5f, 3.0e-3f, 65504.0f, 0.0f};
  std::vector<uint16_t> bf16, f16;
  for (float value : values) {
    bf16.push_back(gaccrt_f32_to_bf16(value));
    f16.push_back(gaccrt_f32_to_f16(value));
  }
  std::vector<uint16_t> bf16Before = bf16, f16Before = f16;
  gaccrt_all_reduce(bf16.data(), int64_t(bf16.size()), GACCRT_BF16,
                    GACCRT_AVERAGE, 0);
  gaccrt_all_reduce(f16.data(), int64_t(f16.size()), GACCRT_F16, GACCRT_SUM, 1);
  EXPECT_EQ(bf16, bf16Before);
  EXPECT_EQ(f16, f16Before);
  EXPECT_EQ(gaccrt_collectives_issued(), 2);
  EXPECT_EQ(gaccrt_bytes_reduced(), 2 * 2 * int64_t(values.size()));
}

TEST(Collectives, MemrefVariantUsesTheAlignedPointerAndOffset) {
  ASSERT_EQ(gaccrt_init(), 0);
  gaccrt_reset_stats();
  std::vector<float> storage = {9.0f, 1.0f, 2.0f, 3.0f};
  gaccrt_all_reduce_memref_f32(storage.data(), storage.data(), 1, 3, 1,
                               GACCRT_AVERAGE, 7);
  EXPECT_EQ(storage, (std::vector<float>{9.0f, 1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(gaccrt_collectives_issued(), 1);
  EXPECT_EQ(gaccrt_bytes_reduced(), 12);
}

TEST(Collectives, StartAndWaitOnOneRankFinishAtTheStart) {
  ASSERT_EQ(gaccrt_init(), 0);
  gaccrt_reset_stats();
  std::vector<float> bucket0 = {1.0f, 2.0f}, bucket1 = {3.0f};
  int64_t first =
      gaccrt_all_reduce_start(bucket0.data(), 2, GACCRT_F32, GACCRT_AVERAGE, 0);
  int64_t second =
      gaccrt_all_reduce_start(bucket1.data(), 1, GACCRT_F32, GACCRT_SUM, 1);
  EXPECT_GT(first, 0);
  EXPECT_GT(second, first);
  // One rank: nothing is left to overlap.
  EXPECT_EQ(gaccrt_all_reduces_in_flight(), 0);
  gaccrt_all_reduce_wait(second, bucket1.data());
  gaccrt_all_reduce_wait(first, bucket0.data());
  gaccrt_all_reduce_wait(first, bucket0.data()); // waiting again is harmless
  EXPECT_EQ(bucket0, (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(bucket1, (std::vector<float>{3.0f}));
  EXPECT_EQ(gaccrt_collectives_issued(), 2);
  EXPECT_EQ(gaccrt_bytes_reduced(), 12);
}

TEST(Collectives, BroadcastOnOneRankKeepsTheData) {
  ASSERT_EQ(gaccrt_init(), 0);
  uint64_t seed = 0x1234567890abcdefULL;
  gaccrt_broadcast(&seed, sizeof(seed), 0);
  EXPECT_EQ(seed, 0x1234567890abcdefULL);
}

TEST(CollectivesDeathTest, IntegerAverageIsAnError) {
  int32_t value = 1;
  EXPECT_DEATH(gaccrt_all_reduce(&value, 1, GACCRT_I32, GACCRT_AVERAGE, 3),
               "gaccrt: error: gaccrt_all_reduce: average of an integer "
               "\\(i32\\) bucket 3 is not supported; use sum");
}

TEST(CollectivesDeathTest, UnknownDTypeAndKindAreErrors) {
  float value = 1.0f;
  EXPECT_DEATH(gaccrt_all_reduce(&value, 1, 9, GACCRT_SUM, 0),
               "unknown dtype 9");
  EXPECT_DEATH(gaccrt_all_reduce(&value, 1, GACCRT_F32, 7, 0),
               "unknown reduction kind 7");
}

TEST(CollectivesDeathTest, StartValidatesLikeTheBlockingCall) {
  int32_t value = 1;
  EXPECT_DEATH(
      gaccrt_all_reduce_start(&value, 1, GACCRT_I32, GACCRT_AVERAGE, 4),
      "gaccrt_all_reduce_start: average of an integer \\(i32\\) bucket 4");
}

TEST(CollectivesDeathTest, WaitNeedsAStartedHandle) {
  float value = 1.0f;
  EXPECT_DEATH(gaccrt_all_reduce_wait(1000000, &value),
               "gaccrt_all_reduce_wait: 1000000 is not a handle of a "
               "started collective");
  EXPECT_DEATH(gaccrt_all_reduce_wait(0, &value), "0 is not a handle");
  EXPECT_DEATH(gaccrt_reduce_scatter_wait(1000000, &value, &value),
               "gaccrt_reduce_scatter_wait: 1000000 is not a handle");
  EXPECT_DEATH(gaccrt_all_gather_wait(-1, &value, &value),
               "gaccrt_all_gather_wait: -1 is not a handle");
}

TEST(CollectivesDeathTest, StridedMemrefIsAnError) {
  std::vector<float> storage(8, 0.0f);
  EXPECT_DEATH(gaccrt_all_reduce_memref_f32(storage.data(), storage.data(), 0,
                                            4, 2, GACCRT_SUM, 1),
               "bucket 1 has stride 2; collectives need a contiguous memref");
}

TEST(CollectivesDeathTest, BroadcastRootMustBeARank) {
  char byte = 0;
  EXPECT_DEATH(gaccrt_broadcast(&byte, 1, 1),
               "gaccrt_broadcast: root 1 is not a rank \\(world size 1\\)");
}

} // namespace
