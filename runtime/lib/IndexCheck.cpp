//===- IndexCheck.cpp - gather index errors, collective timeout ----------===//
//
// The record that compiled code writes when a data-dependent gather index
// (an embedding id, a class label) is outside its table: the first error
// and a count, read by the tools after each step. Thread-safe: kernels of
// one step may run on several threads. Also the collective timeout setting
// that the backends read.
//
//===----------------------------------------------------------------------===//

#include "CollectiveTimeout.h"
#include "Internal.h"
#include "gaccrt/gaccrt.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {
std::mutex indexMutex;
std::atomic<int64_t> errorCount{0};
int64_t firstIndex = 0, firstBound = 0, firstSite = 0;
} // namespace

void gaccrt_index_error(int64_t index, int64_t bound, int64_t site) {
  std::lock_guard<std::mutex> lock(indexMutex);
  if (errorCount.fetch_add(1) == 0) {
    firstIndex = index;
    firstBound = bound;
    firstSite = site;
  }
}

int64_t gaccrt_index_errors(int64_t *index, int64_t *bound, int64_t *site) {
  std::lock_guard<std::mutex> lock(indexMutex);
  int64_t count = errorCount.load();
  if (count) {
    if (index)
      *index = firstIndex;
    if (bound)
      *bound = firstBound;
    if (site)
      *site = firstSite;
  }
  return count;
}

void gaccrt_index_errors_reset(void) {
  std::lock_guard<std::mutex> lock(indexMutex);
  errorCount = 0;
}

namespace {
std::atomic<double> collectiveTimeout{0.0};
} // namespace

void gaccrt_set_collective_timeout(double seconds) {
  collectiveTimeout = seconds > 0 ? seconds : 0.0;
}

double gaccrt_collective_timeout(void) { return collectiveTimeout; }

double gaccrt::collectiveTimeoutSeconds() {
  // The environment is read once; the configured value may change.
  static const char *const envText = std::getenv("GACCRT_COLLECTIVE_TIMEOUT_S");
  std::string warning;
  double seconds = resolveMpiTimeout(collectiveTimeout, envText, warning);
  static std::atomic<bool> warned{false};
  if (!warning.empty() && !warned.exchange(true))
    std::fprintf(stderr, "gaccrt: warning: %s\n", warning.c_str());
  return seconds;
}
