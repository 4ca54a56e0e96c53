//===- BlasTest.cpp - gaccrt_sgemm against a naive loop -------------------===//

#include "gaccrt/gaccrt.h"

#include "Internal.h"
#include "StepTuning.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace {

/// A 2-D f32 memref: storage plus MLIR's (offset, sizes, strides).
struct View {
  std::vector<float> storage;
  int64_t offset = 0, size0 = 0, size1 = 0, stride0 = 0, stride1 = 0;

  float &at(int64_t i, int64_t j) {
    return storage[offset + i * stride0 + j * stride1];
  }
};

/// How a test lays out a logical rows x cols matrix in memory.
enum class Layout {
  Contiguous, ///< row-major, no padding
  SubView,    ///< a window of a larger row-major buffer (row stride > cols)
  ColMajor,   ///< unit row stride (a transposed buffer)
  Strided,    ///< no unit stride at all (needs a copy)
};

const char *layoutName(Layout layout) {
  switch (layout) {
  case Layout::Contiguous:
    return "contiguous";
  case Layout::SubView:
    return "subview";
  case Layout::ColMajor:
    return "colmajor";
  case Layout::Strided:
    return "strided";
  }
  return "";
}

View makeView(int64_t rows, int64_t cols, Layout layout, std::mt19937 &rng) {
  View view;
  view.size0 = rows;
  view.size1 = cols;
  switch (layout) {
  case Layout::Contiguous:
    view.stride0 = cols;
    view.stride1 = 1;
    break;
  case Layout::SubView:
    view.offset = 2 * (cols + 3) + 1;
    view.stride0 = cols + 3;
    view.stride1 = 1;
    break;
  case Layout::ColMajor:
    view.offset = 1;
    view.stride0 = 1;
    view.stride1 = rows + 2;
    break;
  case Layout::Strided:
    view.offset = 3;
    view.stride0 = 2 * cols + 1;
    view.stride1 = 2;
    break;
  }
  int64_t extent =
      view.offset + (rows - 1) * view.stride0 + (cols - 1) * view.stride1 + 5;
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  view.storage.resize(size_t(extent));
  for (float &value : view.storage)
    value = dist(rng);
  return view;
}

void sgemm(bool ta, bool tb, float alpha, float beta, View &a, View &b,
           View &c) {
  gaccrt_sgemm(ta, tb, alpha, beta, a.storage.data(), a.storage.data(),
               a.offset, a.size0, a.size1, a.stride0, a.stride1,
               b.storage.data(), b.storage.data(), b.offset, b.size0, b.size1,
               b.stride0, b.stride1, c.storage.data(), c.storage.data(),
               c.offset, c.size0, c.size1, c.stride0, c.stride1);
}

/// The expected C, computed in double by the definition, and the error
/// bound of each element: float rounding in a sum of k products is at most
/// k * 2^-24 times the sum of their magnitudes (the order of the sum is the
/// library's), plus 1e-5 relative.
std::vector<double> reference(bool ta, bool tb, float alpha, float beta,
                              View &a, View &b, View &c,
                              std::vector<double> &bound) {
  int64_t m = c.size0, n = c.size1, k = ta ? a.size0 : a.size1;
  std::vector<double> result(size_t(m * n));
  bound.assign(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t l = 0; l < k; ++l) {
        double product = double(ta ? a.at(l, i) : a.at(i, l)) *
                         double(tb ? b.at(j, l) : b.at(l, j));
        sum += product;
        magnitude += std::abs(product);
      }
      double value =
          alpha * sum + (beta == 0.0f ? 0.0 : beta * double(c.at(i, j)));
      result[size_t(i * n + j)] = value;
      bound[size_t(i * n + j)] =
          1e-5 * std::max(1.0, std::abs(value)) +
          double(k) * 0x1p-24 * std::abs(alpha) * magnitude;
    }
  return result;
}

struct Case {
  bool ta, tb;
  float beta;
  Layout layoutA, layoutB, layoutC;
};

std::string describe(const Case &test) {
  return std::string("transA=") + (test.ta ? "1" : "0") +
         " transB=" + (test.tb ? "1" : "0") +
         " beta=" + std::to_string(test.beta) + " A " +
         layoutName(test.layoutA) + " B " + layoutName(test.layoutB) + " C " +
         layoutName(test.layoutC);
}

void runCase(const Case &test, int64_t m, int64_t n, int64_t k,
             std::vector<float> *result = nullptr) {
  std::mt19937 rng(1234);
  View a = test.ta ? makeView(k, m, test.layoutA, rng)
                   : makeView(m, k, test.layoutA, rng);
  View b = test.tb ? makeView(n, k, test.layoutB, rng)
                   : makeView(k, n, test.layoutB, rng);
  View c = makeView(m, n, test.layoutC, rng);
  std::vector<float> storageBefore = c.storage;
  const float alpha = 0.75f;
  std::vector<double> bound;
  std::vector<double> expected =
      reference(test.ta, test.tb, alpha, test.beta, a, b, c, bound);
  sgemm(test.ta, test.tb, alpha, test.beta, a, b, c);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_NEAR(c.at(i, j), expected[size_t(i * n + j)],
                  bound[size_t(i * n + j)])
          << describe(test) << " at (" << i << ", " << j << ")";
  if (result) {
    result->clear();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        result->push_back(c.at(i, j));
  }
  // Nothing outside the view of C was written.
  std::vector<bool> inView(c.storage.size(), false);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      inView[size_t(c.offset + i * c.stride0 + j * c.stride1)] = true;
  for (size_t p = 0; p < c.storage.size(); ++p) {
    if (!inView[p]) {
      ASSERT_EQ(c.storage[p], storageBefore[p])
          << describe(test) << ": wrote outside C at " << p;
    }
  }
}

/// Whether oneDNN runs the GEMMs it is picked for: on a CPU with its brgemm
/// kernels (AVX-512). Unknown when oneDNN's ISA limit can take brgemm away
/// on an AVX-512 CPU.
std::optional<bool> onednnRuns() {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA"))
    return std::nullopt;
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
}

/// Whether gaccrt's AVX-512 kernels run the GEMMs they are picked for: on a
/// CPU with AVX-512F, on any number of GEMM threads.
bool avx512Runs() { return __builtin_cpu_supports("avx512f"); }

/// Sets the GEMM thread count for a scope (OpenBLAS's, process-wide).
class GemmThreads {
public:
  explicit GemmThreads(int32_t threads)
      : initial(gaccrt_internal_gemm_threads()) {
    gaccrt_internal_set_gemm_threads(threads);
  }
  ~GemmThreads() { gaccrt_internal_set_gemm_threads(initial); }
  /// Whether OpenBLAS took the count.
  bool took(int32_t threads) const {
    return gaccrt_internal_gemm_threads() == threads;
  }

private:
  int32_t initial;
};

/// The GEMM libraries this gaccrt has, in the order "auto" times them:
/// "onednn" when built with it and libdnnl.so.2 loads, "openblas",
/// "avx512" on a CPU with AVX-512F, and "onednn-sgemm" with oneDNN. Each
/// test that uses it restores the default choice.
std::vector<std::string> libraries() {
  std::vector<std::string> names;
  std::string initial = gaccrt_gemm_library();
  for (const char *name : {"onednn", "openblas", "avx512", "onednn-sgemm"})
    if (gaccrt_set_gemm_library(name) == 0)
      names.push_back(name);
  EXPECT_EQ(gaccrt_set_gemm_library(initial.c_str()), 0);
  return names;
}

void runLayoutMatrix(int64_t m, int64_t n, int64_t k) {
  const Layout layouts[] = {Layout::Contiguous, Layout::SubView,
                            Layout::ColMajor, Layout::Strided};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.0f, 1.0f, 0.5f})
        for (Layout layoutA : layouts)
          for (Layout layoutB : layouts)
            for (Layout layoutC : layouts)
              runCase({ta, tb, beta, layoutA, layoutB, layoutC}, m, n, k);
}

TEST(Sgemm, AllTransposesBetasAndLayoutsMatchNaiveLoop) {
  std::string initial = gaccrt_gemm_library();
  for (const std::string &library : libraries()) {
    SCOPED_TRACE(library);
    ASSERT_EQ(gaccrt_set_gemm_library(library.c_str()), 0);
    // Small: OpenBLAS either way. n >= 64: where oneDNN is preferred.
    runLayoutMatrix(5, 3, 7);
    runLayoutMatrix(9, 70, 13);
    // The AVX-512 kernels' edges: two column blocks (64 + a masked 36),
    // 13 rows in even tiles (4, 4, 5), the transposed route for op(B)
    // = B^T with op(A) = A and A^T, and two passes over an inner size above
    // 512.
    runLayoutMatrix(13, 100, 37);
    runLayoutMatrix(7, 20, 530);
    // More rows of C than the inner size: tiles along the rows of C, in
    // 7 even bands of 5 and 6 rows.
    runLayoutMatrix(40, 100, 9);
    // op(B) = B^T with more than 64 rows of C: B packed transposed in
    // panels of 64 columns, a masked one here, with an inner size that
    // ends inside a block of 16.
    runLayoutMatrix(70, 20, 130);
    // Few rows of C and rows of B 4 KiB or more apart: B's panels packed
    // all the same (17 of them, the last 6 columns wide).
    runLayoutMatrix(5, 1030, 70);
  }
  gaccrt_set_gemm_library(initial.c_str());
}

