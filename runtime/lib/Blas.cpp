//===- Blas.cpp - GEMM for compiled code through oneDNN or OpenBLAS -------===//
//
// gaccrt_sgemm: C = alpha * op(A) * op(B) + beta * C on 2-D f32 memrefs in
// MLIR's expanded descriptor form, by one oneDNN matmul (OnednnGemm.cpp),
// gaccrt's AVX-512 kernels (Avx512Gemm.cpp) or one cblas_sgemm call. Strided
// views are passed in place when the library can describe them (a row stride
// with unit column stride, or the transposed, column-major layout); anything
// else goes through a contiguous copy. The compiled accumulation `acc += x^T g`
// is the beta = 1 case and is traced as "accumulate". The library is chosen by
// gaccrt_set_gemm_library or GACCRT_GEMM (default "auto" when oneDNN or the
// AVX-512 kernels can run: each GEMM shape is timed with every library in its
// first calls and keeps the fastest).
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"

#include "Gemm.h"
#include "GemmShapes.h"
#include "Internal.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

using namespace gaccrt;

namespace {

/// A GEMM operand as BLAS sees it: a row-major `rows` x `cols` matrix with
/// leading dimension `ld`, used transposed when `transposed`.
struct Operand {
  const float *data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 1;
  bool transposed = false;
  std::vector<float> copy; // owns `data` when the layout needed a copy
};

/// Describes the stored matrix X (rows x cols with the given strides) for
/// BLAS, copying it when its layout has no BLAS description.
Operand describe(const float *base, int64_t rows, int64_t cols, int64_t stride0,
                 int64_t stride1, bool transposed) {
  Operand operand;
  // A stride along a dimension of size <= 1 is never used: pick the one
  // that makes the layout describable.
  int64_t rowMajorStride0 = rows <= 1 ? std::max<int64_t>(cols, 1) : stride0;
  int64_t rowMajorStride1 = cols <= 1 ? 1 : stride1;
  int64_t colMajorStride0 = rows <= 1 ? 1 : stride0;
  int64_t colMajorStride1 = cols <= 1 ? std::max<int64_t>(rows, 1) : stride1;
  if (rowMajorStride1 == 1 && rowMajorStride0 >= std::max<int64_t>(cols, 1)) {
    operand.data = base;
    operand.rows = rows;
    operand.cols = cols;
    operand.ld = rowMajorStride0;
    operand.transposed = transposed;
    return operand;
  }
  if (colMajorStride0 == 1 && colMajorStride1 >= std::max<int64_t>(rows, 1)) {
    // Column-major X is row-major X^T.
    operand.data = base;
    operand.rows = cols;
    operand.cols = rows;
    operand.ld = colMajorStride1;
    operand.transposed = !transposed;
    return operand;
  }
  operand.copy.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      operand.copy[i * cols + j] = base[i * stride0 + j * stride1];
  operand.data = operand.copy.data();
  operand.rows = rows;
  operand.cols = cols;
  operand.ld = std::max<int64_t>(cols, 1);
  operand.transposed = transposed;
  return operand;
}

CBLAS_TRANSPOSE toBlas(bool transposed) {
  return transposed ? CblasTrans : CblasNoTrans;
}

/// C = beta * C, where beta == 0 clears C (NaN included) as BLAS does.
void scale(float *c, int64_t rows, int64_t cols, int64_t stride0,
           int64_t stride1, float beta) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float &element = c[i * stride0 + j * stride1];
      element = beta == 0.0f ? 0.0f : beta * element;
    }
}

/// Auto: with one GEMM thread oneDNN, the AVX-512 kernels or OpenBLAS per
/// GEMM shape, timed in its first calls; with several the kernels (else
/// OpenBLAS). Onednn: the fixed shape rule of prefersOnednn (OpenBLAS with
/// several GEMM threads). Avx512: gaccrt's kernels for every GEMM, on the
/// GEMM thread count. Openblas: OpenBLAS alone.
enum class Library { Unset, Auto, Onednn, Avx512, Openblas };

std::atomic<Library> chosenLibrary{Library::Unset};

/// Parses a library name; Unset for an unknown one, for oneDNN when it is
/// not available (no header at build time or no libdnnl.so.2) and for the
/// AVX-512 kernels on a CPU without AVX-512F. "auto" is OpenBLAS when it is
/// the only library.
Library parseLibrary(const char *name) {
  if (std::strcmp(name, "openblas") == 0)
    return Library::Openblas;
  if (std::strcmp(name, "onednn") == 0 && onednnAvailable())
    return Library::Onednn;
  if (std::strcmp(name, "avx512") == 0 && avx512Available())
    return Library::Avx512;
  if (std::strcmp(name, "auto") == 0)
    return onednnAvailable() || avx512Available() ? Library::Auto
                                                  : Library::Openblas;
  return Library::Unset;
}

} // namespace

std::string gaccrt::checkGemmLibraryEnv() {
  const char *env = std::getenv("GACCRT_GEMM");
  if (!env || !*env || parseLibrary(env) != Library::Unset)
    return "";
  std::string names = "'auto', ";
  if (onednnAvailable())
    names += "'onednn', ";
  if (avx512Available())
    names += "'avx512', ";
  names.resize(names.size() - 2);
  names += " or 'openblas'";
  if (!onednnAvailable())
    names += " (oneDNN's libdnnl.so.2 is not available)";
  return "GACCRT_GEMM must be " + names + ", got '" + env + "'";
}

