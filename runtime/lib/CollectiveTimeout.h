//===- CollectiveTimeout.h - Deadlines of collective waits ------*- C++ -*-===//
//
// What the MPI and NCCL backends share about a collective that does not
// complete: which timeout applies, a poll loop with a deadline (generic in
// its clock and its sleep, so that it is unit-tested with a fake clock), and
// the error message naming the call, this rank and the ranks that did not
// join. Header-only and free of MPI, CUDA and NCCL.
//
//===----------------------------------------------------------------------===//

#ifndef GACCRT_LIB_COLLECTIVETIMEOUT_H
#define GACCRT_LIB_COLLECTIVETIMEOUT_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace gaccrt {

/// The NCCL timeout when neither --collective-timeout
/// (gaccrt_set_collective_timeout) nor GACCRT_NCCL_TIMEOUT_S sets one.
constexpr double kDefaultNcclTimeoutSeconds = 600.0;

/// The seconds an NCCL wait may take: `configured` (--collective-timeout)
/// when positive, else GACCRT_NCCL_TIMEOUT_S (`envText`, may be null; 0 = no
/// limit), else kDefaultNcclTimeoutSeconds. An invalid `envText` sets
/// `warning` and is ignored.
inline double resolveNcclTimeout(double configured, const char *envText,
                                 std::string &warning) {
  warning.clear();
  if (configured > 0)
    return configured;
  if (!envText || !*envText)
    return kDefaultNcclTimeoutSeconds;
  char *end = nullptr;
  double value = std::strtod(envText, &end);
  if (end == envText || *end != '\0' || !(value >= 0)) {
    warning = std::string("ignoring GACCRT_NCCL_TIMEOUT_S='") + envText +
              "' (expected seconds >= 0); using 600";
    return kDefaultNcclTimeoutSeconds;
  }
  return value;
}

/// The seconds an MPI collective may take: `configured`
/// (--collective-timeout, gaccrt_set_collective_timeout) when positive, else
/// GACCRT_COLLECTIVE_TIMEOUT_S (`envText`, may be null), else 0 (no limit).
/// An invalid `envText` sets `warning` and is ignored.
inline double resolveMpiTimeout(double configured, const char *envText,
                                std::string &warning) {
  warning.clear();
  if (configured > 0)
    return configured;
  if (!envText || !*envText)
    return 0.0;
  char *end = nullptr;
  double value = std::strtod(envText, &end);
  if (end == envText || *end != '\0' || !(value >= 0) || value == HUGE_VAL) {
    warning = std::string("ignoring GACCRT_COLLECTIVE_TIMEOUT_S='") + envText +
              "' (expected seconds >= 0); waiting without a limit";
    return 0.0;
  }
  return value;
}

/// "rank 1" with two ranks, else "one of ranks 0 2 3" (every rank but
/// `rank`): the ranks that may have failed to join a collective.
inline std::string otherRanksText(int rank, int worldSize) {
  if (worldSize == 2)
    return "rank " + std::to_string(1 - rank);
  std::string text = "one of ranks";
  for (int r = 0; r < worldSize; ++r)
    if (r != rank)
      text += " " + std::to_string(r);
  return text;
}

/// "<call> (collective #<number> of this rank<detail>) timed out on rank
/// <rank> after <seconds> s (<setting>): <others> did not join it (stopped,
/// crashed or hung); <consequence>".
inline std::string collectiveTimeoutMessage(const std::string &call,
                                            long long number,
                                            const std::string &detail, int rank,
                                            int worldSize, double seconds,
                                            const std::string &setting,
                                            const std::string &consequence) {
  char secondsText[32];
  std::snprintf(secondsText, sizeof(secondsText), "%g", seconds);
  return call + " (collective #" + std::to_string(number) + " of this rank" +
         detail + ") timed out on rank " + std::to_string(rank) + " after " +
         secondsText + " s (" + setting +
         "): " + otherRanksText(rank, worldSize) +
         " did not join it (stopped, crashed or hung); " + consequence;
}

/// The outcome of a poll with a deadline.
enum class PollOutcome { Done, TimedOut };

/// Calls `poll()` until it returns true or more than `timeoutSeconds` have
/// passed on `clock` (0 or less: no limit), sleeping `sleep(microseconds)`
/// in between with a pause that grows from `firstPauseUs` (0: a yield) by
/// doubling (at least to 1) up to `maxPauseUs`. `clock()` returns seconds.
/// `poll` is always called at least once, and once more after the deadline
/// passed before giving up, so that a long sleep never turns a completed call
/// into a timeout.
template <typename Poll, typename Clock, typename Sleep>
PollOutcome pollWithClock(Poll &&poll, double timeoutSeconds, Clock &&clock,
                          Sleep &&sleep, long firstPauseUs = 20,
                          long maxPauseUs = 10000) {
  const double start = clock();
  long pause = std::max(0L, firstPauseUs);
  for (;;) {
    if (poll())
      return PollOutcome::Done;
    if (timeoutSeconds > 0 && clock() - start > timeoutSeconds)
      return poll() ? PollOutcome::Done : PollOutcome::TimedOut;
    sleep(pause);
    pause = std::min(std::max(pause * 2, 1L), std::max(1L, maxPauseUs));
  }
}

/// pollWithClock on the steady clock with real sleeps (a pause of 0 is a
/// yield).
template <typename Poll>
PollOutcome pollWithDeadline(Poll &&poll, double timeoutSeconds,
                             long firstPauseUs = 20, long maxPauseUs = 10000) {
  using Clock = std::chrono::steady_clock;
  return pollWithClock(
      std::forward<Poll>(poll), timeoutSeconds,
      [] {
        return std::chrono::duration<double>(Clock::now().time_since_epoch())
            .count();
      },
      [](long us) {
        if (us <= 0)
          std::this_thread::yield();
        else
          std::this_thread::sleep_for(std::chrono::microseconds(us));
      },
      firstPauseUs, maxPauseUs);
}

} // namespace gaccrt

#endif // GACCRT_LIB_COLLECTIVETIMEOUT_H