TEST(Sgemm, LibraryChoice) {
  std::string initial = gaccrt_gemm_library();
  EXPECT_EQ(gaccrt_set_gemm_library("mkl"), -1);
  EXPECT_EQ(gaccrt_set_gemm_library(nullptr), -1);
  EXPECT_EQ(std::string(gaccrt_gemm_library()), initial);
  ASSERT_EQ(gaccrt_set_gemm_library("openblas"), 0);
  EXPECT_STREQ(gaccrt_gemm_library(), "openblas");
  Case plain{false,
             false,
             0.0f,
             Layout::Contiguous,
             Layout::Contiguous,
             Layout::Contiguous};
  Case transposedA{true,
                   false,
                   1.0f,
                   Layout::Contiguous,
                   Layout::Contiguous,
                   Layout::Contiguous};
  runCase(plain, 16, 96, 32);
  EXPECT_STREQ(gaccrt_internal_last_gemm_library(), "openblas");
  if (gaccrt_set_gemm_library("onednn") == 0) {
    EXPECT_STREQ(gaccrt_gemm_library(), "onednn");
    // On one GEMM thread (lit runs this with OPENBLAS_NUM_THREADS=1), the
    // shape rule: the forward / backward-data shape goes to oneDNN where it
    // has its brgemm kernels (AVX-512); the weight-gradient shape (op(A) =
    // A^T) with a small inner size and a narrow C stay with OpenBLAS. On
    // several threads every GEMM goes to oneDNN, its matmul where it has
    // the kernels (or its sgemm, for a shape timed on both).
    bool rule = gaccrt_internal_gemm_threads() == 1;
    // Where oneDNN is preferred, the library the last GEMM must have used.
    auto expectPreferredRan = [&] {
      std::string ran = gaccrt_internal_last_gemm_library();
      if (!rule && ran == "onednn-sgemm")
        return;
      if (std::optional<bool> runs = onednnRuns()) {
        EXPECT_EQ(ran, *runs ? "onednn" : "openblas");
      }
    };
    auto expectRuleOpenblas = [&] {
      if (rule)
        EXPECT_STREQ(gaccrt_internal_last_gemm_library(), "openblas");
      else
        expectPreferredRan();
    };
    runCase(plain, 16, 96, 32);
    expectPreferredRan();
    runCase(transposedA, 16, 96, 32);
    expectRuleOpenblas();
    // ... unless the inner size (the micro-batch) is at least 512.
    runCase(transposedA, 16, 96, 512);
    expectPreferredRan();
    runCase(plain, 16, 10, 32);
    expectRuleOpenblas();
  }
  // The AVX-512 kernels: every GEMM where they can run.
  EXPECT_EQ(gaccrt_set_gemm_library("avx512") == 0,
            __builtin_cpu_supports("avx512f") != 0);
  if (std::string(gaccrt_gemm_library()) == "avx512") {
    for (const Case &test : {plain, transposedA}) {
      runCase(test, 16, 10, 32);
      EXPECT_STREQ(gaccrt_internal_last_gemm_library(),
                   avx512Runs() ? "avx512" : "openblas");
    }
  }
  gaccrt_set_gemm_library(initial.c_str());
}

/// The calls after which a timed shape has its library: 2 warm-up and 4
/// timed calls on each of at most 4 libraries.
constexpr int kTuningCalls = 24;

/// Whether library `name` on `threads` GEMM threads times each GEMM shape
/// in its first calls ("auto" on one thread, "onednn" on several), which
/// then cycle through libraries that round differently.
bool timesShapes(const std::string &name, int threads) {
  return (name == "auto" && threads == 1) || (name == "onednn" && threads > 1);
}

/// The libraries "auto" times with one GEMM thread, as letters (o: oneDNN's
/// matmul, b: OpenBLAS, a: the AVX-512 kernels, s: oneDNN's sgemm) in its
/// order, or nothing when unknown (oneDNN's ISA limit).
std::optional<std::string> autoLibraries() {
  std::string letters;
  for (const std::string &library : libraries()) {
    if (library == "onednn") {
      std::optional<bool> runs = onednnRuns();
      if (!runs)
        return std::nullopt;
      if (*runs)
        letters += 'o';
    } else {
      letters += library == "openblas" ? 'b' : library == "avx512" ? 'a' : 's';
    }
  }
  return letters;
}

// "auto"'s decision from the fastest timed call of each library (indices
// 0 oneDNN, 1 OpenBLAS, 2 the kernels; `timed` has a bit per library).
TEST(Sgemm, AutoKeepsTheFastestLibraryUnlessTheIncumbentIsNear) {
  enum { onednn, openblas, avx512 };
  auto choose = [](std::array<double, 3> us, int32_t timed, int32_t incumbent) {
    return gaccrt_internal_choose_gemm_library(us.data(), timed, incumbent);
  };
  // A library timed before the incumbent takes over when at least 10 %
  // faster, whichever position the incumbent has.
  EXPECT_EQ(choose({80, 120, 100}, 7, avx512), onednn);
  EXPECT_EQ(choose({50, 100, 0}, 3, openblas), onednn);
  EXPECT_EQ(choose({100, 120, 85}, 7, onednn), avx512);
  // The fastest of several that are faster.
  EXPECT_EQ(choose({70, 60, 100}, 7, avx512), openblas);
  EXPECT_EQ(choose({60, 70, 100}, 7, avx512), onednn);
  // Near-ties keep the incumbent.
  EXPECT_EQ(choose({95, 120, 100}, 7, avx512), avx512);
  EXPECT_EQ(choose({100, 91, 110}, 7, onednn), onednn);
  // Libraries that were not timed take no part.
  EXPECT_EQ(choose({10, 120, 100}, 6, avx512), avx512);
  EXPECT_EQ(choose({10, 60, 100}, 6, avx512), openblas);
}

TEST(Sgemm, AutoTimesEachShapeThenKeepsOneLibrary) {
  std::string initial = gaccrt_gemm_library();
  ASSERT_EQ(gaccrt_set_gemm_library("auto"), 0);
  bool isAuto = std::string(gaccrt_gemm_library()) == "auto";
  // Shapes of at least 2^16 multiply-adds are tuned; each key here is used
  // by this test only (the tuning state is per thread and per process).
  Case forward{false,
               false,
               0.0f,
               Layout::Contiguous,
               Layout::Contiguous,
               Layout::Contiguous};
  Case weightGradient{true,
                      false,
                      1.0f,
                      Layout::Contiguous,
                      Layout::Contiguous,
                      Layout::Contiguous};
  {
    GemmThreads scope(1);
    ASSERT_TRUE(scope.took(1));
    std::optional<std::string> timed = isAuto ? autoLibraries() : "b";
    // 2 untimed warm-up calls each, cycling, then 4 timed calls each in
    // rounds, round t starting at library t mod n. Without brgemm oneDNN's
    // matmul declines the first call (OpenBLAS runs it) and the tuning
    // starts again without it.
    std::string order;
    if (timed == "obas")
      order = "obasobas"
              "obasbasoasobsoba";
    else if (timed == "bas")
      order = "b"
              "basbas"
              "basasbsbabas";
    else if (timed == "bs")
      order = "b"
              "bsbs"
              "bssbbssb";
    else if (timed != "b")
      timed = std::nullopt; // a combination this test does not spell out
    for (auto [test, m, n, k] : {std::tuple(forward, 128, 128, 64),
                                 std::tuple(weightGradient, 128, 96, 96)}) {
      SCOPED_TRACE(describe(test));
      std::vector<std::string> ran;
      for (int call = 0; call < 28; ++call) {
        runCase(test, m, n, k); // every call's result is checked
        ran.push_back(gaccrt_internal_last_gemm_library());
      }
      if (!timed)
        continue; // every call's result was checked; the order is unknown
      if (*timed == "b") {
        // OpenBLAS alone ("auto" without oneDNN or the kernels).
        for (const std::string &library : ran)
          EXPECT_EQ(library, "openblas");
        continue;
      }
      // The warm-up and timed calls, then the chosen library for good.
      size_t decided = order.size();
      for (size_t call = 0; call < decided; ++call)
        EXPECT_EQ(ran[call], order[call] == 'o'   ? "onednn"
                             : order[call] == 'b' ? "openblas"
                             : order[call] == 'a' ? "avx512"
                                                  : "onednn-sgemm")
            << "call " << call;
      for (size_t call = decided + 1; call < ran.size(); ++call)
        EXPECT_EQ(ran[call], ran[decided]) << "call " << call;
    }
    // Smaller shapes follow the fixed rule without timing (oneDNN for this
    // one where it runs).
    runCase(forward, 16, 96, 32);
    if (timed) {
      EXPECT_STREQ(gaccrt_internal_last_gemm_library(),
                   timed->find('o') != std::string::npos ? "onednn"
                                                         : "openblas");
    }
  }
  // With several GEMM threads: the kernels for every GEMM, untimed, where
  // they run; else OpenBLAS.
  {
    GemmThreads scope(2);
    ASSERT_TRUE(scope.took(2));
    const char *expected = isAuto && avx512Runs() ? "avx512" : "openblas";
    for (auto [test, m, n, k] : {std::tuple(forward, 128, 128, 64),
                                 std::tuple(weightGradient, 128, 96, 96),
                                 std::tuple(forward, 16, 96, 32)})
      for (int call = 0; call < 3; ++call) {
        runCase(test, m, n, k);
        EXPECT_STREQ(gaccrt_internal_last_gemm_library(), expected)
            << describe(test) << " " << m << "x" << n << "x" << k;
      }
  }
  gaccrt_set_gemm_library(initial.c_str());
}