namespace {

Library library() {
  Library current = chosenLibrary.load(std::memory_order_relaxed);
  if (current != Library::Unset)
    return current;
  Library initial = parseLibrary("auto");
  if (const char *env = std::getenv("GACCRT_GEMM"); env && *env) {
    initial = parseLibrary(env);
    if (initial == Library::Unset)
      fatal(checkGemmLibraryEnv());
  }
  chosenLibrary.compare_exchange_strong(current, initial);
  return chosenLibrary.load(std::memory_order_relaxed);
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

/// The library of the calling thread's last gaccrt_sgemm (its trace event
/// and gaccrt_internal_last_gemm_library).
thread_local const char *lastLibrary = "none";

/// Whether the calling thread's last gaccrt_sgemm_pair took the paired pass.
thread_local bool lastPaired = false;

/// The trace argument ", \"threads\": N" of a GEMM gaccrt's kernels ran on
/// several threads, else "".
std::string threadsArg() {
  int32_t threads = gaccrt_internal_last_gemm_threads();
  return threads > 1 ? ", \"threads\": " + std::to_string(threads) : "";
}

/// The trace arguments of a GEMM's sizes and transposes (`more`: further
/// sizes after k).
std::string sizesArgs(int64_t m, int64_t n, int64_t k, const std::string &more,
                      bool ta, bool tb) {
  return "\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) +
         ", \"k\": " + std::to_string(k) + more +
         ", \"trans_a\": " + (ta ? "1" : "0") +
         ", \"trans_b\": " + (tb ? "1" : "0");
}

/// The GEMM in the element strides of GemmArgs (row-major C).
GemmArgs gemmArgs(const Operand &a, const Operand &b, int64_t m, int64_t n,
                  int64_t k, float alpha, float beta, float *c,
                  int64_t cRowStride) {
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

/// The libraries of "auto", in the order their calls alternate.
enum Candidate { kOnednn, kOpenblas, kAvx512, kCandidates };

const char *candidateName(int candidate) {
  static const char *const names[] = {"onednn", "openblas", "avx512"};
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
  default:
    runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return true;
  }
}

//===----------------------------------------------------------------------===//
// "auto": per-shape tuning
//===----------------------------------------------------------------------===//

/// A GEMM as the libraries see it: sizes, transposes, leading dimensions
/// and whether C is read (beta != 0, oneDNN's sum post-op).
struct GemmKey {
  int64_t m, n, k, lda, ldb, ldc;
  bool transA, transB, readsC;
  bool operator==(const GemmKey &other) const {
    return m == other.m && n == other.n && k == other.k && lda == other.lda &&
           ldb == other.ldb && ldc == other.ldc && transA == other.transA &&
           transB == other.transB && readsC == other.readsC;
  }
};

struct GemmKeyHash {
  size_t operator()(const GemmKey &key) const {
    size_t h = 0;
    for (int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc,
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
/// Smaller GEMMs (in multiply-adds) follow the rule: below about a
/// microsecond, timing them is noise. The logits layer's GEMMs (10 outputs)
/// are above it: at b = 32 OpenBLAS and oneDNN ran them at 36-65 GFLOP/s
/// inside a 3x512 step, the kernels at 45-106 (158 against 124 us per
/// m = 8 step).
constexpr int64_t kMinTunedMacs = int64_t(1) << 16;

struct GemmTuning {
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
/// The trace arguments of a decision the current gaccrt_sgemm made (traced
/// there as a "gemm-tuning" event, under the caller's sizes); "" if none.
thread_local std::string pendingDecision;

/// The fastest call: the early calls of a step are slowed down by first
/// touches and other work on the machine, never sped up.
double fastest(const double *values, int count) {
  return *std::min_element(values, values + count);
}

/// The fastest of the `count` libraries (Candidate) with the fastest calls
/// `best` (indexed by Candidate), unless it is not kTakeOverRatio faster
/// than `incumbent`.
int chooseLibrary(const double *best, const int *libraries, int count,
                  int incumbent) {
  int winner = incumbent;
  for (int i = 0; i < count; ++i)
    if (best[libraries[i]] < best[winner])
      winner = libraries[i];
  if (winner != incumbent && !(best[winner] < kTakeOverRatio * best[incumbent]))
    winner = incumbent;
  return winner;
}

/// Decides `tuning` from its timed calls (see pendingDecision): the fastest
/// library, unless it is not kTakeOverRatio faster than `incumbent`.
void decide(GemmTuning &tuning, int incumbent) {
  double best[kCandidates] = {};
  for (int i = 0; i < tuning.count; ++i) {
    int library = tuning.libraries[i];
    best[library] = fastest(tuning.us[library], tuning.timed[library]);
  }
  int winner = chooseLibrary(best, tuning.libraries, tuning.count, incumbent);
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

/// Starts (or restarts) tuning a shape with the libraries that can run,
/// less those in the bit set `dropped` (1 << Candidate).
void startTuning(GemmTuning &tuning, unsigned dropped) {
  tuning = GemmTuning();
  tuning.dropped = dropped;
  bool available[kCandidates] = {onednnAvailable(), true, avx512Available()};
  for (int library = 0; library < kCandidates; ++library)
    if (available[library] && !(dropped & (1u << library)))
      tuning.libraries[tuning.count++] = library;
  if (tuning.count == 1) {
    tuning.decided = true;
    tuning.chosen = kOpenblas;
  }
}

/// "auto": with n libraries (oneDNN where it loads, OpenBLAS, the AVX-512
/// kernels on an AVX-512 CPU, in that order), the shape's first
/// n * kWarmupCallsPerLibrary calls cycle through them untimed and the next
/// n * kTimedCallsPerLibrary are timed, round t starting at library t mod n
/// (with two: ABBAABBA; no library always gets the same position in a step
/// that repeats the shape); then the fastest (see kTakeOverRatio; the
/// kernels are the incumbent where they run) runs every later call of the shape
/// on this thread. A library that declines in a warm-up call (oneDNN without
/// brgemm for the layout) is dropped and tuning restarts without it.
void tunedSgemm(const Operand &a, const Operand &b, int64_t m, int64_t n,
                int64_t k, float alpha, float beta, float *c,
                int64_t cRowStride) {
  GemmKey key{
      m,           n, k, a.ld, b.ld, cRowStride, a.transposed, b.transposed,
      beta != 0.0f};
  auto [entry, inserted] = tunings.try_emplace(key);
  GemmTuning &tuning = entry->second;
  if (inserted)
    startTuning(tuning, /*dropped=*/0);
  if (tuning.decided) {
    if (!runCandidate(tuning.chosen, a, b, m, n, k, alpha, beta, c, cRowStride))
      runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    return;
  }
  int count = tuning.count;
  int call = tuning.calls++;
  if (call < count * kWarmupCallsPerLibrary) {
    int library = tuning.libraries[call % count];
    if (!runCandidate(library, a, b, m, n, k, alpha, beta, c, cRowStride)) {
      // No kernel for this layout: tune without the library.
      startTuning(tuning, tuning.dropped | 1u << library);
      runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
    }
    return;
  }
  int t = call - count * kWarmupCallsPerLibrary;
  int library = tuning.libraries[(t % count + t / count) % count];
  double start = gaccrt_now_us();
  // The library ran this shape in its warm-up calls, so it does not decline
  // here; should it, OpenBLAS computes the result all the same.
  if (!runCandidate(library, a, b, m, n, k, alpha, beta, c, cRowStride))
    runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
  tuning.us[library][tuning.timed[library]++] = gaccrt_now_us() - start;
  if (t + 1 == count * kTimedCallsPerLibrary) {
    // The kernels, written for the shapes of micro-batches, where they run
    // (the shape rule's oneDNN kept a 32x512x512 forward GEMM whose
    // kernels' fastest call was 8 % faster; in the rest of the step it then
    // ran at 139 GFLOP/s against 182 for the kernels); else the rule's
    // library.
    bool kernels = std::find(tuning.libraries, tuning.libraries + tuning.count,
                             int(kAvx512)) != tuning.libraries + tuning.count;
    bool ruleOnednn = prefersOnednn(a, n, k) && tuning.libraries[0] == kOnednn;
    decide(tuning, kernels ? kAvx512 : ruleOnednn ? kOnednn : kOpenblas);
  }
}

/// One GEMM on row-major-describable operands through the chosen library
/// (see Library). `cColStride` is 1 (row-major C).
void rowMajorSgemm(const Operand &a, const Operand &b, int64_t m, int64_t n,
                   int64_t k, float alpha, float beta, float *c,
                   int64_t cRowStride) {
  // With several GEMM threads oneDNN takes no part and libdnnl.so.2 is
  // never loaded: its OpenMP threads and OpenBLAS's would spin against each
  // other between calls. The AVX-512 kernels split their GEMMs over
  // gaccrt's own workers (GemmThreads.cpp).
  Library chosen = library();
  if (chosen == Library::Openblas ||
      (chosen == Library::Onednn && gemmThreads() != 1)) {
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
    tunedSgemm(a, b, m, n, k, alpha, beta, c, cRowStride);
    return;
  }
  if (prefersOnednn(a, n, k) &&
      runOnednn(a, b, m, n, k, alpha, beta, c, cRowStride))
    return;
  runOpenblas(a, b, m, n, k, alpha, beta, c, cRowStride);
}

/// Whether gaccrt_sgemm would run the GEMM (row-major C) on gaccrt's
/// AVX-512 kernels: always under "avx512" and under "auto" on several GEMM
/// threads; under "auto" on one thread when the shape's tuning has chosen
/// them. Never tunes: a pair of GEMMs whose shapes are still being timed
/// runs as two calls (gaccrt_sgemm_pair).
bool runsOnKernels(const Operand &a, const Operand &b, int64_t m, int64_t n,
                   int64_t k, float beta, int64_t cRowStride) {
  Library chosen = library();
  if (chosen == Library::Avx512)
    return true;
  if (chosen != Library::Auto)
    return false;
  if (gemmThreads() != 1)
    return true;
  if (m * n * k < kMinTunedMacs)
    return false;
  auto it = tunings.find(GemmKey{m, n, k, a.ld, b.ld, cRowStride, a.transposed,
                                 b.transposed, beta != 0.0f});
  return it != tunings.end() && it->second.decided &&
         it->second.chosen == kAvx512;
}

} // namespace

int gaccrt::gemmThreads() { return std::max(1, openblas_get_num_threads()); }

bool gaccrt::kernelsTakeEveryGemm() {
  Library chosen = library();
  return avx512Available() && (chosen == Library::Avx512 ||
                               (chosen == Library::Auto && gemmThreads() != 1));
}

int32_t gaccrt_set_gemm_library(const char *name) {
  Library parsed = name ? parseLibrary(name) : Library::Unset;
  if (parsed == Library::Unset)
    return -1;
  chosenLibrary.store(parsed, std::memory_order_relaxed);
  return 0;
}

const char *gaccrt_internal_last_gemm_library(void) { return lastLibrary; }

int32_t gaccrt_internal_choose_gemm_library(const double *fastest_us,
                                            int32_t timed, int32_t incumbent) {
  int libraries[kCandidates];
  int count = 0;
  for (int library = 0; library < kCandidates; ++library)
    if (timed & (1 << library))
      libraries[count++] = library;
  return chooseLibrary(fastest_us, libraries, count, incumbent);
}

void gaccrt_internal_set_gemm_threads(int32_t threads) {
  openblas_set_num_threads(threads);
}

int32_t gaccrt_internal_gemm_threads(void) { return gemmThreads(); }

int32_t gaccrt_internal_last_gemm_paired(void) { return lastPaired; }

int32_t gaccrt_internal_last_gemm_threads(void) {
  return std::strcmp(lastLibrary, "avx512") == 0 ? avx512LastThreads() : 0;
}

const char *gaccrt_gemm_library(void) {
  switch (library()) {
  case Library::Auto:
    return "auto";
  case Library::Onednn:
    return "onednn";
  case Library::Avx512:
    return "avx512";
  default:
    return "openblas";
  }
}

namespace {
/// A 2-D memref operand as the C ABI passes it (without its allocated
/// pointer).
struct Matrix {
  float *aligned;
  int64_t offset, size0, size1, stride0, stride1;
};

/// gaccrt_sgemm on `a`, `b` and `c`; its trace event is named "sgemm
/// <name> <shape>" (with `traceArgs` among its arguments) when `name` is not
/// null, "sgemm <shape>" otherwise. `caller` names the entry point in
/// errors.
void runSgemm(const char *caller, bool ta, bool tb, float alpha, float beta,
              const Matrix &am, const Matrix &bm, const Matrix &cm,
              const char *name = nullptr, const std::string &traceShape = "",
              const std::string &traceArgs = "") {
  lastLibrary = "none";
  GemmSizes sizes;
  std::string mismatch = checkGemmShapes(ta, tb, am.size0, am.size1, bm.size0,
                                         bm.size1, cm.size0, cm.size1, sizes);
  if (!mismatch.empty())
    fatal(std::string(caller) + ": " + mismatch);
  int64_t m = sizes.m, n = sizes.n, k = sizes.k;
  if (std::max({m, n, k}) > INT_MAX)
    fatal(std::string(caller) + ": sizes " + shapeText(m, n) + "x" +
          std::to_string(k) + " exceed the BLAS integer range");
  if (m == 0 || n == 0)
    return;
  if (!am.aligned || !bm.aligned || !cm.aligned)
    fatal(std::string(caller) + ": NULL data pointer for a non-empty operand");

  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;

  int64_t cStride0 = cm.stride0, cStride1 = cm.stride1;
  float *c = cm.aligned + cm.offset;
  if (k == 0) {
    scale(c, m, n, cStride0, cStride1, beta);
  } else {
    Operand a = describe(am.aligned + am.offset, am.size0, am.size1, am.stride0,
                         am.stride1, ta);
    Operand b = describe(bm.aligned + bm.offset, bm.size0, bm.size1, bm.stride0,
                         bm.stride1, tb);
    int64_t cRowStride = m <= 1 ? std::max<int64_t>(n, 1) : cStride0;
    int64_t cColStride = n <= 1 ? 1 : cStride1;
    int64_t cColMajorRowStride = m <= 1 ? 1 : cStride0;
    int64_t cColMajorColStride = n <= 1 ? std::max<int64_t>(m, 1) : cStride1;
    if (cColStride == 1 && cRowStride >= n) {
      rowMajorSgemm(a, b, m, n, k, alpha, beta, c, cRowStride);
    } else if (cColMajorRowStride == 1 && cColMajorColStride >= m) {
      // Column-major C: compute C^T = op(B)^T * op(A)^T in row-major terms.
      Operand bT = {b.data, b.rows, b.cols, b.ld, !b.transposed, {}};
      Operand aT = {a.data, a.rows, a.cols, a.ld, !a.transposed, {}};
      rowMajorSgemm(bT, aT, n, m, k, alpha, beta, c, cColMajorColStride);
    } else {
      if ((m > 1 && cStride0 == 0) || (n > 1 && cStride1 == 0))
        fatal(std::string(caller) + ": C (" + shapeText(m, n) + ", strides " +
              std::to_string(cStride0) + ", " + std::to_string(cStride1) +
              ") has overlapping elements");
      std::vector<float> temporary(static_cast<size_t>(m * n), 0.0f);
      if (beta != 0.0f)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            temporary[i * n + j] = c[i * cStride0 + j * cStride1];
      rowMajorSgemm(a, b, m, n, k, alpha, beta, temporary.data(), n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          c[i * cStride0 + j * cStride1] = temporary[i * n + j];
    }
  }

  if (tracing) {
    double end = gaccrt_now_us();
    std::string shape =
        std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    std::string sizes = sizesArgs(m, n, k, "", ta, tb);
    std::string eventName =
        name ? std::string("sgemm ") + name + " " + traceShape
             : "sgemm " + shape;
    traceComplete(eventName, beta != 0.0f ? "accumulate" : "gemm", start,
                  end - start,
                  "{" + sizes + ", \"library\": \"" + lastLibrary + "\"" +
                      traceArgs + threadsArg() + "}");
    if (!pendingDecision.empty()) {
      traceComplete("gemm choice " + shape, "gemm-tuning", end, 0.0,
                    "{" + sizes + ", " + pendingDecision + "}");
      pendingDecision.clear();
    }
  }
}
} // namespace

void gaccrt_sgemm(int32_t transA, int32_t transB, float alpha, float beta,
                  float *aAlloc, float *aAligned, int64_t aOffset,
                  int64_t aSize0, int64_t aSize1, int64_t aStride0,
                  int64_t aStride1, float *bAlloc, float *bAligned,
                  int64_t bOffset, int64_t bSize0, int64_t bSize1,
                  int64_t bStride0, int64_t bStride1, float *cAlloc,
                  float *cAligned, int64_t cOffset, int64_t cSize0,
                  int64_t cSize1, int64_t cStride0, int64_t cStride1) {
  (void)aAlloc;
  (void)bAlloc;
  (void)cAlloc;
  runSgemm("gaccrt_sgemm", transA != 0, transB != 0, alpha, beta,
           {aAligned, aOffset, aSize0, aSize1, aStride0, aStride1},
           {bAligned, bOffset, bSize0, bSize1, bStride0, bStride1},
           {cAligned, cOffset, cSize0, cSize1, cStride0, cStride1});
}

namespace {

/// Whether `second` continues `first` in memory along dimension `dim`
/// (0: rows, 1: columns): the same size across it, the same strides, and
/// its first element where `first`'s next one along `dim` would be.
bool continues(const Matrix &first, const Matrix &second, int dim) {
  int64_t firstSize = dim == 0 ? first.size0 : first.size1;
  int64_t secondSize = dim == 0 ? second.size0 : second.size1;
  int64_t stride = dim == 0 ? first.stride0 : first.stride1;
  int64_t across = dim == 0 ? first.size1 : first.size0;
  if (!first.aligned || !second.aligned || firstSize <= 0 || secondSize <= 0 ||
      across <= 0 || stride <= 0 || first.stride0 != second.stride0 ||
      first.stride1 != second.stride1 ||
      across != (dim == 0 ? second.size1 : second.size0))
    return false;
  auto address = [](const Matrix &matrix) {
    return reinterpret_cast<uintptr_t>(matrix.aligned) +
           static_cast<uintptr_t>(matrix.offset) * sizeof(float);
  };
  return address(second) ==
         address(first) +
             static_cast<uintptr_t>(firstSize * stride) * sizeof(float);
}

/// Stacks `count` operands along `dim` into `stacked` when each continues
/// the one before: the operands of GEMM pairs whose buffers gacc-plan-arena
/// placed one after the other.
bool stackAll(const Matrix *operands, int count, int dim, Matrix &stacked) {
  stacked = operands[0];
  for (int i = 1; i < count; ++i) {
    if (!continues(operands[i - 1], operands[i], dim))
      return false;
    (dim == 0 ? stacked.size0 : stacked.size1) +=
        dim == 0 ? operands[i].size0 : operands[i].size1;
  }
  return true;
}

/// The inner sizes of `count` GEMMs as "k1+k2+...".
std::string innerSizes(const GemmSizes *sizes, int count) {
  std::string text;
  for (int i = 0; i < count; ++i)
    text += (i ? "+" : "") + std::to_string(sizes[i].k);
  return text;
}

/// The paired pass of gaccrt_sgemm_pair and gaccrt_sgemm_quad on the
/// kernels: C += alpha * sum of op(A[i]) * op(B[i]) (C scaled by beta
/// first) in one pass over C, when C is row-major, every operand usable in
/// place and every shape on the kernels; false (nothing written) otherwise.
/// Traces the pass as "sgemm <name> MxNxk1+k2...".
bool runPairedPass(const char *name, bool ta, bool tb, float alpha, float beta,
                   int count, const Matrix *a, const Matrix *b, const Matrix &c,
                   const GemmSizes *sizes) {
  int64_t m = sizes[0].m, n = sizes[0].n;
  if (m <= 0 || n <= 0 || !c.aligned || c.stride1 != 1 || c.stride0 < n ||
      std::max(m, n) > INT_MAX)
    return false;
  std::vector<Operand> as, bs;
  for (int i = 0; i < count; ++i) {
    if (sizes[i].k <= 0 || sizes[i].k > INT_MAX || !a[i].aligned ||
        !b[i].aligned)
      return false;
    as.push_back(describe(a[i].aligned + a[i].offset, a[i].size0, a[i].size1,
                          a[i].stride0, a[i].stride1, ta));
    bs.push_back(describe(b[i].aligned + b[i].offset, b[i].size0, b[i].size1,
                          b[i].stride0, b[i].stride1, tb));
    if (!as.back().copy.empty() || !bs.back().copy.empty())
      return false;
  }
  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;
  float *cData = c.aligned + c.offset;
  std::vector<GemmArgs> gemms;
  for (int i = 0; i < count; ++i) {
    float iBeta = i == 0 ? beta : 1.0f;
    if (!runsOnKernels(as[i], bs[i], m, n, sizes[i].k, iBeta, c.stride0))
      return false;
    gemms.push_back(gemmArgs(as[i], bs[i], m, n, sizes[i].k, alpha, iBeta,
                             cData, c.stride0));
  }
  if (!avx512SgemmPair(gemms.data(), count))
    return false;
  lastLibrary = "avx512";
  if (tracing) {
    double end = gaccrt_now_us();
    std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x";
    std::string more;
    for (int i = 0; i < count; ++i) {
      shape += (i ? "+" : "") + std::to_string(sizes[i].k);
      if (i > 0)
        more += ", \"k" + std::to_string(i + 1) +
                "\": " + std::to_string(sizes[i].k);
    }
    traceComplete(std::string("sgemm ") + name + " " + shape, "accumulate",
                  start, end - start,
                  "{" + sizesArgs(m, n, sizes[0].k, more, ta, tb) +
                      ", \"library\": \"avx512\", \"paired\": 1" +
                      threadsArg() + "}");
  }
  return true;
}
} // namespace

void gaccrt_sgemm_pair(int32_t transA, int32_t transB, float alpha, float beta,
                       float *a1Alloc, float *a1Aligned, int64_t a1Offset,
                       int64_t a1Size0, int64_t a1Size1, int64_t a1Stride0,
                       int64_t a1Stride1, float *b1Alloc, float *b1Aligned,
                       int64_t b1Offset, int64_t b1Size0, int64_t b1Size1,
                       int64_t b1Stride0, int64_t b1Stride1, float *a2Alloc,
                       float *a2Aligned, int64_t a2Offset, int64_t a2Size0,
                       int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1,
                       float *b2Alloc, float *b2Aligned, int64_t b2Offset,
                       int64_t b2Size0, int64_t b2Size1, int64_t b2Stride0,
                       int64_t b2Stride1, float *cAlloc, float *cAligned,
                       int64_t cOffset, int64_t cSize0, int64_t cSize1,
                       int64_t cStride0, int64_t cStride1) {
  bool ta = transA != 0, tb = transB != 0;
  GemmSizes sizes[2];
  std::string mismatch = checkGemmShapes(ta, tb, a1Size0, a1Size1, b1Size0,
                                         b1Size1, cSize0, cSize1, sizes[0]);
  if (mismatch.empty())
    mismatch = checkGemmShapes(ta, tb, a2Size0, a2Size1, b2Size0, b2Size1,
                               cSize0, cSize1, sizes[1]);
  if (!mismatch.empty())
    fatal("gaccrt_sgemm_pair: " + mismatch);
  Matrix a[2] = {{a1Aligned, a1Offset, a1Size0, a1Size1, a1Stride0, a1Stride1},
                 {a2Aligned, a2Offset, a2Size0, a2Size1, a2Stride0, a2Stride1}};
  Matrix b[2] = {{b1Aligned, b1Offset, b1Size0, b1Size1, b1Stride0, b1Stride1},
                 {b2Aligned, b2Offset, b2Size0, b2Size1, b2Stride0, b2Stride1}};
  Matrix c{cAligned, cOffset, cSize0, cSize1, cStride0, cStride1};
  lastPaired = false;
  // Operands that lie one after the other are one GEMM over both inner
  // ranges (the library chosen for its shape).
  Matrix stackedA, stackedB;
  if (stackAll(a, 2, ta ? 0 : 1, stackedA) &&
      stackAll(b, 2, tb ? 1 : 0, stackedB)) {
    runSgemm("gaccrt_sgemm_pair", ta, tb, alpha, beta, stackedA, stackedB, c,
             "pair",
             shapeText(sizes[0].m, sizes[0].n) + "x" + innerSizes(sizes, 2),
             ", \"stacked\": 1");
    lastPaired = true;
    return;
  }
  if (runPairedPass("pair", ta, tb, alpha, beta, 2, a, b, c, sizes)) {
    lastPaired = true;
    return;
  }
  // Two calls: the paired pass has their bits wherever it runs.
  gaccrt_sgemm(transA, transB, alpha, beta, a1Alloc, a1Aligned, a1Offset,
               a1Size0, a1Size1, a1Stride0, a1Stride1, b1Alloc, b1Aligned,
               b1Offset, b1Size0, b1Size1, b1Stride0, b1Stride1, cAlloc,
               cAligned, cOffset, cSize0, cSize1, cStride0, cStride1);
  gaccrt_sgemm(transA, transB, alpha, 1.0f, a2Alloc, a2Aligned, a2Offset,
               a2Size0, a2Size1, a2Stride0, a2Stride1, b2Alloc, b2Aligned,
               b2Offset, b2Size0, b2Size1, b2Stride0, b2Stride1, cAlloc,
               cAligned, cOffset, cSize0, cSize1, cStride0, cStride1);
}

void gaccrt_sgemm_quad(
    int32_t transA, int32_t transB, float alpha, float beta, float *a1Alloc,
    float *a1Aligned, int64_t a1Offset, int64_t a1Size0, int64_t a1Size1,
    int64_t a1Stride0, int64_t a1Stride1, float *b1Alloc, float *b1Aligned,
    int64_t b1Offset, int64_t b1Size0, int64_t b1Size1, int64_t b1Stride0,
    int64_t b1Stride1, float *a2Alloc, float *a2Aligned, int64_t a2Offset,
    int64_t a2Size0, int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1,
    float *b2Alloc, float *b2Aligned, int64_t b2Offset, int64_t b2Size0,
    int64_t b2Size1, int64_t b2Stride0, int64_t b2Stride1, float *a3Alloc,
    float *a3Aligned, int64_t a3Offset, int64_t a3Size0, int64_t a3Size1,
    int64_t a3Stride0, int64_t a3Stride1, float *b3Alloc, float *b3Aligned,
    int64_t b3Offset, int64_t b3Size0, int64_t b3Size1, int64_t b3Stride0,
    int64_t b3Stride1, float *a4Alloc, float *a4Aligned, int64_t a4Offset,
    int64_t a4Size0, int64_t a4Size1, int64_t a4Stride0, int64_t a4Stride1,
    float *b4Alloc, float *b4Aligned, int64_t b4Offset, int64_t b4Size0,
    int64_t b4Size1, int64_t b4Stride0, int64_t b4Stride1, float *cAlloc,
    float *cAligned, int64_t cOffset, int64_t cSize0, int64_t cSize1,
    int64_t cStride0, int64_t cStride1) {
  bool ta = transA != 0, tb = transB != 0;
  Matrix a[4] = {{a1Aligned, a1Offset, a1Size0, a1Size1, a1Stride0, a1Stride1},
                 {a2Aligned, a2Offset, a2Size0, a2Size1, a2Stride0, a2Stride1},
                 {a3Aligned, a3Offset, a3Size0, a3Size1, a3Stride0, a3Stride1},
                 {a4Aligned, a4Offset, a4Size0, a4Size1, a4Stride0, a4Stride1}};
  Matrix b[4] = {{b1Aligned, b1Offset, b1Size0, b1Size1, b1Stride0, b1Stride1},
                 {b2Aligned, b2Offset, b2Size0, b2Size1, b2Stride0, b2Stride1},
                 {b3Aligned, b3Offset, b3Size0, b3Size1, b3Stride0, b3Stride1},
                 {b4Aligned, b4Offset, b4Size0, b4Size1, b4Stride0, b4Stride1}};
  Matrix c{cAligned, cOffset, cSize0, cSize1, cStride0, cStride1};
  GemmSizes sizes[4];
  for (int i = 0; i < 4; ++i) {
    std::string mismatch =
        checkGemmShapes(ta, tb, a[i].size0, a[i].size1, b[i].size0, b[i].size1,
                        cSize0, cSize1, sizes[i]);
    if (!mismatch.empty())
      fatal("gaccrt_sgemm_quad: " + mismatch);
  }
  lastPaired = false;
  Matrix stackedA, stackedB;
  if (stackAll(a, 4, ta ? 0 : 1, stackedA) &&
      stackAll(b, 4, tb ? 1 : 0, stackedB)) {
    runSgemm("gaccrt_sgemm_quad", ta, tb, alpha, beta, stackedA, stackedB, c,
             "quad",
             shapeText(sizes[0].m, sizes[0].n) + "x" + innerSizes(sizes, 4),
             ", \"stacked\": 1");
    lastPaired = true;
    return;
  }
  if (runPairedPass("quad", ta, tb, alpha, beta, 4, a, b, c, sizes)) {
    lastPaired = true;
    return;
  }
  // Otherwise the two pairs (each one pass where the kernels take it).
  gaccrt_sgemm_pair(transA, transB, alpha, beta, a1Alloc, a1Aligned, a1Offset,
                    a1Size0, a1Size1, a1Stride0, a1Stride1, b1Alloc, b1Aligned,
                    b1Offset, b1Size0, b1Size1, b1Stride0, b1Stride1, a2Alloc,
                    a2Aligned, a2Offset, a2Size0, a2Size1, a2Stride0, a2Stride1,
                    b2Alloc, b2Aligned, b2Offset, b2Size0, b2Size1, b2Stride0,
                    b2Stride1, cAlloc, cAligned, cOffset, cSize0, cSize1,
                    cStride0, cStride1);
  gaccrt_sgemm_pair(transA, transB, alpha, 1.0f, a3Alloc, a3Aligned, a3Offset,
                    a3Size0, a3Size1, a3Stride0, a3Stride1, b3Alloc, b3Aligned,
                    b3Offset, b3Size0, b3Size1, b3Stride0, b3Stride1, a4Alloc,
                    a4Aligned, a4Offset, a4Size0, a4Size1, a4Stride0, a4Stride1,
                    b4Alloc, b4Aligned, b4Offset, b4Size0, b4Size1, b4Stride0,
                    b4Stride1, cAlloc, cAligned, cOffset, cSize0, cSize1,
                    cStride0, cStride1);
  lastPaired = false;
}

void gaccrt_sgemm_rows_pair(
    int32_t transA, int32_t transB, float alpha, float beta, float *a1Alloc,
    float *a1Aligned, int64_t a1Offset, int64_t a1Size0, int64_t a1Size1,
    int64_t a1Stride0, int64_t a1Stride1, float *bAlloc, float *bAligned,
    int64_t bOffset, int64_t bSize0, int64_t bSize1, int64_t bStride0,
    int64_t bStride1, float *c1Alloc, float *c1Aligned, int64_t c1Offset,
    int64_t c1Size0, int64_t c1Size1, int64_t c1Stride0, int64_t c1Stride1,
    float *a2Alloc, float *a2Aligned, int64_t a2Offset, int64_t a2Size0,
    int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1, float *c2Alloc,
    float *c2Aligned, int64_t c2Offset, int64_t c2Size0, int64_t c2Size1,
    int64_t c2Stride0, int64_t c2Stride1) {
  bool ta = transA != 0, tb = transB != 0;
  GemmSizes first, second;
  std::string mismatch = checkGemmShapes(ta, tb, a1Size0, a1Size1, bSize0,
                                         bSize1, c1Size0, c1Size1, first);
  if (mismatch.empty())
    mismatch = checkGemmShapes(ta, tb, a2Size0, a2Size1, bSize0, bSize1,
                               c2Size0, c2Size1, second);
  if (!mismatch.empty())
    fatal("gaccrt_sgemm_rows_pair: " + mismatch);
  int64_t m = first.m, n = first.n, k = first.k;
  // Rows that lie one after the other, in A and in C, are one GEMM over
  // all of them (the library chosen for its shape).
  Matrix as[2] = {
      {a1Aligned, a1Offset, a1Size0, a1Size1, a1Stride0, a1Stride1},
      {a2Aligned, a2Offset, a2Size0, a2Size1, a2Stride0, a2Stride1}};
  Matrix cs[2] = {
      {c1Aligned, c1Offset, c1Size0, c1Size1, c1Stride0, c1Stride1},
      {c2Aligned, c2Offset, c2Size0, c2Size1, c2Stride0, c2Stride1}};
  Matrix stackedA, stackedC;
  if (stackAll(as, 2, ta ? 1 : 0, stackedA) && stackAll(cs, 2, 0, stackedC)) {
    runSgemm("gaccrt_sgemm_rows_pair", ta, tb, alpha, beta, stackedA,
             {bAligned, bOffset, bSize0, bSize1, bStride0, bStride1}, stackedC,
             "rows pair",
             std::to_string(m) + "+" + std::to_string(second.m) + "x" +
                 std::to_string(n) + "x" + std::to_string(k),
             ", \"stacked\": 1");
    lastPaired = true;
    return;
  }
  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;
  // One pass over op(B) for both: the same sizes and layouts, C row-major,
  // every operand usable in place, the shape on the kernels.
  bool fused = false;
  lastPaired = false;
  if (m > 1 && n > 1 && k > 0 && second.m == m && a1Aligned && a2Aligned &&
      bAligned && c1Aligned && c2Aligned && a1Stride0 == a2Stride0 &&
      a1Stride1 == a2Stride1 && c1Stride1 == 1 && c2Stride1 == 1 &&
      c1Stride0 == c2Stride0 && c1Stride0 >= n &&
      std::max({m, n, k}) <= INT_MAX) {
    Operand a1 = describe(a1Aligned + a1Offset, a1Size0, a1Size1, a1Stride0,
                          a1Stride1, ta);
    Operand a2 = describe(a2Aligned + a2Offset, a2Size0, a2Size1, a2Stride0,
                          a2Stride1, ta);
    Operand b =
        describe(bAligned + bOffset, bSize0, bSize1, bStride0, bStride1, tb);
    if (a1.copy.empty() && a2.copy.empty() && b.copy.empty() &&
        a1.transposed == a2.transposed && a1.ld == a2.ld &&
        runsOnKernels(a1, b, m, n, k, beta, c1Stride0) &&
        avx512SgemmRowsPair(gemmArgs(a1, b, m, n, k, alpha, beta,
                                     c1Aligned + c1Offset, c1Stride0),
                            a2.data, c2Aligned + c2Offset)) {
      fused = true;
      lastLibrary = "avx512";
    }
  }
  lastPaired = fused;
  if (!fused) {
    // Two calls: the fused pass has their bits wherever it runs.
    gaccrt_sgemm(transA, transB, alpha, beta, a1Alloc, a1Aligned, a1Offset,
                 a1Size0, a1Size1, a1Stride0, a1Stride1, bAlloc, bAligned,
                 bOffset, bSize0, bSize1, bStride0, bStride1, c1Alloc,
                 c1Aligned, c1Offset, c1Size0, c1Size1, c1Stride0, c1Stride1);
    gaccrt_sgemm(transA, transB, alpha, beta, a2Alloc, a2Aligned, a2Offset,
                 a2Size0, a2Size1, a2Stride0, a2Stride1, bAlloc, bAligned,
                 bOffset, bSize0, bSize1, bStride0, bStride1, c2Alloc,
                 c2Aligned, c2Offset, c2Size0, c2Size1, c2Stride0, c2Stride1);
    return;
  }
  if (tracing) {
    double end = gaccrt_now_us();
    std::string shape = std::to_string(m) + "+" + std::to_string(m) + "x" +
                        std::to_string(n) + "x" + std::to_string(k);
    traceComplete(
        "sgemm rows pair " + shape, beta != 0.0f ? "accumulate" : "gemm", start,
        end - start,
        "{" + sizesArgs(m, n, k, ", \"m2\": " + std::to_string(m), ta, tb) +
            ", \"library\": \"avx512\"" + threadsArg() + "}");
  }
}
