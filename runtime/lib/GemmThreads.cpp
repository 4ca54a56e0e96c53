//===- GemmThreads.cpp - the worker threads of GEMMs and parallel loops ---===//
//
// A small pool that runs the parts of one GEMM on several cores (the AVX-512
// kernels split C into contiguous slices, one per part), or the slices of
// one parallel loop of a step (gaccrt_parallel_for). The caller runs
// part 0; workers, started at the first call that needs them, run the
// others. A GEMM inside a step is followed within microseconds by the next
// one, so a worker spins for a while after its part before it sleeps on a
// condition variable; the caller spins until every part is done.
//
// One GEMM at a time uses the pool: a second caller that finds it busy gets
// `false` and runs its GEMM on its own thread, and so does a part that asks
// for the pool again (the copies of gaccrt_parallel_copies run their GEMMs
// and loops on their own threads).
//
//===----------------------------------------------------------------------===//

#include "BlasInternal.h"
#include "Gemm.h"
#include "Internal.h"

#include "gaccrt/gaccrt.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>

#include <pthread.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GACCRT_PAUSE() _mm_pause()
#else
#define GACCRT_PAUSE() std::this_thread::yield()
#endif

using namespace gaccrt;

namespace {

/// How long a worker spins for the next part before it sleeps, when
/// gaccrt's kernels run every GEMM (the next GEMM's parts follow within
/// microseconds).
constexpr std::chrono::microseconds kWorkerSpin(100);
/// The same when another library runs GEMMs on threads of its own
/// (OpenBLAS's; oneDNN's OpenMP threads run the loops themselves, see
/// loopsOnOnednnThreads, unless its OpenMP runtime lacks GOMP_parallel):
/// the workers then run only loops and epilogues, and one that spins
/// through the next GEMM takes a core from that library's threads. On 2
/// threads of a Zen 5 VM with every GEMM on oneDNN and the loops still on
/// these workers, the 3x512, B = 256, m = 8 step took 5.2-5.5 ms with a
/// spin of 0-10 us against 7.0-7.7 with 100 us, the 4x256, B = 8192, m = 8
/// step 41-44 ms against 47.
constexpr std::chrono::microseconds kWorkerSpinBesideLibraries(10);

/// Set in the child of every fork (pthread_atfork): the child has none of
/// its parent's workers. A flag rather than a getpid() per call: a system
/// call costs about 1 us in some virtual machines, as much as a small
/// GEMM's fork and join.
std::atomic<bool> forkedChild{false};

void noteFork() { forkedChild.store(true, std::memory_order_relaxed); }

/// Set on a worker, and on a caller while it runs its part: the pool's
/// threads are taken, a nested call runs alone.
thread_local bool runningPart = false;

class Pool {
public:
  Pool() { pthread_atfork(nullptr, nullptr, noteFork); }
  bool run(int parts, void (*body)(void *, int), void *context);

private:
  void work(int part, uint64_t seen);
  void startWorkers(int count);

  /// Held by the one caller using the pool.
  std::mutex callerMutex;
  /// Guards the sleeping workers' wake-up.
  std::mutex wakeMutex;
  std::condition_variable wake;
  /// Bumped (under wakeMutex) for every call; workers wait for a change.
  std::atomic<uint64_t> generation{0};
  /// Workers that have not yet finished with the current call (each one
  /// acknowledges every call, with or without a part in it, so that none
  /// reads the next call's fields for this one).
  std::atomic<int> pending{0};
  /// The current call; written before `generation` is bumped.
  void (*body)(void *, int) = nullptr;
  void *context = nullptr;
  int parts = 0;
  int workers = 0;
  /// How long the workers spin after the current call (set by the caller,
  /// which knows the library setting, with the call's fields).
  std::chrono::microseconds spin = kWorkerSpin;
};

bool Pool::run(int count, void (*callBody)(void *, int), void *callContext) {
  if (runningPart)
    return false;
  std::unique_lock<std::mutex> caller(callerMutex, std::try_to_lock);
  if (!caller.owns_lock())
    return false;
  // A forked child has none of its parent's workers: it starts its own,
  // with a fresh wake-up mutex (a parent's worker may have held it at the
  // fork).
  if (forkedChild.load(std::memory_order_relaxed)) {
    forkedChild.store(false, std::memory_order_relaxed);
    workers = 0;
    new (&wakeMutex) std::mutex;
    new (&wake) std::condition_variable;
  }
  if (workers < count - 1) {
    try {
      startWorkers(count - 1);
    } catch (const std::system_error &) {
      // No more threads (resource limits): the caller runs the GEMM alone.
      return false;
    }
  }
  body = callBody;
  context = callContext;
  parts = count;
  spin = kernelsTakeEveryGemm() ? kWorkerSpin : kWorkerSpinBesideLibraries;
  pending.store(workers, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(wakeMutex);
    generation.fetch_add(1, std::memory_order_release);
  }
  wake.notify_all();
  runningPart = true;
  callBody(callContext, 0);
  runningPart = false;
  while (pending.load(std::memory_order_acquire) != 0)
    GACCRT_PAUSE();
  return true;
}

void Pool::startWorkers(int count) {
  for (; workers < count; ++workers)
    // Detached: the pool lives until the process exits, and a worker that
    // sleeps then holds nothing. A new worker waits for the generation
    // after the current one, which the caller bumps next.
    std::thread([this, part = workers + 1,
                 seen = generation.load(std::memory_order_relaxed)] {
      work(part, seen);
    }).detach();
}

void Pool::work(int part, uint64_t seen) {
  runningPart = true;
  std::chrono::microseconds nextSpin = kWorkerSpin;
  for (;;) {
    auto spinUntil = std::chrono::steady_clock::now() + nextSpin;
    uint64_t current;
    for (int spins = 0;
         (current = generation.load(std::memory_order_acquire)) == seen;
         ++spins) {
      GACCRT_PAUSE();
      if (spins % 64 == 63 && std::chrono::steady_clock::now() > spinUntil) {
        std::unique_lock<std::mutex> lock(wakeMutex);
        wake.wait(lock, [&] {
          return generation.load(std::memory_order_acquire) != seen;
        });
      }
    }
    seen = current;
    if (part < parts)
      body(context, part);
    // Read before the acknowledgement: the caller writes the next call's
    // fields only once every worker has acknowledged this one.
    nextSpin = spin;
    pending.fetch_sub(1, std::memory_order_release);
  }
}

} // namespace