// "onednn" on several GEMM threads: every GEMM on oneDNN, each shape of at
// least 2^16 multiply-adds timed on oneDNN's matmul and its sgemm in its
// first calls (2 warm-up and 4 timed calls each, as "auto" times the
// libraries on one thread) and then kept on one of them; while it is timed
// gaccrt_gemm_shapes_being_timed counts it and gaccrt_gemm_timing_us grows
// by its calls' time.
TEST(Sgemm, OnednnOnSeveralThreadsTimesItsTwoGemmsPerShape) {
  std::string initial = gaccrt_gemm_library();
  if (gaccrt_set_gemm_library("onednn") != 0)
    GTEST_SKIP() << "no oneDNN";
  std::optional<bool> brgemm = onednnRuns();
  if (!brgemm) {
    gaccrt_set_gemm_library(initial.c_str());
    GTEST_SKIP() << "oneDNN's ISA is limited";
  }
  {
    GemmThreads scope(2);
    ASSERT_TRUE(scope.took(2));
    // Sizes no other test uses: the tuning state is per thread and process.
    Case forward{false,
                 false,
                 0.0f,
                 Layout::Contiguous,
                 Layout::Contiguous,
                 Layout::Contiguous};
    int32_t before = gaccrt_gemm_shapes_being_timed();
    std::vector<std::string> ran;
    std::vector<int32_t> timing;
    std::vector<double> timingUs;
    for (int call = 0; call < 16; ++call) {
      double timingBefore = gaccrt_gemm_timing_us();
      runCase(forward, 96, 136, 72); // every call's result is checked
      ran.push_back(gaccrt_internal_last_gemm_library());
      timing.push_back(gaccrt_gemm_shapes_being_timed() - before);
      timingUs.push_back(gaccrt_gemm_timing_us() - timingBefore);
    }
    // o: the matmul, s: the sgemm. Without brgemm the matmul declines its
    // first call (OpenBLAS runs it) and the sgemm is left, decided at once.
    std::string order = *brgemm ? "osos"
                                  "ossoosso"
                                : "b";
    for (size_t call = 0; call < order.size(); ++call) {
      EXPECT_EQ(ran[call], order[call] == 'o'   ? "onednn"
                           : order[call] == 's' ? "onednn-sgemm"
                                                : "openblas")
          << "call " << call;
      EXPECT_EQ(timing[call], call + 1 < order.size() ? 1 : 0)
          << "call " << call;
      EXPECT_GT(timingUs[call], 0.0) << "call " << call;
    }
    for (size_t call = order.size(); call < ran.size(); ++call) {
      EXPECT_EQ(ran[call], ran[order.size()]) << "call " << call;
      EXPECT_EQ(timing[call], 0) << "call " << call;
      EXPECT_EQ(timingUs[call], 0.0) << "call " << call;
    }
    EXPECT_TRUE(ran.back() == "onednn" || ran.back() == "onednn-sgemm")
        << ran.back();
  }
  gaccrt_set_gemm_library(initial.c_str());
}

// A whole step timed on each library (--tune-gemm) on several threads:
// the "onednn" candidate times its two GEMMs per shape, and its warm-up
// steps end once the shapes still being timed take a negligible part of a
// step, not when every shape is decided. Here a step is 24 calls of a large
// shape (decided in the first step) and one call of a small one (decided
// after 12 calls, i.e. steps): the candidate runs one step to warm up, one
// more while the small shape is being timed, and its timed steps (one when
// it falls behind the best so far, two where a step takes 25 ms or more,
// 45-60 ms on a Zen 5 core pair), twice at most: fewer than 12 steps, so
// the small shape is still being timed when the tuning ends (waiting for it
// took 13 steps or more).
TEST(StepTuning, OnednnWarmUpEndsWhenOnlyNegligibleShapesAreTimed) {
  std::string initial = gaccrt_gemm_library();
  if (gaccrt_set_gemm_library("onednn") != 0)
    GTEST_SKIP() << "no oneDNN";
  std::optional<bool> brgemm = onednnRuns();
  if (!brgemm || !*brgemm) {
    gaccrt_set_gemm_library(initial.c_str());
    GTEST_SKIP() << "no brgemm: oneDNN's matmul declines, nothing is timed";
  }
  ASSERT_EQ(gaccrt_set_gemm_library("auto"), 0);
  {
    GemmThreads scope(2);
    ASSERT_TRUE(scope.took(2));
    // Sizes no other test uses: the tuning state is per thread and process.
    constexpr int kLarge = 520, kSmall = 40;
    std::vector<float> a(kLarge * kLarge, 0.5f), b(kLarge * kLarge, 0.25f),
        c(kLarge * kLarge);
    int onednnSteps = 0;
    double slowestMs = 0;
    mlir::gacc::StepGemmSetup setup;
    setup.tool = "BlasTest";
    setup.key = "step-blastest";
    setup.tune = true;
    setup.print = false;
    setup.runStep = [&](double &ms, std::string &) {
      double start = gaccrt_now_us();
      for (int call = 0; call < 64; ++call)
        gaccrt_sgemm(0, 0, 1.0f, 0.0f, a.data(), a.data(), 0, kLarge, kLarge,
                     kLarge, 1, b.data(), b.data(), 0, kLarge, kLarge, kLarge,
                     1, c.data(), c.data(), 0, kLarge, kLarge, kLarge, 1);
      std::string library = gaccrt_internal_last_gemm_library();
      bool onednn = library == "onednn" || library == "onednn-sgemm";
      onednnSteps += onednn;
      // 40 x 41 x 40: 65600 multiply-adds, just enough to be timed.
      gaccrt_sgemm(0, 0, 1.0f, 0.0f, a.data(), a.data(), 0, kSmall, kSmall,
                   kSmall, 1, b.data(), b.data(), 0, kSmall, kSmall + 1,
                   kSmall + 1, 1, c.data(), c.data(), 0, kSmall, kSmall + 1,
                   kSmall + 1, 1);
      ms = (gaccrt_now_us() - start) / 1e3;
      if (onednn)
        slowestMs = std::max(slowestMs, ms);
      return true;
    };
    int32_t timedBefore = gaccrt_gemm_shapes_being_timed();
    bool ranSteps = false;
    std::string note, error;
    ASSERT_TRUE(mlir::gacc::setUpStepGemms(setup, ranSteps, note, error))
        << error;
    EXPECT_TRUE(ranSteps);
    EXPECT_NE(note.find("onednn "), std::string::npos) << note;
    EXPECT_EQ(c[0], 0.5f * 0.25f * kSmall);
    EXPECT_GE(onednnSteps, 3) << note;
    EXPECT_LE(onednnSteps, 10)
        << note << " (slowest oneDNN step " << slowestMs << " ms)";
    EXPECT_EQ(gaccrt_gemm_shapes_being_timed(), timedBefore + 1) << note;
  }
  gaccrt_set_gemm_library(initial.c_str());
}

