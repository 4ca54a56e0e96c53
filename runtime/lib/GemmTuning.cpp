//===- GemmTuning.cpp - which library runs each GEMM ----------------------===//
//
// One row-major GEMM of gaccrt_sgemm on a library (rowMajorSgemm):
// "openblas", "onednn-sgemm" and "avx512" run every GEMM they can on theirs,
// "onednn" follows a fixed shape rule (prefersOnednn) on one GEMM thread and
// times oneDNN's two GEMMs per shape on several, and "auto" times each GEMM
// shape on every library that can run it in its first calls and keeps the
// fastest (kernels where they run are the incumbent, see kTakeOverRatio),
// and remembers the decisions on disk for later processes on the same CPU
// (DiskCache). A library that declines a GEMM leaves it to OpenBLAS. Uses
// GemmLibrary.cpp; Blas.cpp and GemmPairs.cpp use it (BlasInternal.h).
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"

#include "BlasInternal.h"
#include "Gemm.h"
#include "Internal.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace gaccrt;

namespace {

CBLAS_TRANSPOSE toBlas(bool transposed) {
  return transposed ? CblasTrans : CblasNoTrans;
}

/// The shape rule ("onednn", the GEMMs too small for "auto" to time, and
/// its incumbent without the kernels): whether oneDNN
/// is the faster library for C = op(A) * op(B) with n columns and inner
/// size k, as measured in a training step on a Zen 4 CPU (AVX-512 on
/// 256-bit units; bench/README.md): its brgemm kernels win 1.1-1.3x when op(A)
/// is A itself (the forward and the backward-data GEMMs, b x N x K) and about
/// 1.05x for the weight-gradient GEMMs (op(A) = A^T) of large micro-batches
/// (k >= 512), but lose for those of smaller ones (k <= 256: oneDNN
/// transposes the activation in every call) and when C has few columns (the
/// logits layer). Only with one GEMM thread: with more, OpenMP's threads
/// (oneDNN) and OpenBLAS's spin against each other between calls and the
/// step gets 1.2-2x slower than with OpenBLAS alone. Without brgemm (no
/// AVX-512) onednnSgemm declines and OpenBLAS runs everything. Other CPUs
/// differ (on Zen 5 oneDNN also wins the small weight gradients, by
/// 1.4-1.6x), which is why "auto" times each shape.
bool prefersOnednn(const Operand &a, int64_t n, int64_t k) {
  return n >= 64 && (!a.transposed || k >= 512) && gemmThreads() == 1;
}

} // namespace

GemmArgs gaccrt::gemmArgs(const Operand &a, const Operand &b, int64_t m,
                          int64_t n, int64_t k, float alpha, float beta,
                          float *c, int64_t cRowStride) {
  GemmArgs args;
  args.m = m;
  args.n = n;
  args.k = k;
  args.alpha = alpha;
  args.beta = beta;
  args.a = a.data;
  args.aRowStride = a.transposed ? 1 : a.ld;
  args.aColStride = a.transposed ? a.ld : 1;
  args.b = b.data;
  args.bRowStride = b.transposed ? 1 : b.ld;
  args.bColStride = b.transposed ? b.ld : 1;
  args.c = c;
  args.cRowStride = cRowStride;
  args.cColStride = 1;
  args.threads = gemmThreads();
  return args;
}

