//===- CollectiveTimeoutTest.cpp - Deadlines of collective waits ----------===//
//
// The timeout logic the MPI and NCCL backends share (lib/CollectiveTimeout.h),
// tested with a fake clock: no ranks, no device and no real waiting needed.
//
//===----------------------------------------------------------------------===//

#include "CollectiveTimeout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using gaccrt::PollOutcome;

/// A clock that advances only when the poll loop sleeps.
struct FakeClock {
  double now = 100.0;
  std::vector<long> sleeps;
  double operator()() const { return now; }
  void sleep(long us) {
    sleeps.push_back(us);
    now += us * 1e-6;
  }
};

TEST(CollectiveTimeout, PollStopsAtTheDeadlineWhenNeverDone) {
  FakeClock clock;
  int polls = 0;
  PollOutcome outcome = gaccrt::pollWithClock(
      [&] {
        ++polls;
        return false;
      },
      2.0, [&] { return clock(); }, [&](long us) { clock.sleep(us); });
  EXPECT_EQ(outcome, PollOutcome::TimedOut);
  // It waited just past the deadline, not much longer.
  EXPECT_GT(clock.now - 100.0, 2.0);
  EXPECT_LT(clock.now - 100.0, 2.0 + 0.011);
  // The pause doubles from 20 us and is capped at 10 ms.
  ASSERT_GE(clock.sleeps.size(), 3u);
  EXPECT_EQ(clock.sleeps[0], 20);
  EXPECT_EQ(clock.sleeps[1], 40);
  EXPECT_EQ(clock.sleeps.back(), 10000);
  // One poll per sleep, one before the first and one after the deadline.
  EXPECT_EQ(polls, static_cast<int>(clock.sleeps.size()) + 2);
}

TEST(CollectiveTimeout, PollReturnsAsSoonAsDone) {
  FakeClock clock;
  int polls = 0;
  PollOutcome outcome = gaccrt::pollWithClock(
      [&] { return ++polls == 5; }, 2.0, [&] { return clock(); },
      [&](long us) { clock.sleep(us); });
  EXPECT_EQ(outcome, PollOutcome::Done);
  EXPECT_EQ(polls, 5);
  EXPECT_EQ(clock.sleeps.size(), 4u);
}

TEST(CollectiveTimeout, CompletionSeenAfterTheDeadlineIsNotATimeout) {
  // The call completed during the last (long) pause: the final poll after
  // the deadline sees it.
  FakeClock clock;
  PollOutcome outcome = gaccrt::pollWithClock(
      [&] { return clock.now - 100.0 > 1.0; }, 1.0, [&] { return clock(); },
      [&](long us) { clock.sleep(us); }, /*firstPauseUs=*/2000000);
  EXPECT_EQ(outcome, PollOutcome::Done);
}

TEST(CollectiveTimeout, ZeroTimeoutWaitsUntilDone) {
  FakeClock clock;
  int polls = 0;
  PollOutcome outcome = gaccrt::pollWithClock(
      [&] { return ++polls == 5000; }, 0.0, [&] { return clock(); },
      [&](long us) { clock.sleep(us); }, /*firstPauseUs=*/0,
      /*maxPauseUs=*/1000);
  EXPECT_EQ(outcome, PollOutcome::Done);
  EXPECT_GT(clock.now - 100.0, 4.0); // far beyond any default deadline
  // A first pause of 0 (a yield), then 1, 2, 4 ... capped at 1000 us.
  EXPECT_EQ(clock.sleeps[0], 0);
  EXPECT_EQ(clock.sleeps[1], 1);
  EXPECT_EQ(clock.sleeps[2], 2);
  EXPECT_EQ(clock.sleeps.back(), 1000);
}

TEST(CollectiveTimeout, NcclTimeoutResolution) {
  std::string warning;
  // --collective-timeout wins over the environment.
  EXPECT_EQ(gaccrt::resolveNcclTimeout(2.5, "30", warning), 2.5);
  EXPECT_TRUE(warning.empty());
  // Unset: GACCRT_NCCL_TIMEOUT_S, where 0 means no limit.
  EXPECT_EQ(gaccrt::resolveNcclTimeout(0.0, "30", warning), 30.0);
  EXPECT_EQ(gaccrt::resolveNcclTimeout(0.0, "0", warning), 0.0);
  EXPECT_TRUE(warning.empty());
  // Neither: the default.
  EXPECT_EQ(gaccrt::resolveNcclTimeout(0.0, nullptr, warning), 600.0);
  EXPECT_EQ(gaccrt::resolveNcclTimeout(0.0, "", warning), 600.0);
  EXPECT_TRUE(warning.empty());
  // A bad value is ignored with a warning naming it.
  for (const char *bad : {"ten", "-1", "5s", "nan"}) {
    EXPECT_EQ(gaccrt::resolveNcclTimeout(0.0, bad, warning), 600.0) << bad;
    EXPECT_NE(warning.find(std::string("GACCRT_NCCL_TIMEOUT_S='") + bad + "'"),
              std::string::npos)
        << warning;
  }
}

TEST(CollectiveTimeout, MpiTimeoutFromTheFlagThenTheEnvironment) {
  std::string warning = "stale";
  // --collective-timeout wins.
  EXPECT_EQ(gaccrt::resolveMpiTimeout(2.5, "30", warning), 2.5);
  EXPECT_TRUE(warning.empty());
  // Unset: GACCRT_COLLECTIVE_TIMEOUT_S.
  EXPECT_EQ(gaccrt::resolveMpiTimeout(0.0, "30", warning), 30.0);
  EXPECT_EQ(gaccrt::resolveMpiTimeout(0.0, "0.5", warning), 0.5);
  EXPECT_TRUE(warning.empty());
  // Neither: no limit.
  EXPECT_EQ(gaccrt::resolveMpiTimeout(0.0, nullptr, warning), 0.0);
  EXPECT_EQ(gaccrt::resolveMpiTimeout(0.0, "", warning), 0.0);
  EXPECT_TRUE(warning.empty());
  for (const char *bad : {"ten", "-1", "5s", "nan", "inf"}) {
    EXPECT_EQ(gaccrt::resolveMpiTimeout(0.0, bad, warning), 0.0) << bad;
    EXPECT_NE(
        warning.find(std::string("GACCRT_COLLECTIVE_TIMEOUT_S='") + bad + "'"),
        std::string::npos)
        << warning;
  }
}

TEST(CollectiveTimeout, MessageNamesTheCallTheRankAndTheOthers) {
  EXPECT_EQ(gaccrt::collectiveTimeoutMessage("MPI_Allreduce", 1, "", 0, 2, 2.0,
                                             "--collective-timeout",
                                             "aborting all ranks"),
            "MPI_Allreduce (collective #1 of this rank) timed out on rank 0 "
            "after 2 s (--collective-timeout): rank 1 did not join it "
            "(stopped, crashed or hung); aborting all ranks");
  EXPECT_EQ(gaccrt::collectiveTimeoutMessage(
                "ncclAllReduce", 7, ", bucket 3", 2, 4, 0.5,
                "--collective-timeout",
                "the NCCL communicator was aborted, aborting all ranks"),
            "ncclAllReduce (collective #7 of this rank, bucket 3) timed out "
            "on rank 2 after 0.5 s (--collective-timeout): one of ranks 0 1 3 "
            "did not join it (stopped, crashed or hung); the NCCL "
            "communicator was aborted, aborting all ranks");
}

} // namespace