TEST(Sgemm, Avx512KernelsSplitAcrossThreads) {
  std::string initial = gaccrt_gemm_library();
  if (gaccrt_set_gemm_library("avx512") != 0)
    GTEST_SKIP() << "the CPU has no AVX-512F";
  const Layout layouts[] = {Layout::Contiguous, Layout::ColMajor,
                            Layout::SubView};
  for (int32_t threads : {2, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    GemmThreads scope(threads);
    ASSERT_TRUE(scope.took(threads));
    // At least 2^20 multiply-adds: 64-column panels of C (4, the last
    // masked), bands of 6 rows (C with more rows than the inner size), and
    // two inner blocks; op(B) = B^T packed.
    for (auto [m, n, k] : {std::tuple(70, 200, 100), std::tuple(300, 70, 100),
                           std::tuple(20, 300, 600)})
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          for (float beta : {0.0f, 1.0f, 0.5f})
            for (Layout layoutA : layouts)
              for (Layout layoutC : {Layout::Contiguous, Layout::SubView}) {
                Case test{ta, tb, beta, layoutA, Layout::Contiguous, layoutC};
                std::vector<float> split, alone;
                runCase(test, m, n, k, &split);
                ASSERT_STREQ(gaccrt_internal_last_gemm_library(), "avx512")
                    << describe(test);
                int32_t parts = gaccrt_internal_last_gemm_threads();
                {
                  // Each element of C is summed in the same order on any
                  // number of threads: the results are the same bits.
                  GemmThreads one(1);
                  runCase(test, m, n, k, &alone);
                }
                EXPECT_EQ(split, alone)
                    << describe(test) << " " << m << "x" << n << "x" << k;
                // One part per band of 6 rows of C when its tiles go along
                // its rows, else per 64-column panel (always for B^T), and
                // at most one per 2^19 multiply-adds.
                int64_t units =
                    !tb && m > std::min(k, 512) ? (m + 5) / 6 : (n + 63) / 64;
                int64_t macs = int64_t(m) * n * k;
                EXPECT_EQ(parts,
                          std::min<int64_t>({threads, units, macs >> 19}))
                    << describe(test) << " " << m << "x" << n << "x" << k;
              }
    // Below 2^20 multiply-adds: the calling thread alone.
    runCase({false, false, 0.0f, Layout::Contiguous, Layout::Contiguous,
             Layout::Contiguous},
            16, 64, 64);
    EXPECT_EQ(gaccrt_internal_last_gemm_threads(), 1);
  }
  // Two GEMMs at once: one gets the workers, the other runs on its own
  // thread; both results are checked.
  GemmThreads scope(2);
  std::vector<std::thread> callers;
  for (int caller = 0; caller < 2; ++caller)
    callers.emplace_back([] {
      for (int call = 0; call < 20; ++call)
        runCase({false, true, 1.0f, Layout::Contiguous, Layout::Contiguous,
                 Layout::Contiguous},
                70, 200, 100);
    });
  for (std::thread &caller : callers)
    caller.join();
  // A forked child, which has none of the workers above, starts its own
  // (rather than wait for its parent's forever). Not a death test: those
  // run in a fresh process here (TestMain.cpp).
  pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    std::vector<float> a(70 * 100, 1.0f), b(100 * 200, 0.5f), c(70 * 200);
    gaccrt_sgemm(0, 0, 1.0f, 0.0f, a.data(), a.data(), 0, 70, 100, 100, 1,
                 b.data(), b.data(), 0, 100, 200, 200, 1, c.data(), c.data(), 0,
                 70, 200, 200, 1);
    bool right = std::all_of(c.begin(), c.end(),
                             [](float value) { return value == 50.0f; });
    _exit(right && gaccrt_internal_last_gemm_threads() == 2 ? 0 : 1);
  }
  int status = 0;
  for (int waited = 0; waitpid(child, &status, WNOHANG) == 0; ++waited) {
    if (waited == 600) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      FAIL() << "the forked child's GEMM did not finish in 60 s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  gaccrt_set_gemm_library(initial.c_str());
}

void sgemmPair(bool ta, bool tb, float alpha, float beta, View &a1, View &b1,
               View &a2, View &b2, View &c) {
  gaccrt_sgemm_pair(
      ta, tb, alpha, beta, a1.storage.data(), a1.storage.data(), a1.offset,
      a1.size0, a1.size1, a1.stride0, a1.stride1, b1.storage.data(),
      b1.storage.data(), b1.offset, b1.size0, b1.size1, b1.stride0, b1.stride1,
      a2.storage.data(), a2.storage.data(), a2.offset, a2.size0, a2.size1,
      a2.stride0, a2.stride1, b2.storage.data(), b2.storage.data(), b2.offset,
      b2.size0, b2.size1, b2.stride0, b2.stride1, c.storage.data(),
      c.storage.data(), c.offset, c.size0, c.size1, c.stride0, c.stride1);
}

/// The rows x cols matrix `top` stacked over `bottom` (same columns),
/// contiguous.
View stack(View &top, View &bottom) {
  View both;
  both.size0 = top.size0 + bottom.size0;
  both.size1 = top.size1;
  both.stride0 = both.size1;
  both.stride1 = 1;
  both.storage.resize(size_t(both.size0 * both.size1));
  for (int64_t i = 0; i < both.size0; ++i)
    for (int64_t j = 0; j < both.size1; ++j)
      both.at(i, j) =
          i < top.size0 ? top.at(i, j) : bottom.at(i - top.size0, j);
  return both;
}

// gaccrt_sgemm_pair on a weight gradient's layout on the kernels is one
// GEMM over the two inner ranges (the bits of gaccrt_sgemm on the stacked
// operands, on any thread count); elsewhere it is its two gaccrt_sgemm
// calls, bit for bit.
TEST(Sgemm, PairIsOneGemmOverBothInnerRangesOrTwoCalls) {
  std::string initial = gaccrt_gemm_library();
  std::vector<std::string> names = libraries();
  bool kernels = std::find(names.begin(), names.end(), "avx512") != names.end();
  names.push_back("auto");
  for (const std::string &name : names)
    for (int32_t threads : {1, 2, 3}) {
      ASSERT_EQ(gaccrt_set_gemm_library(name.c_str()), 0);
      GemmThreads scope(threads);
      // (m, n, k1, k2): weight gradients (C with more rows than the inner
      // size; op(A) = A^T), one with unequal inner sizes (a tail
      // micro-batch); one whose inner sizes together exceed one inner
      // block (n = 700: 187 rows of B) and one with fewer rows of C than
      // the inner size: the last two run as two calls.
      for (auto [m, n, k1, k2] :
           {std::tuple(300, 200, 32, 32), std::tuple(130, 70, 24, 9),
            std::tuple(300, 700, 100, 100), std::tuple(40, 200, 30, 30)})
        for (float beta : {0.0f, 1.0f, 0.5f})
          for (Layout layoutB : {Layout::Contiguous, Layout::SubView})
            for (Layout layoutC : {Layout::Contiguous, Layout::SubView}) {
              std::string what = name + " threads=" + std::to_string(threads) +
                                 " " + std::to_string(m) + "x" +
                                 std::to_string(n) + "x" + std::to_string(k1) +
                                 "+" + std::to_string(k2) +
                                 " beta=" + std::to_string(beta);
              std::mt19937 rng(unsigned(m + n + k1));
              View a1 = makeView(k1, m, Layout::Contiguous, rng);
              View a2 = makeView(k2, m, Layout::SubView, rng);
              View b1 = makeView(k1, n, layoutB, rng);
              View b2 = makeView(k2, n, layoutB, rng);
              View c = makeView(m, n, layoutC, rng);
              bool pairLayout =
                  m > k1 + k2 && k1 + k2 <= std::clamp(128 * 1024 / n, 16, 512);
              bool onKernels =
                  name == "avx512" || (name == "auto" && threads > 1);
              // "auto" on one thread times each shape in its first calls
              // and pairs only once both chose the kernels ("onednn" on
              // several threads times its two GEMMs).
              bool tuned = timesShapes(name, threads);
              for (int round = 0; round < (tuned ? kTuningCalls + 1 : 1);
                   ++round) {
                View paired = c;
                sgemmPair(true, false, 0.75f, beta, a1, b1, a2, b2, paired);
                bool pairedPass = gaccrt_internal_last_gemm_paired() != 0;
                if (!tuned) {
                  EXPECT_EQ(pairedPass, kernels && pairLayout && onKernels)
                      << what;
                } else if (!pairLayout) {
                  EXPECT_FALSE(pairedPass) << what;
                }
                // (While "auto" times a shape, its calls cycle through the
                // libraries, which round differently.)
                if (tuned && round != kTuningCalls)
                  continue;
                View expected = c;
                if (pairedPass) {
                  View a = stack(a1, a2), b = stack(b1, b2);
                  ASSERT_EQ(gaccrt_set_gemm_library("avx512"), 0);
                  sgemm(true, false, 0.75f, beta, a, b, expected);
                  ASSERT_EQ(gaccrt_set_gemm_library(name.c_str()), 0);
                } else {
                  sgemm(true, false, 0.75f, beta, a1, b1, expected);
                  sgemm(true, false, 0.75f, 1.0f, a2, b2, expected);
                }
                ASSERT_EQ(paired.storage, expected.storage) << what;
              }
            }
    }
  gaccrt_set_gemm_library(initial.c_str());
}

void sgemmQuad(float alpha, float beta, View (&a)[4], View (&b)[4], View &c) {
  gaccrt_sgemm_quad(
      1, 0, alpha, beta, a[0].storage.data(), a[0].storage.data(), a[0].offset,
      a[0].size0, a[0].size1, a[0].stride0, a[0].stride1, b[0].storage.data(),
      b[0].storage.data(), b[0].offset, b[0].size0, b[0].size1, b[0].stride0,
      b[0].stride1, a[1].storage.data(), a[1].storage.data(), a[1].offset,
      a[1].size0, a[1].size1, a[1].stride0, a[1].stride1, b[1].storage.data(),
      b[1].storage.data(), b[1].offset, b[1].size0, b[1].size1, b[1].stride0,
      b[1].stride1, a[2].storage.data(), a[2].storage.data(), a[2].offset,
      a[2].size0, a[2].size1, a[2].stride0, a[2].stride1, b[2].storage.data(),
      b[2].storage.data(), b[2].offset, b[2].size0, b[2].size1, b[2].stride0,
      b[2].stride1, a[3].storage.data(), a[3].storage.data(), a[3].offset,
      a[3].size0, a[3].size1, a[3].stride0, a[3].stride1, b[3].storage.data(),
      b[3].storage.data(), b[3].offset, b[3].size0, b[3].size1, b[3].stride0,
      b[3].stride1, c.storage.data(), c.storage.data(), c.offset, c.size0,
      c.size1, c.stride0, c.stride1);
}

// gaccrt_sgemm_quad on a weight gradient's layout on the kernels, the four
// inner sizes within one inner block, is one GEMM over the four inner
// ranges (the bits of gaccrt_sgemm on the stacked operands, on any thread
// count); elsewhere it is its two gaccrt_sgemm_pair calls, bit for bit.
TEST(Sgemm, QuadIsOneGemmOverFourInnerRangesOrTwoPairs) {
  std::string initial = gaccrt_gemm_library();
  std::vector<std::string> names = libraries();
  bool kernels = std::find(names.begin(), names.end(), "avx512") != names.end();
  names.push_back("auto");
  for (const std::string &name : names)
    for (int32_t threads : {1, 2, 3}) {
      ASSERT_EQ(gaccrt_set_gemm_library(name.c_str()), 0);
      GemmThreads scope(threads);
      // (m, n, k): four inner sizes k, k + 1, k, k - 1 (one a tail); the
      // second's four exceed one inner block (n = 700: 187 rows of B), its
      // pairs do not; the third has fewer rows of C than the inner size.
      for (auto [m, n, k] : {std::tuple(300, 200, 32), std::tuple(300, 700, 50),
                             std::tuple(40, 200, 30)})
        for (float beta : {0.0f, 1.0f, 0.5f}) {
          std::string what = name + " threads=" + std::to_string(threads) +
                             " " + std::to_string(m) + "x" + std::to_string(n) +
                             "x4*" + std::to_string(k) +
                             " beta=" + std::to_string(beta);
          std::mt19937 rng(unsigned(m + n + k));
          int ks[4] = {k, k + 1, k, k - 1};
          View a[4], b[4];
          for (int i = 0; i < 4; ++i) {
            a[i] = makeView(ks[i], m,
                            i % 2 ? Layout::SubView : Layout::Contiguous, rng);
            b[i] = makeView(ks[i], n, Layout::SubView, rng);
          }
          View c = makeView(m, n, Layout::SubView, rng);
          int inner = ks[0] + ks[1] + ks[2] + ks[3];
          bool quadLayout =
              m > inner && inner <= std::clamp(128 * 1024 / n, 16, 512);
          bool onKernels = name == "avx512" || (name == "auto" && threads > 1);
          bool tuned = timesShapes(name, threads);
          for (int round = 0; round < (tuned ? kTuningCalls + 1 : 1); ++round) {
            View out = c;
            sgemmQuad(0.75f, beta, a, b, out);
            bool onePass = gaccrt_internal_last_gemm_paired() != 0;
            if (!tuned) {
              EXPECT_EQ(onePass, kernels && quadLayout && onKernels) << what;
            } else if (!quadLayout) {
              EXPECT_FALSE(onePass) << what;
            }
            if (tuned && round != kTuningCalls)
              continue;
            View expected = c;
            if (onePass) {
              View top = stack(a[0], a[1]), bottom = stack(a[2], a[3]);
              View left = stack(b[0], b[1]), right = stack(b[2], b[3]);
              View all = stack(top, bottom), allB = stack(left, right);
              ASSERT_EQ(gaccrt_set_gemm_library("avx512"), 0);
              sgemm(true, false, 0.75f, beta, all, allB, expected);
              ASSERT_EQ(gaccrt_set_gemm_library(name.c_str()), 0);
            } else {
              sgemmPair(true, false, 0.75f, beta, a[0], b[0], a[1], b[1],
                        expected);
              sgemmPair(true, false, 0.75f, 1.0f, a[2], b[2], a[3], b[3],
                        expected);
            }
            ASSERT_EQ(out.storage, expected.storage) << what;
          }
        }
    }
  gaccrt_set_gemm_library(initial.c_str());
}

void sgemmRowsPair(bool ta, bool tb, float alpha, float beta, View &a1, View &b,
                   View &c1, View &a2, View &c2) {
  gaccrt_sgemm_rows_pair(
      ta, tb, alpha, beta, a1.storage.data(), a1.storage.data(), a1.offset,
      a1.size0, a1.size1, a1.stride0, a1.stride1, b.storage.data(),
      b.storage.data(), b.offset, b.size0, b.size1, b.stride0, b.stride1,
      c1.storage.data(), c1.storage.data(), c1.offset, c1.size0, c1.size1,
      c1.stride0, c1.stride1, a2.storage.data(), a2.storage.data(), a2.offset,
      a2.size0, a2.size1, a2.stride0, a2.stride1, c2.storage.data(),
      c2.storage.data(), c2.offset, c2.size0, c2.size1, c2.stride0, c2.stride1);
}

// gaccrt_sgemm_rows_pair (two micro-batches' GEMMs of one weight) has the
// bits of its two gaccrt_sgemm calls, whether the kernels run it as one
// pass over op(B) (the panels route of x W, the transposed route of x W^T)
// or it is those two calls (other routes, other libraries).
TEST(Sgemm, RowsPairHasTheBitsOfTwoCalls) {
  std::string initial = gaccrt_gemm_library();
  std::vector<std::string> names = libraries();
  bool kernels = std::find(names.begin(), names.end(), "avx512") != names.end();
  names.push_back("auto");
  for (const std::string &name : names)
    for (int32_t threads : {1, 2, 3}) {
      ASSERT_EQ(gaccrt_set_gemm_library(name.c_str()), 0);
      GemmThreads scope(threads);
      // (m, n, k, transB, fusable): x W on the panels route, x W^T on the
      // transposed route, and two that run as two calls: more rows than
      // the inner size (tiles along the rows of C) and x W^T of more than
      // 64 rows (packed panels).
      for (auto [m, n, k, tb, fusable] :
           {std::tuple(32, 200, 300, false, true),
            std::tuple(20, 130, 600, true, true),
            std::tuple(100, 70, 50, false, false),
            std::tuple(80, 100, 300, true, false)})
        for (float beta : {0.0f, 1.0f, 0.5f}) {
          std::string what = name + " threads=" + std::to_string(threads) +
                             " " + std::to_string(m) + "x" + std::to_string(n) +
                             "x" + std::to_string(k) + (tb ? " B^T" : "") +
                             " beta=" + std::to_string(beta);
          std::mt19937 rng(unsigned(m + n + k));
          View a1 = makeView(m, k, Layout::Contiguous, rng);
          View a2 = makeView(m, k, Layout::Contiguous, rng);
          View b = tb ? makeView(n, k, Layout::SubView, rng)
                      : makeView(k, n, Layout::SubView, rng);
          View c1 = makeView(m, n, Layout::Contiguous, rng);
          View c2 = makeView(m, n, Layout::Contiguous, rng);
          bool onKernels = name == "avx512" || (name == "auto" && threads > 1);
          bool tuned = timesShapes(name, threads);
          for (int round = 0; round < (tuned ? kTuningCalls + 1 : 1); ++round) {
            View out1 = c1, out2 = c2;
            sgemmRowsPair(false, tb, 0.75f, beta, a1, b, out1, a2, out2);
            bool fused = gaccrt_internal_last_gemm_paired() != 0;
            if (!tuned) {
              EXPECT_EQ(fused, kernels && onKernels && fusable) << what;
            } else if (!fusable) {
              EXPECT_FALSE(fused) << what;
            }
            if (tuned && round != kTuningCalls)
              continue;
            View expected1 = c1, expected2 = c2;
            sgemm(false, tb, 0.75f, beta, a1, b, expected1);
            sgemm(false, tb, 0.75f, beta, a2, b, expected2);
            ASSERT_EQ(out1.storage, expected1.storage) << what;
            ASSERT_EQ(out2.storage, expected2.storage) << what;
          }
        }
    }
  gaccrt_set_gemm_library(initial.c_str());
}

/// Rows [first, first + rows) of `whole` (a copy of its storage, the same
/// offsets and strides: addresses are compared through the offsets).
View rowsOf(const View &whole, int64_t first, int64_t rows) {
  View part;
  part.storage = whole.storage;
  part.offset = whole.offset + first * whole.stride0;
  part.size0 = rows;
  part.size1 = whole.size1;
  part.stride0 = whole.stride0;
  part.stride1 = whole.stride1;
  return part;
}

// Operands of gaccrt_sgemm_pair, gaccrt_sgemm_quad and
// gaccrt_sgemm_rows_pair that lie one after the other in memory (as
// gacc-plan-arena places the buffers of GEMM pairs) are one GEMM over the
// stacked matrix on every library and thread count: the bits of
// gaccrt_sgemm on it. With a gap between them they are not.
TEST(Sgemm, StackedOperandsAreOneGemm) {
  std::string initial = gaccrt_gemm_library();
  for (const std::string &name : libraries())
    for (int32_t threads : {1, 2}) {
      ASSERT_EQ(gaccrt_set_gemm_library(name.c_str()), 0);
      GemmThreads scope(threads);
      for (int64_t gap : {0, 1})
        for (Layout layout : {Layout::Contiguous, Layout::SubView})
          for (float beta : {0.0f, 1.0f}) {
            std::string what = name + " threads=" + std::to_string(threads) +
                               " gap=" + std::to_string(gap) + " " +
                               layoutName(layout) +
                               " beta=" + std::to_string(beta);
            std::mt19937 rng(unsigned(threads + gap));
            const int64_t m = 96, n = 80, k = 24;
            // Weight gradients: op(A) = A^T of (4k + 3 gap) x m, B of
            // (4k + 3 gap) x n, four inner ranges of k rows each.
            View a = makeView(4 * k + 3 * gap, m, layout, rng);
            View b = makeView(4 * k + 3 * gap, n, layout, rng);
            View c = makeView(m, n, Layout::Contiguous, rng);
            View as[4], bs[4];
            for (int i = 0; i < 4; ++i) {
              as[i] = rowsOf(a, i * (k + gap), k);
              bs[i] = rowsOf(b, i * (k + gap), k);
            }
            auto call = [&](int count, View &out) {
              float *aData = a.storage.data(), *bData = b.storage.data();
              float *cData = out.storage.data();
              if (count == 2)
                gaccrt_sgemm_pair(
                    1, 0, 0.75f, beta, aData, aData, as[0].offset, k, m,
                    as[0].stride0, as[0].stride1, bData, bData, bs[0].offset, k,
                    n, bs[0].stride0, bs[0].stride1, aData, aData, as[1].offset,
                    k, m, as[1].stride0, as[1].stride1, bData, bData,
                    bs[1].offset, k, n, bs[1].stride0, bs[1].stride1, cData,
                    cData, out.offset, m, n, out.stride0, out.stride1);
              else
                gaccrt_sgemm_quad(
                    1, 0, 0.75f, beta, aData, aData, as[0].offset, k, m,
                    as[0].stride0, as[0].stride1, bData, bData, bs[0].offset, k,
                    n, bs[0].stride0, bs[0].stride1, aData, aData, as[1].offset,
                    k, m, as[1].stride0, as[1].stride1, bData, bData,
                    bs[1].offset, k, n, bs[1].stride0, bs[1].stride1, aData,
                    aData, as[2].offset, k, m, as[2].stride0, as[2].stride1,
                    bData, bData, bs[2].offset, k, n, bs[2].stride0,
                    bs[2].stride1, aData, aData, as[3].offset, k, m,
                    as[3].stride0, as[3].stride1, bData, bData, bs[3].offset, k,
                    n, bs[3].stride0, bs[3].stride1, cData, cData, out.offset,
                    m, n, out.stride0, out.stride1);
            };
            for (int count : {2, 4}) {
              // A timed shape's first calls cycle through libraries.
              for (int warm = 0;
                   timesShapes(name, threads) && warm < kTuningCalls; ++warm) {
                View scratch = c;
                call(count, scratch);
              }
              View out = c;
              call(count, out);
              bool onePass = gaccrt_internal_last_gemm_paired() != 0;
              if (gap) {
                // Not stacked: only the kernels' paired pass is one pass.
                if (name != "avx512") {
                  EXPECT_FALSE(onePass) << what << " count=" << count;
                }
                continue;
              }
              EXPECT_TRUE(onePass) << what << " count=" << count;
              View stackedA = rowsOf(a, 0, count * k);
              View stackedB = rowsOf(b, 0, count * k);
              View expected = c;
              sgemm(true, false, 0.75f, beta, stackedA, stackedB, expected);
              ASSERT_EQ(out.storage, expected.storage)
                  << what << " count=" << count;
            }

            // x W for two micro-batches: A of (2k + gap) x n rows, C of
            // (2k + gap) x m rows.
            View x = makeView(2 * k + gap, n, layout, rng);
            View w = makeView(n, m, Layout::SubView, rng);
            View y = makeView(2 * k + gap, m, layout, rng);
            View x1 = rowsOf(x, 0, k), x2 = rowsOf(x, k + gap, k);
            View y1 = rowsOf(y, 0, k), y2 = rowsOf(y, k + gap, k);
            View out = y;
            float *xData = x.storage.data();
            auto rowsPair = [&](View &into) {
              float *outData = into.storage.data();
              gaccrt_sgemm_rows_pair(
                  0, 0, 0.75f, beta, xData, xData, x1.offset, k, n, x1.stride0,
                  x1.stride1, w.storage.data(), w.storage.data(), w.offset,
                  w.size0, w.size1, w.stride0, w.stride1, outData, outData,
                  y1.offset, k, m, y1.stride0, y1.stride1, xData, xData,
                  x2.offset, k, n, x2.stride0, x2.stride1, outData, outData,
                  y2.offset, k, m, y2.stride0, y2.stride1);
            };
            // A timed shape's first calls cycle through libraries.
            for (int warm = 0;
                 timesShapes(name, threads) && warm < kTuningCalls; ++warm) {
              View scratch = y;
              rowsPair(scratch);
            }
            rowsPair(out);
            bool onePass = gaccrt_internal_last_gemm_paired() != 0;
            if (gap) {
              if (name != "avx512") {
                EXPECT_FALSE(onePass) << what << " rows";
              }
              continue;
            }
            EXPECT_TRUE(onePass) << what << " rows";
            // Without a gap the 2k rows are all of y.
            View stackedX = rowsOf(x, 0, 2 * k), expected = rowsOf(y, 0, 2 * k);
            sgemm(false, false, 0.75f, beta, stackedX, w, expected);
            ASSERT_EQ(out.storage, expected.storage) << what << " rows";
          }
    }
  gaccrt_set_gemm_library(initial.c_str());
}

/// What gaccrt_parallel_for ran: the calls of the body per iteration and
/// the slices, with the thread of each.
struct ParallelForRecord {
  std::mutex mutex;
  std::vector<int> hits;
  std::vector<std::tuple<int64_t, int64_t, std::thread::id>> slices;
};

void recordSlice(void *context, int64_t lo, int64_t hi) {
  auto &record = *static_cast<ParallelForRecord *>(context);
  std::lock_guard<std::mutex> lock(record.mutex);
  for (int64_t i = lo; i < hi; ++i)
    ++record.hits[i];
  record.slices.emplace_back(lo, hi, std::this_thread::get_id());
}

// gaccrt_parallel_for (the outermost parallel loops of a compiled step)
// runs every iteration once, in contiguous slices on distinct threads, the
// first on the caller, one slice per GEMM thread when the work is large,
// and the whole loop on the caller when it is small: on gaccrt's workers,
// and on oneDNN's OpenMP threads when oneDNN runs the GEMMs on several.
TEST(ParallelFor, SlicesCoverEveryIterationOnce) {
  std::string initial = gaccrt_gemm_library();
  for (const char *library : {"", "onednn"})
    for (int32_t threads : {1, 2, 3}) {
      if (*library && gaccrt_set_gemm_library(library) != 0)
        continue;
      SCOPED_TRACE(std::string("library=") + library);
      GemmThreads scope(threads);
      if (!scope.took(threads))
        GTEST_SKIP() << "OpenBLAS did not take " << threads << " threads";
      for (int64_t count : {0, 1, 2, 5, 1000})
        for (int64_t work : {int64_t(1), int64_t(1) << 20}) {
          SCOPED_TRACE("threads=" + std::to_string(threads) + " count=" +
                       std::to_string(count) + " work=" + std::to_string(work));
          ParallelForRecord record;
          record.hits.assign(count, 0);
          gaccrt_parallel_for(recordSlice, &record, count, work);
          for (int64_t i = 0; i < count; ++i)
            ASSERT_EQ(record.hits[i], 1) << "iteration " << i;
          std::sort(record.slices.begin(), record.slices.end(),
                    [](const auto &a, const auto &b) {
                      return std::get<0>(a) < std::get<0>(b);
                    });
          int64_t expected = 0;
          std::set<std::thread::id> ran;
          for (auto &[lo, hi, thread] : record.slices) {
            EXPECT_EQ(lo, expected);
            EXPECT_LT(lo, hi);
            expected = hi;
            EXPECT_TRUE(ran.insert(thread).second) << "two slices on a thread";
          }
          EXPECT_EQ(expected, count);
          // A small loop runs whole on the caller; a large one in one slice
          // per thread (at most one per iteration), the first on the caller.
          size_t slices = count == 0 ? 0
                          : work == 1
                              ? 1
                              : size_t(std::min<int64_t>(threads, count));
          EXPECT_EQ(record.slices.size(), slices);
          if (!record.slices.empty()) {
            EXPECT_EQ(std::get<2>(record.slices.front()),
                      std::this_thread::get_id());
          }
        }
    }
  gaccrt_set_gemm_library(initial.c_str());
}

// A forked child has none of its parent's workers: its first parallel loop
// starts workers of its own and still runs one slice per thread, instead of
// waiting for workers that the fork did not copy.
TEST(ParallelFor, ForkedChildStartsItsOwnWorkers) {
  GemmThreads scope(2);
  if (!scope.took(2))
    GTEST_SKIP() << "OpenBLAS did not take 2 threads";
  auto slicesOnThreads = [] {
    ParallelForRecord record;
    record.hits.assign(2, 0);
    gaccrt_parallel_for(recordSlice, &record, 2, int64_t(1) << 20);
    std::set<std::thread::id> threads;
    for (auto &slice : record.slices)
      threads.insert(std::get<2>(slice));
    return record.hits == std::vector<int>{1, 1} && threads.size() == 2;
  };
  // The parent's workers exist before the fork.
  ASSERT_TRUE(slicesOnThreads());
  pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    alarm(20); // a child waiting for a worker it lacks ends, not hangs
    _exit(slicesOnThreads() && slicesOnThreads() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status))
      << "the child was killed (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(slicesOnThreads());
}