namespace {

/// Runs the GEMM through `sgemm` (onednnSgemm: oneDNN, declining without a
/// brgemm kernel; avx512Sgemm: gaccrt's kernels, declining without
/// AVX-512F), traced as `name`; false (nothing written) when it declines.
bool runThrough(bool (*sgemm)(const GemmArgs &), const char *name,
                const Operand &a, const Operand &b, int64_t m, int64_t n,
                int64_t k, float alpha, float beta, float *c,
                int64_t cRowStride) {
  if (!sgemm(gemmArgs(a, b, m, n, k, alpha, beta, c, cRowStride)))
    return false;
  lastLibrary = name;
  return true;
}

bool runOnednn(const Operand &a, const Operand &b, int64_t m, int64_t n,
               int64_t k, float alpha, float beta, float *c,
               int64_t cRowStride) {
  return runThrough(onednnSgemm, "onednn", a, b, m, n, k, alpha, beta, c,
                    cRowStride);
}

void runOpenblas(const Operand &a, const Operand &b, int64_t m, int64_t n,
                 int64_t k, float alpha, float beta, float *c,
                 int64_t cRowStride) {
  lastLibrary = "openblas";
  cblas_sgemm(CblasRowMajor, toBlas(a.transposed), toBlas(b.transposed), int(m),
              int(n), int(k), alpha, a.data, int(a.ld), b.data, int(b.ld), beta,
              c, int(cRowStride));
}

/// The libraries of "auto", in the order their calls alternate: oneDNN's
/// matmul primitive, OpenBLAS, gaccrt's kernels, oneDNN's dnnl_sgemm.
enum Candidate { kOnednn, kOpenblas, kAvx512, kOnednnSgemm, kCandidates };

/// Every candidate (a set of Candidate bits).
constexpr unsigned kAllCandidates = (1u << kCandidates) - 1;
/// oneDNN's two GEMMs: what "onednn" times per shape on several threads.
constexpr unsigned kOnednnCandidates = 1u << kOnednn | 1u << kOnednnSgemm;

const char *candidateName(int candidate) {
  static const char *const names[] = {"onednn", "openblas", "avx512",
                                      "onednn-sgemm"};
  return names[candidate];
}

/// Runs the GEMM on `candidate`; false (nothing written) when it declines.
bool runCandidate(int candidate, const Operand &a, const Operand &b, int64_t m,
                  int64_t n, int64_t k, float alpha, float beta, float *c,
                  int64_t cRowStride) {
  switch (candidate) {
  case kOnednn:
    return runOnednn(a, b, m, n, k, alpha, beta, c, cRowStride);
  case kAvx512:
    return runThrough(avx512Sgemm, "avx512", a, b, m, n, k, alpha, beta, c,
                      cRowStride);
  case kOnednnSgemm:
    return runThrough(onednnBlasSgemm, "onednn-sgemm", a, b, m, n, k, alpha,
                      beta, c, cRowStride);
  default:
    runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return true;
  }
}

//===----------------------------------------------------------------------===//
// "auto": per-shape tuning
//===----------------------------------------------------------------------===//

/// A GEMM as the libraries see it: the GEMM thread count, sizes,
/// transposes, leading dimensions and whether C is read (beta != 0,
/// oneDNN's sum post-op).
struct GemmKey {
  int64_t threads, m, n, k, lda, ldb, ldc;
  bool transA, transB, readsC;
  bool operator==(const GemmKey &other) const {
    return threads == other.threads && m == other.m && n == other.n &&
           k == other.k && lda == other.lda && ldb == other.ldb &&
           ldc == other.ldc && transA == other.transA &&
           transB == other.transB && readsC == other.readsC;
  }
};

struct GemmKeyHash {
  size_t operator()(const GemmKey &key) const {
    size_t h = 0;
    for (int64_t v :
         {key.threads, key.m, key.n, key.k, key.lda, key.ldb, key.ldc,
          int64_t(key.transA) | int64_t(key.transB) << 1 |
              int64_t(key.readsC) << 2})
      h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

/// Untimed warm-up calls per library before the timed ones: oneDNN creates
/// its primitive in its first call, and a shape's first calls are slowed
/// down by the first touches of a step's buffers (a 512x512x32 weight
/// gradient took 635, 336, 372, 250 us in its first four calls, 160-180 us
/// from the sixth on).
constexpr int kWarmupCallsPerLibrary = 2;
/// Timed calls per library before a shape's choice is made.
constexpr int kTimedCallsPerLibrary = 4;
/// A library other than the incumbent (gaccrt's kernels where they run,
/// else the shape rule's library) must be at least this much faster (ratio
/// of the fastest timed calls) to take the shape over: near-ties keep the
/// incumbent, so that the choice does not flip with a machine's noise.
constexpr double kTakeOverRatio = 0.9;
/// The same between oneDNN's two GEMMs on several threads: one library,
/// one set of OpenMP threads, so a near-tie costs nothing either way, while
/// the sgemm's 3-7 % edge on a Zen 5 VM's 8192x256x256 forward and
/// backward-data GEMMs (2 threads, in isolation and in the 4x256 step) is
/// worth taking: with 0.9 the tuned step took 38.5 ms (median of 6), with
/// every GEMM on the sgemm 37.5.
constexpr double kOnednnTakeOverRatio = 0.97;
/// Smaller GEMMs (in multiply-adds) follow the rule: below about a
/// microsecond, timing them is noise. The logits layer's GEMMs (10 outputs)
/// are above it: at b = 32 OpenBLAS and oneDNN ran them at 36-65 GFLOP/s
/// inside a 3x512 step, the kernels at 45-106 (158 against 124 us per
/// m = 8 step).
constexpr int64_t kMinTunedMacs = int64_t(1) << 16;

struct GemmTuning {
  /// The libraries this shape may run on (1 << Candidate).
  unsigned allowed = kAllCandidates;
  int calls = 0;
  /// The libraries timed for this shape (Candidate), in call order.
  int libraries[kCandidates] = {};
  int count = 0;
  double us[kCandidates][kTimedCallsPerLibrary] = {};
  int timed[kCandidates] = {};
  /// The libraries that declined the shape (1 << Candidate).
  unsigned dropped = 0;
  /// Set once decided.
  bool decided = false;
  int chosen = kOpenblas;
};

/// Per thread, as oneDNN's primitives: no locking on the GEMM path.
thread_local std::unordered_map<GemmKey, GemmTuning, GemmKeyHash> tunings;

/// The shapes being timed, on every thread (gaccrt_gemm_shapes_being_timed).
std::atomic<int> shapesBeingTimed{0};

/// The nanoseconds spent in the calls of shapes being timed, warm-up and
/// timed ones, on every thread (gaccrt_gemm_timing_us).
std::atomic<int64_t> timingNs{0};

void countTimingCall(double startUs) {
  timingNs.fetch_add(int64_t((gaccrt_now_us() - startUs) * 1e3),
                     std::memory_order_relaxed);
}

//===----------------------------------------------------------------------===//
// The decisions of "auto" on disk
//===----------------------------------------------------------------------===//

/// "auto"'s decisions outlive the process: each is appended as a line to a
/// cache file and read back by later processes on the same CPU, which then
/// run the shape on the library decided from its first call, untimed. The
/// file is GACCRT_GEMM_CACHE (a path; "off" or empty: no cache), else
/// $XDG_CACHE_HOME/gacc/gemm-tuning.txt, else ~/.cache/gacc/gemm-tuning.txt.
/// A line is "gacc-gemm-3 CPU THREADS M N K LDA LDB LDC TA TB READS_C
/// LIBRARY"; CPU is the CPU's model name (/proc/cpuinfo) with the libraries
/// this gaccrt can run, so that a file shared between machines (an NFS home)
/// keeps each machine's decisions apart. Lines that do not parse, of other CPUs
/// or naming a library this process cannot run are ignored; the last line
/// of a shape wins. Failing to read or write the file only loses the cache.
/// The tag's number changes when gaccrt's kernels or the candidates do (2: B
/// packed; 3: oneDNN's sgemm a candidate, the thread count in the key), so
/// that a newer gaccrt times its shapes afresh rather than follow decisions
/// measured against older kernels or fewer libraries.
constexpr const char *kCacheTag = "gacc-gemm-3";

std::string cachePath() {
  if (const char *env = std::getenv("GACCRT_GEMM_CACHE")) {
    if (!*env || std::strcmp(env, "off") == 0)
      return "";
    return env;
  }
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/gacc/gemm-tuning.txt";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/gacc/gemm-tuning.txt";
  return "";
}

/// This CPU and the libraries this gaccrt runs on it, as one word; empty
/// when the CPU cannot be named (no cache then).
std::string cpuKey() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        model = line.substr(colon + 1);
      break;
    }
  std::string key;
  for (char c : model)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-')
      key += c;
    else if (!key.empty() && key.back() != '_')
      key += '_';
  while (!key.empty() && key.back() == '_')
    key.pop_back();
  if (key.empty())
    return "";
  return key + "/" + (onednnAvailable() ? "onednn+" : "") +
         (avx512Available() ? "avx512+" : "") + "openblas";
}

struct DiskCache {
  std::string path, cpu;
  std::unordered_map<GemmKey, int, GemmKeyHash> choices;
  /// Whole-step choices on several GEMM threads, by thread count and step.
  std::map<std::pair<int, std::string>, std::string> stepChoices;
  std::mutex appendMutex;
};

/// A line "gacc-gemm-step-3 CPU THREADS STEP LIBRARY": the library every GEMM
/// of the step STEP (a key of its compiler's choosing, gacc-run's hash of the
/// step and its options) runs on with THREADS GEMM threads under "auto", as
/// timed on whole steps, one library per process (gacc-run --tune-gemm):
/// one of kStepChoices ("avx512-lockstep": the kernels, the copies of a
/// pair in lockstep). The number changes with what a choice means (3: the
/// onednn choice times oneDNN's matmul and sgemm per shape).
constexpr const char *kStepCacheTag = "gacc-gemm-step-3";

int parseCandidate(const std::string &name) {
  for (int candidate = 0; candidate < kCandidates; ++candidate)
    if (name == candidateName(candidate))
      return candidate;
  return -1;
}

/// The cache, read once per process (the first tuned GEMM).
DiskCache &diskCache() {
  static DiskCache *cache = [] {
    auto *c = new DiskCache();
    c->path = cachePath();
    c->cpu = c->path.empty() ? "" : cpuKey();
    if (c->cpu.empty()) {
      c->path.clear();
      return c;
    }
    std::ifstream file(c->path);
    std::string line;
    while (std::getline(file, line)) {
      if (line.rfind(kStepCacheTag, 0) == 0) {
        std::istringstream words(line);
        std::string tag, cpu, step, library;
        int threads = 0;
        if ((words >> tag >> cpu >> threads >> step >> library) &&
            tag == kStepCacheTag && cpu == c->cpu && threads > 1)
          c->stepChoices[{threads, step}] = library;
        continue;
      }
      std::istringstream words(line);
      std::string tag, cpu, library;
      GemmKey key{};
      int transA = 0, transB = 0, readsC = 0;
      if (!(words >> tag >> cpu >> key.threads >> key.m >> key.n >> key.k >>
            key.lda >> key.ldb >> key.ldc >> transA >> transB >> readsC >>
            library) ||
          tag != kCacheTag || cpu != c->cpu)
        continue;
      key.transA = transA;
      key.transB = transB;
      key.readsC = readsC;
      int candidate = parseCandidate(library);
      if (candidate >= 0)
        c->choices[key] = candidate;
    }
    return c;
  }();
  return *cache;
}

/// Appends `line` to the cache file (one write of one line, with O_APPEND:
/// processes deciding at once do not interleave their lines).
void appendToCache(DiskCache &cache, const std::string &line) {
  std::lock_guard<std::mutex> lock(cache.appendMutex);
  // The folders on the way, as mkdir -p.
  for (size_t slash = cache.path.find('/', 1); slash != std::string::npos;
       slash = cache.path.find('/', slash + 1))
    ::mkdir(cache.path.substr(0, slash).c_str(), 0755);
  int fd = ::open(cache.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                  0644);
  if (fd < 0)
    return;
  [[maybe_unused]] ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

/// Appends `key`'s decision to the cache file.
void recordDecision(const GemmKey &key, int candidate) {
  DiskCache &cache = diskCache();
  if (cache.path.empty())
    return;
  std::string line = std::string(kCacheTag) + " " + cache.cpu;
  for (int64_t v :
       {key.threads, key.m, key.n, key.k, key.lda, key.ldb, key.ldc,
        int64_t(key.transA), int64_t(key.transB), int64_t(key.readsC)})
    line += " " + std::to_string(v);
  line += std::string(" ") + candidateName(candidate) + "\n";
  appendToCache(cache, line);
}

/// A step key is one word of letters, digits, '-', '_' and '.'.
bool isStepKey(const char *key) {
  if (!key || !*key)
    return false;
  for (const char *c = key; *c; ++c)
    if (!std::isalnum(static_cast<unsigned char>(*c)) && *c != '-' &&
        *c != '_' && *c != '.')
      return false;
  return true;
}

/// The fastest call: the early calls of a step are slowed down by first
/// touches and other work on the machine, never sped up.
double fastest(const double *values, int count) {
  return *std::min_element(values, values + count);
}

/// The fastest of the `count` libraries (Candidate) with the fastest calls
/// `best` (indexed by Candidate), unless it is not `takeOverRatio` faster
/// than `incumbent`.
int chooseLibrary(const double *best, const int *libraries, int count,
                  int incumbent, double takeOverRatio = kTakeOverRatio) {
  int winner = incumbent;
  for (int i = 0; i < count; ++i)
    if (best[libraries[i]] < best[winner])
      winner = libraries[i];
  if (winner != incumbent && !(best[winner] < takeOverRatio * best[incumbent]))
    winner = incumbent;
  return winner;
}

/// Decides `tuning` from its timed calls (see pendingDecision): the fastest
/// library, unless it is not kTakeOverRatio (kOnednnTakeOverRatio between
/// oneDNN's two GEMMs alone) faster than `incumbent`.
void decide(GemmTuning &tuning, int incumbent) {
  double best[kCandidates] = {};
  for (int i = 0; i < tuning.count; ++i) {
    int library = tuning.libraries[i];
    best[library] = fastest(tuning.us[library], tuning.timed[library]);
  }
  bool onednnAlone = (tuning.allowed & ~kOnednnCandidates) == 0;
  int winner =
      chooseLibrary(best, tuning.libraries, tuning.count, incumbent,
                    onednnAlone ? kOnednnTakeOverRatio : kTakeOverRatio);
  tuning.decided = true;
  tuning.chosen = winner;
  if (!traceEnabled())
    return;
  pendingDecision.clear();
  for (int i = 0; i < tuning.count; ++i)
    pendingDecision += std::string("\"") + candidateName(tuning.libraries[i]) +
                       "_us\": " + std::to_string(best[tuning.libraries[i]]) +
                       ", ";
  pendingDecision += std::string("\"incumbent\": \"") +
                     candidateName(incumbent) + "\", \"library\": \"" +
                     candidateName(winner) + "\"";
}

/// Starts (or restarts) tuning a shape with the libraries in the bit set
/// `allowed` (1 << Candidate) that can run, less those in `dropped`. With
/// one library left it is decided; with none, OpenBLAS.
void startTuning(GemmTuning &tuning, unsigned allowed, unsigned dropped) {
  tuning = GemmTuning();
  tuning.allowed = allowed;
  tuning.dropped = dropped;
  bool available[kCandidates] = {onednnAvailable(), true, avx512Available(),
                                 onednnBlasAvailable()};
  for (int library = 0; library < kCandidates; ++library)
    if (available[library] && (allowed & (1u << library)) &&
        !(dropped & (1u << library)))
      tuning.libraries[tuning.count++] = library;
  if (tuning.count <= 1) {
    tuning.decided = true;
    tuning.chosen = tuning.count ? tuning.libraries[0] : int(kOpenblas);
  }
}

/// Whether `tuning` times `candidate`.
bool times(const GemmTuning &tuning, int candidate) {
  return std::find(tuning.libraries, tuning.libraries + tuning.count,
                   candidate) != tuning.libraries + tuning.count;
}

/// Counts `tuning` in shapesBeingTimed while it is undecided: call with its
/// state before a change (a new shape counts as decided) and after.
void countTiming(bool decidedBefore, const GemmTuning &tuning) {
  if (decidedBefore != tuning.decided)
    shapesBeingTimed.fetch_add(tuning.decided ? -1 : 1,
                               std::memory_order_relaxed);
}

/// "auto": with n libraries (oneDNN's matmul where it loads, OpenBLAS, the
/// AVX-512 kernels on an AVX-512 CPU, oneDNN's sgemm, in that order, those
/// of `allowed`), the shape's first
/// n * kWarmupCallsPerLibrary calls cycle through them untimed and the next
/// n * kTimedCallsPerLibrary are timed, round t starting at library t mod n
/// (with two: ABBAABBA; no library always gets the same position in a step
/// that repeats the shape); then the fastest (see kTakeOverRatio; the
/// kernels are the incumbent where they run) runs every later call of the shape
/// on this thread. A library that declines in a warm-up call (oneDNN without
/// brgemm for the layout) is dropped and tuning restarts without it.
void tunedSgemm(const Operand &a, const Operand &b, int64_t m, int64_t n,
                int64_t k, float alpha, float beta, float *c,
                int64_t cRowStride, unsigned allowed) {
  GemmKey key{gemmThreads(), m,           n,          k,
              a.ld,          b.ld,        cRowStride, a.transposed,
              b.transposed,  beta != 0.0f};
  auto [entry, inserted] = tunings.try_emplace(key);
  GemmTuning &tuning = entry->second;
  bool decidedBefore = inserted || tuning.decided;
  if (inserted) {
    startTuning(tuning, allowed, /*dropped=*/0);
    // Decided by an earlier process on this CPU, for a library that runs.
    const DiskCache &cache = diskCache();
    auto cached = cache.choices.find(key);
    if (!tuning.decided && cached != cache.choices.end() &&
        times(tuning, cached->second)) {
      tuning.decided = true;
      tuning.chosen = cached->second;
      if (traceEnabled())
        pendingDecision = std::string("\"cached\": true, \"library\": \"") +
                          candidateName(cached->second) + "\"";
    }
  }
  if (tuning.decided) {
    countTiming(decidedBefore, tuning);
    if (!runCandidate(tuning.chosen, a, b, m, n, k, alpha, beta, c, cRowStride))
      runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return;
  }
  countTiming(decidedBefore, tuning);
  decidedBefore = false;
  int count = tuning.count;
  int call = tuning.calls++;
  if (call < count * kWarmupCallsPerLibrary) {
    int library = tuning.libraries[call % count];
    double start = gaccrt_now_us();
    if (!runCandidate(library, a, b, m, n, k, alpha, beta, c, cRowStride)) {
      // No kernel for this layout: tune without the library.
      startTuning(tuning, tuning.allowed, tuning.dropped | 1u << library);
      countTiming(decidedBefore, tuning);
      runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    }
    countTimingCall(start);
    return;
  }
  int t = call - count * kWarmupCallsPerLibrary;
  int library = tuning.libraries[(t % count + t / count) % count];
  double start = gaccrt_now_us();
  // The library ran this shape in its warm-up calls, so it does not decline
  // here; should it, OpenBLAS computes the result all the same.
  if (!runCandidate(library, a, b, m, n, k, alpha, beta, c, cRowStride))
    runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
  // The GEMM's epilogue (gaccrt_sgemm_epilogue) counts for every library:
  // the kernels run it on their tiles, the others after the GEMM, here.
  runPendingEpilogue(c, m, n);
  tuning.us[library][tuning.timed[library]++] = gaccrt_now_us() - start;
  countTimingCall(start);
  if (t + 1 == count * kTimedCallsPerLibrary) {
    // The kernels, written for the shapes of micro-batches, where they run
    // (the shape rule's oneDNN kept a 32x512x512 forward GEMM whose
    // kernels' fastest call was 8 % faster; in the rest of the step it then
    // ran at 139 GFLOP/s against 182 for the kernels); else the rule's
    // library (oneDNN's matmul on several threads, what ran there before its
    // sgemm was timed), else the first timed.
    int incumbent = times(tuning, kAvx512) ? int(kAvx512)
                    : times(tuning, kOnednn) &&
                            (prefersOnednn(a, n, k) || gemmThreads() != 1)
                        ? int(kOnednn)
                    : times(tuning, kOpenblas) ? int(kOpenblas)
                                               : tuning.libraries[0];
    decide(tuning, incumbent);
    countTiming(decidedBefore, tuning);
    recordDecision(key, tuning.chosen);
  }
}

} // namespace

thread_local std::string gaccrt::pendingDecision;

void gaccrt::rowMajorSgemm(const Operand &a, const Operand &b, int64_t m,
                           int64_t n, int64_t k, float alpha, float beta,
                           float *c, int64_t cRowStride) {
  // "onednn" on several GEMM threads: every GEMM on oneDNN where it has a
  // kernel (OpenBLAS for the rest), not the one-thread shape rule: mixing
  // it with OpenBLAS, whose workers and oneDNN's OpenMP threads would then
  // take turns spinning between calls, is what slows both down. A whole
  // step's choice on several threads (gacc-run's tuning) may be oneDNN: on
  // 2 threads it ran the 4x256, B = 8192, m = 1 and 2 steps at 46-48 ms
  // against 55-56 on the kernels or OpenBLAS. The AVX-512 kernels split
  // their GEMMs over gaccrt's own workers (GemmThreads.cpp).
  //
  // There oneDNN's two GEMMs, its matmul primitive and its sgemm, are timed
  // per shape as "auto" times the libraries on one thread (both run on
  // oneDNN's OpenMP threads): on 2 threads of a Zen 5 VM the sgemm took the
  // 256x256x8192 weight gradients (3.1 against 3.6 ms) and the matmul kept
  // the 8192x256x10 backward-data GEMM (0.36 against 0.6 ms); the 4x256,
  // B = 8192, m = 1 step went from 41 to 37-38 ms.
  Library chosen = library();
  if (chosen == Library::Onednn && gemmThreads() != 1) {
    if (m * n * k >= kMinTunedMacs) {
      tunedSgemm(a, b, m, n, k, alpha, beta, c, cRowStride, kOnednnCandidates);
      return;
    }
    if (!runOnednn(a, b, m, n, k, alpha, beta, c, cRowStride))
      runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return;
  }
  if (chosen == Library::OnednnSgemm) {
    if (!runThrough(onednnBlasSgemm, "onednn-sgemm", a, b, m, n, k, alpha, beta,
                    c, cRowStride))
      runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return;
  }
  if (chosen == Library::Openblas) {
    runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return;
  }
  if (chosen == Library::Avx512) {
    if (!runThrough(avx512Sgemm, "avx512", a, b, m, n, k, alpha, beta, c,
                    cRowStride))
      runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return;
  }
  // "auto" with several GEMM threads: the kernels for every GEMM, untimed.
  // OpenBLAS's pthread workers, like oneDNN's OpenMP threads, spin between
  // calls, so mixing it with the kernels' workers slows both down and
  // biases the timing against whichever runs next: per-shape tuning picked
  // OpenBLAS for some shapes of the 3x512 m = 8 step on 2 threads, which
  // then took 12.1-12.8 ms, as with OpenBLAS alone, against 5.7-5.8 ms with
  // the kernels alone (a 64x10x1024 logits GEMM took 775 us on two OpenBLAS
  // threads).
  if (chosen == Library::Auto && gemmThreads() != 1) {
    if (!runThrough(avx512Sgemm, "avx512", a, b, m, n, k, alpha, beta, c,
                    cRowStride))
      runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return;
  }
  if (chosen == Library::Auto && m * n * k >= kMinTunedMacs) {
    tunedSgemm(a, b, m, n, k, alpha, beta, c, cRowStride, kAllCandidates);
    return;
  }
  if (prefersOnednn(a, n, k) &&
      runOnednn(a, b, m, n, k, alpha, beta, c, cRowStride))
    return;
  runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
}

bool gaccrt::runsOnKernels(const Operand &a, const Operand &b, int64_t m,
                           int64_t n, int64_t k, float beta,
                           int64_t cRowStride) {
  Library chosen = library();
  if (chosen == Library::Avx512)
    return true;
  if (chosen != Library::Auto)
    return false;
  if (gemmThreads() != 1)
    return true;
  if (m * n * k < kMinTunedMacs)
    return false;
  auto it = tunings.find(GemmKey{1, m, n, k, a.ld, b.ld, cRowStride,
                                 a.transposed, b.transposed, beta != 0.0f});
  return it != tunings.end() && it->second.decided &&
         it->second.chosen == kAvx512;
}

int32_t gaccrt_internal_choose_gemm_library(const double *fastest_us,
                                            int32_t timed, int32_t incumbent) {
  int libraries[kCandidates];
  int count = 0;
  for (int library = 0; library < kCandidates; ++library)
    if (timed & (1 << library))
      libraries[count++] = library;
  return chooseLibrary(fastest_us, libraries, count, incumbent);
}

/// The whole-step choices: a library, or the kernels with the copies of a
/// pair in lockstep.
constexpr const char *kStepChoices[] = {"avx512", "avx512-lockstep", "onednn",
                                        "openblas"};

/// The choice among kStepChoices named `name`, or null.
const char *stepChoice(const char *name) {
  for (const char *choice : kStepChoices)
    if (name && std::strcmp(name, choice) == 0)
      return choice;
  return nullptr;
}

int32_t gaccrt_set_gemm_step_choice(const char *name) {
  const char *choice = stepChoice(name);
  if (!choice)
    return -1;
  bool lockstep = std::strcmp(choice, "avx512-lockstep") == 0;
  if (gaccrt_set_gemm_library(lockstep ? "avx512" : choice) != 0)
    return -1;
  gaccrt_set_copies(lockstep ? "lockstep" : "concurrent");
  return 0;
}

const char *gaccrt_gemm_use_step(const char *step_key) {
  if (library() != Library::Auto || gemmThreads() == 1 || !isStepKey(step_key))
    return nullptr;
  DiskCache &cache = diskCache();
  auto it = cache.stepChoices.find({gemmThreads(), step_key});
  if (it == cache.stepChoices.end() ||
      gaccrt_set_gemm_step_choice(it->second.c_str()) != 0)
    return nullptr;
  return stepChoice(it->second.c_str());
}

int32_t gaccrt_gemm_shapes_being_timed(void) {
  return shapesBeingTimed.load(std::memory_order_relaxed);
}

double gaccrt_gemm_timing_us(void) {
  return double(timingNs.load(std::memory_order_relaxed)) / 1e3;
}

int32_t gaccrt_gemm_cache_enabled(void) {
  return diskCache().path.empty() ? 0 : 1;
}

int32_t gaccrt_gemm_record_step(const char *step_key, const char *library) {
  int threads = gemmThreads();
  if (threads == 1 || !isStepKey(step_key) || !stepChoice(library))
    return -1;
  DiskCache &cache = diskCache();
  if (cache.path.empty())
    return -1;
  cache.stepChoices[{threads, step_key}] = library;
  appendToCache(cache, std::string(kStepCacheTag) + " " + cache.cpu + " " +
                           std::to_string(threads) + " " + step_key + " " +
                           library + "\n");
  return 0;
}