bool gaccrt::runGemmParts(int parts, void (*body)(void *, int), void *context) {
  // Never destroyed: detached workers may still read it at exit.
  static Pool *pool = new Pool;
  return pool->run(parts, body, context);
}

namespace {
/// Scalar operations per slice at the least (about 2 us of vectorized
/// elementwise work): a smaller loop runs on its caller alone. On the
/// 3x512 MLP at b = 32 on two threads (16K-element loops), 2^13 and 2^11
/// ran the step 1.5 % faster than 2^15, which kept those loops whole.
constexpr int64_t kMinSliceWork = int64_t(1) << 13;

/// Whether the step's parallel loops run on oneDNN's OpenMP threads: when
/// oneDNN runs the GEMMs on several threads, so that one set of threads
/// runs all the step's parallel work and gaccrt's workers do not take cores
/// from OpenMP's (nor wake them from sleep) between a GEMM and its loops.
bool loopsOnOnednnThreads() {
  Library chosen = library();
  return (chosen == Library::Onednn || chosen == Library::OnednnSgemm) &&
         gemmThreads() > 1;
}

/// One gaccrt_parallel_for call.
struct Loop {
  void (*body)(void *, int64_t, int64_t);
  void *context;
  int64_t count;
  int parts;
};

void runLoopSlice(void *context, int part) {
  const Loop &loop = *static_cast<const Loop *>(context);
  int64_t lo = loop.count * part / loop.parts;
  int64_t hi = loop.count * (part + 1) / loop.parts;
  if (lo < hi)
    loop.body(loop.context, lo, hi);
}
} // namespace

void gaccrt_parallel_for(void (*body)(void *, int64_t, int64_t), void *context,
                         int64_t count, int64_t work) {
  if (count <= 0)
    return;
  int64_t total = work > 0 && count > std::numeric_limits<int64_t>::max() / work
                      ? std::numeric_limits<int64_t>::max()
                      : count * std::max<int64_t>(work, 1);
  Loop loop{
      body, context, count,
      int(std::min<int64_t>({gemmThreads(), count,
                             std::max<int64_t>(1, total / kMinSliceWork)}))};
  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;
  // On oneDNN's threads where they run the GEMMs, else (or where its
  // OpenMP runtime has no GOMP_parallel) on gaccrt's workers.
  if (!(loop.parts > 1 && ((loopsOnOnednnThreads() &&
                            onednnParallel(loop.parts, runLoopSlice, &loop)) ||
                           runGemmParts(loop.parts, runLoopSlice, &loop)))) {
    loop.parts = 1;
    body(context, 0, count);
  }
  if (tracing)
    traceComplete("loop " + std::to_string(count), "loop", start,
                  gaccrt_now_us() - start,
                  "{\"count\": " + std::to_string(count) +
                      ", \"work\": " + std::to_string(work) +
                      ", \"parts\": " + std::to_string(loop.parts) + "}");
}

namespace {
/// A slice of gaccrt_parallel_copies: its events on their own trace track
/// off the calling thread.
void runCopySlice(void *context, int part) {
  if (part != 0)
    setThreadTraceTrack(kCopiesTraceTrack + part - 1);
  runLoopSlice(context, part);
  if (part != 0)
    setThreadTraceTrack(0);
}
} // namespace

int32_t gaccrt_copies_concurrent(int64_t count) {
  // One copy per GEMM thread when there are as many threads as copies and
  // every GEMM runs on gaccrt's kernels (whose parts run on a copy's own
  // thread when the pool is taken); else the copies in turn, each GEMM and
  // loop of theirs split over every thread as usual.
  int threads = gemmThreads();
  return threads > 1 && threads <= count && kernelsTakeEveryGemm() &&
         !copiesInLockstep();
}

void gaccrt_parallel_copies(void (*body)(void *, int64_t, int64_t),
                            void *context, int64_t count) {
  if (count <= 0)
    return;
  Loop loop{body, context, count, 1};
  if (gaccrt_copies_concurrent(count)) {
    loop.parts = gemmThreads();
    if (runGemmParts(loop.parts, runCopySlice, &loop))
      return;
  }
  body(context, 0, count);
}