/// What one copy of gaccrt_parallel_copies saw: its thread, the threads of
/// a GEMM it ran, the slices of a loop it ran, and the GEMM's result.
struct CopyRecord {
  std::thread::id thread;
  int32_t gemmThreads = 0;
  size_t loopSlices = 0;
  std::set<std::thread::id> loopThreads;
  std::vector<float> c;
};

struct CopiesRecord {
  std::vector<CopyRecord> copies;
  std::vector<float> a, b;
  std::atomic<int> calls{0};
};

constexpr int64_t kCopyM = 64, kCopyN = 128, kCopyK = 128;

void gemmInto(const std::vector<float> &a, const std::vector<float> &b,
              std::vector<float> &c) {
  float *pa = const_cast<float *>(a.data());
  float *pb = const_cast<float *>(b.data());
  c.assign(kCopyM * kCopyN, 0.0f);
  gaccrt_sgemm(0, 0, 1.0f, 0.0f, pa, pa, 0, kCopyM, kCopyK, kCopyK, 1, pb, pb,
               0, kCopyK, kCopyN, kCopyN, 1, c.data(), c.data(), 0, kCopyM,
               kCopyN, kCopyN, 1);
}

void runCopies(void *context, int64_t lo, int64_t hi) {
  auto &record = *static_cast<CopiesRecord *>(context);
  ++record.calls;
  for (int64_t copy = lo; copy < hi; ++copy) {
    CopyRecord &mine = record.copies[copy];
    mine.thread = std::this_thread::get_id();
    gemmInto(record.a, record.b, mine.c);
    mine.gemmThreads = gaccrt_internal_last_gemm_threads();
    ParallelForRecord loop;
    loop.hits.assign(4, 0);
    gaccrt_parallel_for(recordSlice, &loop, 4, int64_t(1) << 20);
    mine.loopSlices = loop.slices.size();
    for (auto &slice : loop.slices)
      mine.loopThreads.insert(std::get<2>(slice));
  }
}

// gaccrt_parallel_copies (two micro-batches side by side) runs each copy
// once: with two GEMM threads and every GEMM on the kernels, one copy per
// thread, the first on the caller, each copy's GEMMs and loops on its own
// thread alone (same bits as a GEMM split over the threads); otherwise all
// copies on the caller in one call, their GEMMs and loops split as usual.
TEST(ParallelCopies, OneThreadPerCopyOrAllInTurn) {
  std::string initial = gaccrt_gemm_library();
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  CopiesRecord record;
  for (auto *matrix : {&record.a, &record.b}) {
    matrix->resize(kCopyM * kCopyK > kCopyK * kCopyN ? kCopyM * kCopyK
                                                     : kCopyK * kCopyN);
    for (float &x : *matrix)
      x = value(random);
  }
  struct Setting {
    int32_t threads;
    const char *library;
    bool concurrent;
    const char *copies = "concurrent";
  };
  bool kernels = avx512Runs();
  // gaccrt_set_copies("lockstep"): in turn even where the rule says one
  // copy per thread.
  for (Setting setting :
       {Setting{1, "avx512", false}, Setting{2, "avx512", kernels},
        Setting{2, "auto", kernels}, Setting{2, "openblas", false},
        Setting{3, "avx512", false}, Setting{2, "avx512", false, "lockstep"},
        Setting{2, "auto", false, "lockstep"}}) {
    SCOPED_TRACE(std::to_string(setting.threads) + " threads, " +
                 setting.library + ", " + setting.copies);
    if (gaccrt_set_gemm_library(setting.library) != 0)
      continue;
    ASSERT_EQ(gaccrt_set_copies(setting.copies), 0);
    EXPECT_STREQ(gaccrt_copies(), setting.copies);
    GemmThreads scope(setting.threads);
    if (!scope.took(setting.threads))
      continue;
    std::vector<float> expected;
    gemmInto(record.a, record.b, expected);
    record.copies.assign(2, CopyRecord());
    record.calls = 0;
    gaccrt_parallel_copies(runCopies, &record, 2);
    std::set<std::thread::id> threads;
    for (const CopyRecord &copy : record.copies) {
      threads.insert(copy.thread);
      EXPECT_EQ(copy.c, expected);
    }
    EXPECT_EQ(record.copies[0].thread, std::this_thread::get_id());
    if (setting.concurrent) {
      EXPECT_EQ(record.calls, 2);
      EXPECT_EQ(threads.size(), 2u);
      for (const CopyRecord &copy : record.copies) {
        EXPECT_EQ(copy.gemmThreads, 1);
        EXPECT_EQ(copy.loopSlices, 1u);
        EXPECT_EQ(copy.loopThreads, std::set<std::thread::id>{copy.thread});
      }
    } else {
      EXPECT_EQ(record.calls, 1);
      EXPECT_EQ(threads.size(), 1u);
      // The copies' loops still use every thread.
      for (const CopyRecord &copy : record.copies)
        EXPECT_EQ(copy.loopSlices, size_t(std::min(setting.threads, 4)));
    }
  }
  gaccrt_set_gemm_library(initial.c_str());
  gaccrt_set_copies("concurrent");
  EXPECT_EQ(gaccrt_set_copies("sometimes"), -1);
  EXPECT_STREQ(gaccrt_copies(), "concurrent");
}

TEST(ParallelCopies, StepChoiceSetsLibraryAndCopies) {
  // A whole-step choice (gacc-run's tuning, the GEMM cache) sets both the
  // library and how the copies of a pair run; an unknown one changes
  // nothing.
  std::string initial = gaccrt_gemm_library();
  ASSERT_EQ(gaccrt_set_gemm_step_choice("openblas"), 0);
  EXPECT_STREQ(gaccrt_gemm_library(), "openblas");
  EXPECT_STREQ(gaccrt_copies(), "concurrent");
  if (avx512Runs()) {
    ASSERT_EQ(gaccrt_set_gemm_step_choice("avx512-lockstep"), 0);
    EXPECT_STREQ(gaccrt_gemm_library(), "avx512");
    EXPECT_STREQ(gaccrt_copies(), "lockstep");
    ASSERT_EQ(gaccrt_set_gemm_step_choice("avx512"), 0);
    EXPECT_STREQ(gaccrt_copies(), "concurrent");
  }
  EXPECT_EQ(gaccrt_set_gemm_step_choice("auto"), -1);
  EXPECT_EQ(gaccrt_set_gemm_step_choice(nullptr), -1);
  EXPECT_STREQ(gaccrt_gemm_library(), avx512Runs() ? "avx512" : "openblas");
  gaccrt_set_gemm_library(initial.c_str());
  gaccrt_set_copies("concurrent");
}

TEST(Sgemm, DegenerateSizes) {
  // Row and column vectors (a stride along a size-1 dimension is ignored)
  // and an inner size of 1, on every library.
  std::string initial = gaccrt_gemm_library();
  for (const std::string &library : libraries()) {
    SCOPED_TRACE(library);
    ASSERT_EQ(gaccrt_set_gemm_library(library.c_str()), 0);
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 1.0f}) {
          runCase({ta, tb, beta, Layout::SubView, Layout::ColMajor,
                   Layout::Contiguous},
                  1, 4, 3);
          runCase({ta, tb, beta, Layout::Strided, Layout::SubView,
                   Layout::ColMajor},
                  4, 1, 1);
        }
  }
  gaccrt_set_gemm_library(initial.c_str());
}

TEST(Sgemm, BetaZeroIgnoresNaNInC) {
  std::string initial = gaccrt_gemm_library();
  for (const std::string &library : libraries()) {
    SCOPED_TRACE(library);
    ASSERT_EQ(gaccrt_set_gemm_library(library.c_str()), 0);
    std::vector<float> a = {1, 2, 3, 4}, b = {1, 0, 0, 1};
    std::vector<float> c(4, std::nanf(""));
    gaccrt_sgemm(0, 0, 1.0f, 0.0f, a.data(), a.data(), 0, 2, 2, 2, 1, b.data(),
                 b.data(), 0, 2, 2, 2, 1, c.data(), c.data(), 0, 2, 2, 2, 1);
    EXPECT_EQ(c, a);
    // The same with n >= 64, where oneDNN runs it: C = A * I.
    const int64_t size = 64;
    std::vector<float> wide(size * size), identity(size * size, 0.0f);
    for (int64_t i = 0; i < size * size; ++i)
      wide[size_t(i)] = float(i % 97);
    for (int64_t i = 0; i < size; ++i)
      identity[size_t(i * size + i)] = 1.0f;
    std::vector<float> out(size * size, std::nanf(""));
    gaccrt_sgemm(0, 0, 1.0f, 0.0f, wide.data(), wide.data(), 0, size, size,
                 size, 1, identity.data(), identity.data(), 0, size, size, size,
                 1, out.data(), out.data(), 0, size, size, size, 1);
    EXPECT_EQ(out, wide);
  }
  gaccrt_set_gemm_library(initial.c_str());
}

TEST(Sgemm, EmptyInnerDimensionScalesC) {
  std::vector<float> c = {1, 2, 3, 4};
  float none = 0.0f;
  gaccrt_sgemm(0, 0, 1.0f, 2.0f, &none, &none, 0, 2, 0, 0, 1, &none, &none, 0,
               0, 2, 2, 1, c.data(), c.data(), 0, 2, 2, 2, 1);
  EXPECT_EQ(c, (std::vector<float>{2, 4, 6, 8}));
  gaccrt_sgemm(0, 0, 1.0f, 0.0f, &none, &none, 0, 2, 0, 0, 1, &none, &none, 0,
               0, 2, 2, 1, c.data(), c.data(), 0, 2, 2, 2, 1);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

TEST(SgemmDeathTest, MismatchedShapesNameTheShapes) {
  std::vector<float> a(6), b(6), c(4);
  // A is 2x3, B is 2x3 (needs 3xN), C is 2x2.
  EXPECT_DEATH(gaccrt_sgemm(0, 0, 1.0f, 0.0f, a.data(), a.data(), 0, 2, 3, 3, 1,
                            b.data(), b.data(), 0, 2, 3, 3, 1, c.data(),
                            c.data(), 0, 2, 2, 2, 1),
               "gaccrt: error: gaccrt_sgemm: shapes do not agree for C = "
               "op\\(A\\) \\* op\\(B\\): A is 2x3; B is 2x3; C is 2x2");
}

} // namespace

namespace {
/// What an epilogue test sees: C (row-major, ldc), the output it writes and
/// how often each element was visited.
struct EpilogueProbe {
  const float *c;
  int64_t ldc, n;
  std::vector<float> out;
  std::vector<int> visits;
};

void probeEpilogue(void *context, int64_t i0, int64_t i1, int64_t j0,
                   int64_t j1) {
  auto &probe = *static_cast<EpilogueProbe *>(context);
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j) {
      probe.out[i * probe.n + j] = 2.0f * probe.c[i * probe.ldc + j] + 1.0f;
      ++probe.visits[i * probe.n + j];
    }
}
} // namespace

// gaccrt_sgemm_epilogue: the epilogue sees every element of C once, after
// it is final, on every library and route of the kernels (tiles along the
// rows of C, down B's panels, W packed transposed, the transposed route),
// on one and several threads, and for a C the kernels do not compute in
// place (column-major: run after the GEMM).
TEST(Sgemm, EpilogueSeesEveryElementOnceWhenFinal) {
  std::string initial = gaccrt_gemm_library();
  struct Shape {
    int64_t m, n, k;
    bool tb, colMajorC;
  };
  const Shape shapes[] = {{300, 70, 100, false, false},
                          {70, 200, 600, false, false},
                          {100, 130, 70, true, false},
                          {20, 150, 300, true, false},
                          {33, 40, 50, false, true}};
  for (const std::string &library : libraries())
    for (int32_t threads : {1, 2}) {
      SCOPED_TRACE(library + ", threads=" + std::to_string(threads));
      ASSERT_EQ(gaccrt_set_gemm_library(library.c_str()), 0);
      GemmThreads scope(threads);
      for (const Shape &shape : shapes) {
        auto [m, n, k, tb, colMajorC] = shape;
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" +
                     std::to_string(k));
        std::vector<float> a(m * k), b(k * n), c(m * n, 7.0f);
        for (size_t i = 0; i < a.size(); ++i)
          a[i] = float(int(i * 7 % 13) - 6) / 8.0f;
        for (size_t i = 0; i < b.size(); ++i)
          b[i] = float(int(i * 5 % 11) - 5) / 4.0f;
        // B stored k x n, or n x k for tb; C row-major, or column-major.
        int64_t bS0 = tb ? k : n, bS1 = 1;
        int64_t cS0 = colMajorC ? 1 : n, cS1 = colMajorC ? m : 1;
        EpilogueProbe probe{c.data(), n, n, std::vector<float>(m * n, -1.0f),
                            std::vector<int>(m * n, 0)};
        // The probe reads C row-major: for a column-major C it reads the
        // transposed element, which the check below expects.
        if (colMajorC)
          probe.ldc = n;
        gaccrt_sgemm_epilogue(0, tb, 1.0f, 0.5f, a.data(), a.data(), 0, m, k, k,
                              1, b.data(), b.data(), 0, tb ? n : k, tb ? k : n,
                              bS0, bS1, c.data(), c.data(), 0, m, n, cS0, cS1,
                              probeEpilogue, &probe);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            ASSERT_EQ(probe.visits[i * n + j], 1) << i << ", " << j;
            ASSERT_EQ(probe.out[i * n + j], 2.0f * c[i * n + j] + 1.0f)
                << i << ", " << j;
          }
        // The GEMM itself: against gaccrt_sgemm.
        std::vector<float> expected(m * n, 7.0f);
        gaccrt_sgemm(0, tb, 1.0f, 0.5f, a.data(), a.data(), 0, m, k, k, 1,
                     b.data(), b.data(), 0, tb ? n : k, tb ? k : n, bS0, bS1,
                     expected.data(), expected.data(), 0, m, n, cS0, cS1);
        ASSERT_EQ(c, expected);
      }
    }
  gaccrt_set_gemm_library(initial.c_str());
}

TEST(Sgemm, WeightGradientStripsGiveTheBitsOfInPlace) {
  // C += X^T * Y with X's rows 1024 floats apart: the kernels copy op(A) =
  // X^T into strips (4 KiB apart, its lines would share one L1 set); with
  // rows 1040 floats apart they read it in place. Same sums, same bits, on
  // 1 and 2 threads (each part its own strips), with an inner size of two
  // blocks and a last band of other height.
  if (!avx512Runs())
    GTEST_SKIP() << "no AVX-512";
  std::string initial = gaccrt_gemm_library();
  ASSERT_EQ(gaccrt_set_gemm_library("avx512"), 0);
  const int64_t m = 1000, n = 512, k = 300;
  std::vector<float> y(k * n);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = float(int(i * 5 % 11) - 5) / 4.0f;
  for (int32_t threads : {1, 2}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    GemmThreads scope(threads);
    std::vector<float> results[2];
    for (int64_t ld : {int64_t(1024), int64_t(1040)}) {
      std::vector<float> x(k * ld, 99.0f);
      for (int64_t p = 0; p < k; ++p)
        for (int64_t i = 0; i < m; ++i)
          x[p * ld + i] = float(int((p * m + i) * 7 % 13) - 6) / 8.0f;
      std::vector<float> &c = results[ld == 1040];
      c.assign(m * n, 0.5f);
      gaccrt_sgemm(1, 0, 1.0f, 1.0f, x.data(), x.data(), 0, k, m, ld, 1,
                   y.data(), y.data(), 0, k, n, n, 1, c.data(), c.data(), 0, m,
                   n, n, 1);
      if (ld == 1024)
        for (int64_t i = 0; i < m; i += 97)
          for (int64_t j = 0; j < n; j += 13) {
            double sum = 0.5;
            for (int64_t p = 0; p < k; ++p)
              sum += double(x[p * ld + i]) * y[p * n + j];
            ASSERT_NEAR(c[i * n + j], sum, 1e-3 * (1.0 + std::fabs(sum)))
                << i << ", " << j;
          }
    }
    EXPECT_EQ(results[0], results[1]);
  }
  gaccrt_set_gemm_library(initial.c_str());
}

TEST(Sgemm, EpilogueRunsOnceInEveryCallOfATunedShape) {
  // "auto" on one thread: a shape's first calls cycle through the libraries
  // (untimed, then timed: the epilogue counts in each library's time), the
  // later ones run on the chosen library. Each call sees each element once.
  std::string initial = gaccrt_gemm_library();
  ASSERT_EQ(gaccrt_set_gemm_library("auto"), 0);
  GemmThreads scope(1);
  const int64_t m = 96, n = 128, k = 96;
  std::vector<float> a(m * k), b(k * n);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i * 7 % 13) - 6) / 8.0f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i * 5 % 11) - 5) / 4.0f;
  for (int call = 0; call < 3 * (2 + 4) + 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    std::vector<float> c(m * n, 7.0f);
    EpilogueProbe probe{c.data(), n, n, std::vector<float>(m * n, -1.0f),
                        std::vector<int>(m * n, 0)};
    gaccrt_sgemm_epilogue(0, 0, 1.0f, 0.0f, a.data(), a.data(), 0, m, k, k, 1,
                          b.data(), b.data(), 0, k, n, n, 1, c.data(), c.data(),
                          0, m, n, n, 1, probeEpilogue, &probe);
    for (int64_t i = 0; i < m * n; ++i) {
      ASSERT_EQ(probe.visits[i], 1) << i;
      ASSERT_EQ(probe.out[i], 2.0f * c[i] + 1.0f) << i;
    }
  }
  gaccrt_set_gemm_library(initial.c_str());
}
