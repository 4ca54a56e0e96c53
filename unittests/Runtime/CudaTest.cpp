//===- CudaTest.cpp - Unit tests of libgaccrt_cuda ------------------------===//
//
// Two kinds of tests. Those that hold on every machine run in a child process
// with GACCRT_CUDA_DRIVER pointing at a missing library (or at the toolkit's
// stub, whose cuInit fails): initialization reports "CUDA is not available"
// without crashing, and every function that needs a device aborts with a
// message naming it. Invalid arguments are reported before any device is
// needed. The device tests (fixture CudaDevice) need a GPU and skip
// themselves without one: cuBLAS GEMM against a naive loop for every
// transpose, beta and layout, copies and accounting, the single-rank
// all-reduce (blocking, and started and waited for), the trace, and the
// mgpu* ABI loading and launching the embedded PTX kernel.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt_cuda.h"
#include "gaccrt/half.h"

#include "GaccrtTestKernels.inc"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#ifndef GACCRT_TEST_CUDA_STUB
#define GACCRT_TEST_CUDA_STUB ""
#endif

int gaccrtCudaSkippedDeviceTests = 0;
extern "C" int gaccrtCudaTestCallFromC(void);

namespace {

const char *const kMissingDriver = "/nonexistent/gaccrt-test/libcuda.so.1";

/// Makes the backend of this (child) process find no driver.
void withoutDriver() { setenv("GACCRT_CUDA_DRIVER", kMissingDriver, 1); }

std::string unavailable(const std::string &function) {
  return "gaccrt: error: " + function +
         ": CUDA is not available: cannot load the CUDA driver library " +
         kMissingDriver;
}

bool fileExists(const std::string &path) {
  return !path.empty() && std::ifstream(path).good();
}

std::string readFile(const std::string &path) {
  std::ifstream file(path);
  return std::string((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
}

//===----------------------------------------------------------------------===//
// Without a device (every machine)
//===----------------------------------------------------------------------===//

TEST(CudaWithoutDevice, InitReportsMissingDriver) {
  EXPECT_EXIT(
      {
        withoutDriver();
        int first = gaccrt_cuda_init(-1);
        int second = gaccrt_cuda_init(0);
        std::fprintf(stderr, "[first=%d second=%d available=%d device=%d]\n",
                     first, second, gaccrt_cuda_available(),
                     gaccrt_cuda_device());
        std::exit(first != 0 && second != 0 ? 0 : 1);
      },
      testing::ExitedWithCode(0),
      "gaccrt: CUDA is not available: cannot load the CUDA driver library "
      "/nonexistent/gaccrt-test/libcuda.so.1");
  EXPECT_EXIT(
      {
        withoutDriver();
        gaccrt_cuda_init(-1);
        std::fprintf(stderr, "[available=%d device=%d]\n",
                     gaccrt_cuda_available(), gaccrt_cuda_device());
        std::exit(0);
      },
      testing::ExitedWithCode(0), "\\[available=0 device=-1\\]");
}

TEST(CudaWithoutDevice, InitReportsCuInitErrorOfStubDriver) {
  if (!fileExists(GACCRT_TEST_CUDA_STUB))
    GTEST_SKIP() << "the CUDA toolkit's stub libcuda.so was not found";
  // The stub exports the whole driver API (so this also checks that every
  // function gaccrt needs resolves), but its cuInit always fails.
  EXPECT_EXIT(
      {
        setenv("GACCRT_CUDA_DRIVER", GACCRT_TEST_CUDA_STUB, 1);
        std::exit(gaccrt_cuda_init(-1) != 0 ? 0 : 1);
      },
      testing::ExitedWithCode(0),
      "gaccrt: CUDA is not available: cuInit failed: "
      "CUDA_ERROR_STUB_LIBRARY");
  EXPECT_DEATH(
      {
        setenv("GACCRT_CUDA_DRIVER", GACCRT_TEST_CUDA_STUB, 1);
        gaccrt_cuda_alloc(16);
      },
      "gaccrt: error: gaccrt_cuda_alloc: CUDA is not available: cuInit "
      "failed: CUDA_ERROR_STUB_LIBRARY");
}

TEST(CudaWithoutDevice, InitOnThisMachineDoesNotCrash) {
  // Whatever this machine has: 0 with a device, else the message.
  EXPECT_EXIT(
      {
        int rc = gaccrt_cuda_init(-1);
        bool consistent = (rc == 0) == (gaccrt_cuda_available() == 1);
        gaccrt_cuda_finalize();
        std::exit(consistent && gaccrt_cuda_available() == 0 ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

TEST(CudaWithoutDevice, QueriesNeedNoDevice) {
  EXPECT_EXIT(
      {
        withoutDriver();
        bool ok = gaccrt_cuda_available() == 0 && gaccrt_cuda_device() == -1 &&
                  gaccrt_cuda_current_bytes() == 0 &&
                  gaccrt_cuda_peak_bytes() == 0 &&
                  gaccrt_cuda_pooled_bytes() == 0 &&
                  gaccrt_cuda_all_reduces_in_flight() == 0;
        gaccrt_cuda_counts counts;
        counts.launches = counts.syncs = counts.allocations =
            counts.device_allocations = 1;
        gaccrt_cuda_reset_counts();
        gaccrt_cuda_get_counts(&counts);
        gaccrt_cuda_get_counts(nullptr);
        ok = ok && counts.launches == 0 && counts.syncs == 0 &&
             counts.allocations == 0 && counts.device_allocations == 0;
        gaccrt_cuda_reset_peak();
        gaccrt_cuda_free(nullptr);
        mgpuMemFree(nullptr, nullptr);
        // Unloading a module while the backend is down (a compiled step
        // destroyed after gaccrt_cuda_finalize) does nothing; it does not
        // bring CUDA up.
        mgpuModuleUnload(reinterpret_cast<void *>(uintptr_t(0x1000)));
        ok = ok && gaccrt_cuda_available() == 0;
        mgpuSetDefaultDevice(0);
        gaccrt_cuda_finalize();
        gaccrt_cuda_finalize();
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

TEST(CudaWithoutDevice, HeaderWorksFromC) {
  EXPECT_EQ(gaccrtCudaTestCallFromC(), 0);
}

/// A call that needs a device and the function its message must name.
struct DeviceCall {
  const char *function;
  std::function<void()> call;
};

std::vector<DeviceCall> deviceCalls() {
  static float host[16];
  void *fake = host; // never dereferenced: the calls abort first
  float *f = host;
  return {
      {"gaccrt_cuda_alloc", [] { gaccrt_cuda_alloc(64); }},
      {"gaccrt_cuda_memcpy_h2d",
       [=] { gaccrt_cuda_memcpy_h2d(fake, fake, 4); }},
      {"gaccrt_cuda_memcpy_d2h",
       [=] { gaccrt_cuda_memcpy_d2h(fake, fake, 4); }},
      {"gaccrt_cuda_memcpy_d2d",
       [=] { gaccrt_cuda_memcpy_d2d(fake, fake, 4); }},
      {"gaccrt_cuda_memset_zero", [=] { gaccrt_cuda_memset_zero(fake, 4); }},
      {"gaccrt_cuda_synchronize", [] { gaccrt_cuda_synchronize(); }},
      {"gaccrt_cuda_mark", [] { gaccrt_cuda_mark(); }},
      {"gaccrt_cuda_elapsed_ms_since_mark",
       [] { gaccrt_cuda_elapsed_ms_since_mark(); }},
      {"gaccrt_cuda_sgemm",
       [=] {
         gaccrt_cuda_sgemm(0, 0, 1.0f, 0.0f, f, f, 0, 2, 2, 2, 1, f, f, 0, 2, 2,
                           2, 1, f, f, 0, 2, 2, 2, 1);
       }},
      {"gaccrt_cuda_all_reduce",
       [=] { gaccrt_cuda_all_reduce(fake, 4, GACCRT_F32, GACCRT_SUM, 0); }},
      {"gaccrt_cuda_all_reduce_start",
       [=] {
         gaccrt_cuda_all_reduce_start(fake, 4, GACCRT_F32, GACCRT_SUM, 0);
       }},
      {"mgpuModuleLoad",
       [] {
         mgpuModuleLoad(const_cast<char *>(kGaccrtTestKernelsPtx),
                        sizeof(kGaccrtTestKernelsPtx));
       }},
      {"mgpuModuleLoadJIT",
       [] { mgpuModuleLoadJIT(const_cast<char *>(kGaccrtTestKernelsPtx), 2); }},
      {"mgpuModuleGetFunction",
       [=] { mgpuModuleGetFunction(fake, "gaccrt_test_axpy"); }},
      {"mgpuLaunchKernel",
       [=] {
         mgpuLaunchKernel(fake, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr,
                          0);
       }},
      {"mgpuStreamCreate", [] { mgpuStreamCreate(); }},
      {"mgpuStreamDestroy", [=] { mgpuStreamDestroy(fake); }},
      {"mgpuStreamSynchronize", [] { mgpuStreamSynchronize(nullptr); }},
      {"mgpuStreamWaitEvent", [=] { mgpuStreamWaitEvent(nullptr, fake); }},
      {"mgpuEventCreate", [] { mgpuEventCreate(); }},
      {"mgpuEventDestroy", [=] { mgpuEventDestroy(fake); }},
      {"mgpuEventSynchronize", [=] { mgpuEventSynchronize(fake); }},
      {"mgpuEventRecord", [=] { mgpuEventRecord(fake, nullptr); }},
      {"mgpuMemAlloc", [] { mgpuMemAlloc(64, nullptr, false); }},
      {"mgpuMemcpy", [=] { mgpuMemcpy(fake, fake, 4, nullptr); }},
      {"mgpuMemset32", [=] { mgpuMemset32(fake, 0, 1, nullptr); }},
      {"mgpuMemset16", [=] { mgpuMemset16(fake, 0, 1, nullptr); }},
  };
}

TEST(CudaWithoutDevice, EveryDeviceFunctionAbortsWithTheReason) {
  for (const DeviceCall &entry : deviceCalls()) {
    SCOPED_TRACE(entry.function);
    EXPECT_DEATH(
        {
          withoutDriver();
          entry.call();
        },
        unavailable(entry.function));
  }
}

TEST(CudaWithoutDevice, ExplicitFailedInitIsTheReasonLater) {
  EXPECT_DEATH(
      {
        withoutDriver();
        if (gaccrt_cuda_init(-1) == 0)
          std::exit(0);
        gaccrt_cuda_synchronize();
      },
      unavailable("gaccrt_cuda_synchronize"));
}

TEST(CudaWithoutDevice, ForeignPointerFreeAborts) {
  static float host[4];
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_free(host);
      },
      "gaccrt: error: gaccrt_cuda_free: the pointer was not allocated by "
      "gaccrt_cuda_alloc or mgpuMemAlloc \\(or was freed twice\\)");
  EXPECT_DEATH(
      {
        withoutDriver();
        mgpuMemFree(host, nullptr);
      },
      "gaccrt: error: mgpuMemFree: the pointer was not allocated");
}

TEST(CudaWithoutDevice, InvalidArgumentsAreReportedFirst) {
  static float m[16];
  float *f = m;
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_sgemm(0, 0, 1.0f, 0.0f, f, f, 0, 2, 3, 3, 1, f, f, 0, 2, 3,
                          3, 1, f, f, 0, 2, 3, 3, 1);
      },
      "gaccrt: error: gaccrt_cuda_sgemm: shapes do not agree for C = op\\(A\\) "
      "\\* op\\(B\\): A is 2x3; B is 2x3; C is 2x3 \\(expected 2x3 from "
      "op\\(A\\) "
      "2x3 and op\\(B\\) 2x3\\)");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_all_reduce(f, 1, 9, GACCRT_SUM, 4);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce: unknown dtype 9 for bucket 4");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_all_reduce_start(f, 1, 9, GACCRT_SUM, 4);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce_start: unknown dtype 9 for "
      "bucket 4");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_all_reduce_start(f, 1, GACCRT_I32, GACCRT_AVERAGE, 2);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce_start: average of an integer "
      "\\(i32\\) bucket 2 is not supported; use sum");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_all_reduce_wait(0, f);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce_wait: 0 is not a handle of a "
      "started collective \\(0 started so far\\)");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_all_reduce_wait(3, f);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce_wait: 3 is not a handle");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_all_reduce(f, 1, GACCRT_F32, 7, 4);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce: unknown reduction kind 7 for "
      "bucket 4");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_all_reduce(f, 1, GACCRT_I64, GACCRT_AVERAGE, 5);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce: average of an integer \\(i64\\) "
      "bucket 5 is not supported; use sum");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_all_reduce(nullptr, 3, GACCRT_F32, GACCRT_SUM, 6);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce: invalid buffer for bucket 6 "
      "\\(3 elements at NULL\\)");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_alloc(-1);
      },
      "gaccrt: error: gaccrt_cuda_alloc: negative size -1");
  EXPECT_DEATH(
      {
        withoutDriver();
        gaccrt_cuda_memcpy_h2d(nullptr, f, 4);
      },
      "gaccrt: error: gaccrt_cuda_memcpy_h2d: NULL destination for 4 bytes");
  EXPECT_DEATH(
      {
        withoutDriver();
        mgpuModuleLoadJIT(const_cast<char *>(kGaccrtTestKernelsPtx), 9);
      },
      "gaccrt: error: mgpuModuleLoadJIT: optimization level 9 is not in 0..4");
}

//===----------------------------------------------------------------------===//
// With a device
//===----------------------------------------------------------------------===//

bool deviceAvailable() {
  static const bool available = gaccrt_cuda_init(-1) == 0;
  return available;
}

class CudaDevice : public testing::Test {
protected:
  void SetUp() override {
    if (!deviceAvailable()) {
      ++gaccrtCudaSkippedDeviceTests;
      GTEST_SKIP() << "no CUDA device";
    }
    ASSERT_EQ(gaccrt_init(), 0);
    gaccrt_reset_stats();
  }
};

/// A device copy of a host buffer, freed at the end of the scope.
struct DeviceBuffer {
  void *pointer = nullptr;
  int64_t bytes = 0;
  DeviceBuffer(const void *host, int64_t size) : bytes(size) {
    pointer = gaccrt_cuda_alloc(bytes);
    if (host)
      gaccrt_cuda_memcpy_h2d(pointer, host, bytes);
  }
  ~DeviceBuffer() { gaccrt_cuda_free(pointer); }
  template <typename T> std::vector<T> read(int64_t count) const {
    std::vector<T> values(static_cast<size_t>(count));
    gaccrt_cuda_memcpy_d2h(values.data(), pointer, count * sizeof(T));
    return values;
  }
  float *floats() const { return static_cast<float *>(pointer); }
};

TEST_F(CudaDevice, InitIsIdempotentAndReportsTheDevice) {
  EXPECT_EQ(gaccrt_cuda_init(-1), 0);
  EXPECT_EQ(gaccrt_cuda_available(), 1);
  int device = gaccrt_cuda_device();
  EXPECT_GE(device, 0);
  EXPECT_EQ(gaccrt_cuda_init(device), 0);
}

TEST_F(CudaDevice, CopiesRoundTripAndAreAccounted) {
  int64_t before = gaccrt_cuda_current_bytes();
  gaccrt_cuda_reset_peak();
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = 0.5f * float(i) - 7.0f;
  {
    DeviceBuffer a(host.data(), 4000), b(nullptr, 4000);
    EXPECT_EQ(gaccrt_cuda_current_bytes(), before + 8000);
    gaccrt_cuda_memcpy_d2d(b.pointer, a.pointer, 4000);
    EXPECT_EQ(b.read<float>(1000), host);
    gaccrt_cuda_memset_zero(a.floats() + 10, 40);
    std::vector<float> zeroed = a.read<float>(1000);
    for (size_t i = 0; i < host.size(); ++i)
      EXPECT_EQ(zeroed[i], i >= 10 && i < 20 ? 0.0f : host[i]) << i;
  }
  EXPECT_EQ(gaccrt_cuda_current_bytes(), before);
  EXPECT_EQ(gaccrt_cuda_peak_bytes(), before + 8000);
  gaccrt_cuda_reset_peak();
  EXPECT_EQ(gaccrt_cuda_peak_bytes(), before);
  EXPECT_EQ(gaccrt_cuda_alloc(0), nullptr);
}

/// A stored matrix in one of the layouts the GEMM handles differently.
enum class Layout { Contiguous, SubView, ColumnMajor, Strided };

struct Matrix {
  int64_t rows, cols, offset = 0, stride0 = 0, stride1 = 0;
  std::vector<float> storage;
  Matrix(int64_t r, int64_t c, Layout layout, std::mt19937 &random)
      : rows(r), cols(c) {
    switch (layout) {
    case Layout::Contiguous:
      offset = 0, stride0 = c, stride1 = 1;
      break;
    case Layout::SubView:
      offset = 2, stride0 = c + 3, stride1 = 1;
      break;
    case Layout::ColumnMajor:
      offset = 0, stride0 = 1, stride1 = r;
      break;
    case Layout::Strided:
      offset = 1, stride0 = 2 * c, stride1 = 2;
      break;
    }
    int64_t last = offset + (r - 1) * stride0 + (c - 1) * stride1;
    storage.assign(static_cast<size_t>(last + 1),
                   std::numeric_limits<float>::quiet_NaN());
    std::uniform_real_distribution<float> values(-1.0f, 1.0f);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j)
        at(i, j) = values(random);
  }
  float &at(int64_t i, int64_t j) {
    return storage[offset + i * stride0 + j * stride1];
  }
};

const char *layoutName(Layout layout) {
  switch (layout) {
  case Layout::Contiguous:
    return "contiguous";
  case Layout::SubView:
    return "sub-view";
  case Layout::ColumnMajor:
    return "column-major";
  case Layout::Strided:
    return "strided";
  }
  return "?";
}

TEST_F(CudaDevice, SgemmMatchesNaiveLoopForEveryTransposeBetaAndLayout) {
  std::mt19937 random(42);
  const int64_t m = 5, n = 7, k = 3;
  for (Layout layout : {Layout::Contiguous, Layout::SubView,
                        Layout::ColumnMajor, Layout::Strided})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.0f, 1.0f}) {
          SCOPED_TRACE(std::string(layoutName(layout)) + " transA=" +
                       std::to_string(ta) + " transB=" + std::to_string(tb) +
                       " beta=" + std::to_string(beta));
          Matrix a(ta ? k : m, ta ? m : k, layout, random);
          Matrix b(tb ? n : k, tb ? k : n, layout, random);
          Matrix c(m, n, layout, random);
          if (beta == 0.0f)
            c.at(0, 0) = std::numeric_limits<float>::quiet_NaN();
          const float alpha = 0.75f;
          std::vector<double> expected(m * n);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0.0;
              for (int64_t p = 0; p < k; ++p)
                sum += double(ta ? a.at(p, i) : a.at(i, p)) *
                       double(tb ? b.at(j, p) : b.at(p, j));
              expected[i * n + j] =
                  alpha * sum + (beta != 0.0f ? beta * c.at(i, j) : 0.0);
            }
          int64_t aBytes = a.storage.size() * 4, bBytes = b.storage.size() * 4,
                  cBytes = c.storage.size() * 4;
          DeviceBuffer da(a.storage.data(), aBytes),
              db(b.storage.data(), bBytes), dc(c.storage.data(), cBytes);
          gaccrt_cuda_sgemm(ta, tb, alpha, beta, da.floats(), da.floats(),
                            a.offset, a.rows, a.cols, a.stride0, a.stride1,
                            db.floats(), db.floats(), b.offset, b.rows, b.cols,
                            b.stride0, b.stride1, dc.floats(), dc.floats(),
                            c.offset, c.rows, c.cols, c.stride0, c.stride1);
          std::vector<float> after = dc.read<float>(c.storage.size());
          Matrix result = c;
          result.storage = after;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
              EXPECT_NEAR(result.at(i, j), expected[i * n + j], 1e-4)
                  << "C[" << i << "][" << j << "]";
          // Elements outside the view are untouched (NaN padding).
          for (size_t e = 0; e < after.size(); ++e) {
            bool padding = std::isnan(c.storage[e]) &&
                           !(beta == 0.0f && e == size_t(c.offset));
            if (padding) {
              EXPECT_TRUE(std::isnan(after[e])) << "padding element " << e;
            }
          }
        }
}

TEST_F(CudaDevice, SgemmWithEmptyInnerDimensionScalesC) {
  std::vector<float> c = {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f,
                          4.0f};
  DeviceBuffer dc(c.data(), 16);
  float *none = nullptr;
  gaccrt_cuda_sgemm(0, 0, 1.0f, 0.0f, none, none, 0, 2, 0, 0, 1, none, none, 0,
                    0, 2, 2, 1, dc.floats(), dc.floats(), 0, 2, 2, 2, 1);
  EXPECT_EQ(dc.read<float>(4), std::vector<float>(4, 0.0f));
}

TEST_F(CudaDevice, SgemmIsTracedWithDeviceTimes) {
  std::string path = testing::TempDir() + "gaccrt-cuda-sgemm-trace.json";
  gaccrt_trace_enable(path.c_str());
  std::vector<float> ones(20, 1.0f);
  DeviceBuffer a(ones.data(), 60), b(ones.data(), 80), c(nullptr, 48);
  gaccrt_cuda_sgemm(0, 0, 1.0f, 0.0f, a.floats(), a.floats(), 0, 3, 5, 5, 1,
                    b.floats(), b.floats(), 0, 5, 4, 4, 1, c.floats(),
                    c.floats(), 0, 3, 4, 4, 1);
  gaccrt_cuda_sgemm(0, 0, 1.0f, 1.0f, a.floats(), a.floats(), 0, 3, 5, 5, 1,
                    b.floats(), b.floats(), 0, 5, 4, 4, 1, c.floats(),
                    c.floats(), 0, 3, 4, 4, 1);
  gaccrt_cuda_synchronize();
  ASSERT_EQ(gaccrt_trace_write(), 0);
  gaccrt_trace_enable(nullptr);
  EXPECT_EQ(c.read<float>(12), std::vector<float>(12, 10.0f));
  std::string trace = readFile(path);
  EXPECT_NE(trace.find("\"name\":\"sgemm 3x4x5\",\"cat\":\"gemm\""),
            std::string::npos)
      << trace;
  EXPECT_NE(trace.find("\"name\":\"sgemm 3x4x5\",\"cat\":\"accumulate\""),
            std::string::npos)
      << trace;
}

TEST_F(CudaDevice, TraceEventsAreAddedWhenTheStepWaits) {
  // Compiled steps end with mgpuStreamSynchronize, not with
  // gaccrt_cuda_synchronize: completed events are added there too.
  std::string path = testing::TempDir() + "gaccrt-cuda-stream-trace.json";
  gaccrt_trace_enable(path.c_str());
  std::vector<float> ones(4, 1.0f);
  DeviceBuffer a(ones.data(), 16), b(ones.data(), 16), c(nullptr, 16);
  gaccrt_cuda_sgemm(0, 0, 1.0f, 0.0f, a.floats(), a.floats(), 0, 2, 2, 2, 1,
                    b.floats(), b.floats(), 0, 2, 2, 2, 1, c.floats(),
                    c.floats(), 0, 2, 2, 2, 1);
  mgpuStreamSynchronize(mgpuStreamCreate());
  ASSERT_EQ(gaccrt_trace_write(), 0);
  gaccrt_trace_enable(nullptr);
  EXPECT_NE(readFile(path).find("\"name\":\"sgemm 2x2x2\""), std::string::npos);
}

TEST_F(CudaDevice, AllReduceOnOneRankIsIdentityButCountedAndTraced) {
  std::string path = testing::TempDir() + "gaccrt-cuda-allreduce-trace.json";
  gaccrt_trace_enable(path.c_str());
  const int64_t n = 5;
  std::vector<float> f32 = {1, 2, 3, 4, 5};
  std::vector<double> f64 = {0.5, 1.5, 2.5, 3.5, 4.5};
  std::vector<uint16_t> bf16(n), f16(n);
  std::vector<int32_t> i32 = {1, -2, 3, -4, 5};
  std::vector<int64_t> i64 = {10, 20, 30, 40, 50};
  for (int i = 0; i < n; ++i) {
    bf16[i] = gaccrt_f32_to_bf16(0.25f * float(i));
    f16[i] = gaccrt_f32_to_f16(0.25f * float(i));
  }
  DeviceBuffer d32(f32.data(), n * 4), d64(f64.data(), n * 8),
      dbf(bf16.data(), n * 2), dhf(f16.data(), n * 2), di32(i32.data(), n * 4),
      di64(i64.data(), n * 8);
  gaccrt_cuda_all_reduce(d32.pointer, n, GACCRT_F32, GACCRT_SUM, 0);
  gaccrt_cuda_all_reduce(d32.pointer, n, GACCRT_F32, GACCRT_AVERAGE, 1);
  gaccrt_cuda_all_reduce(d64.pointer, n, GACCRT_F64, GACCRT_AVERAGE, 2);
  gaccrt_cuda_all_reduce(dbf.pointer, n, GACCRT_BF16, GACCRT_SUM, 3);
  gaccrt_cuda_all_reduce(dhf.pointer, n, GACCRT_F16, GACCRT_AVERAGE, 4);
  gaccrt_cuda_all_reduce(di32.pointer, n, GACCRT_I32, GACCRT_SUM, 5);
  gaccrt_cuda_all_reduce(di64.pointer, n, GACCRT_I64, GACCRT_SUM, 6);
  gaccrt_cuda_all_reduce(nullptr, 0, GACCRT_F32, GACCRT_SUM, 7);
  EXPECT_EQ(gaccrt_collectives_issued(), 8);
  EXPECT_EQ(gaccrt_bytes_reduced(),
            2 * n * 4 + n * 8 + 2 * n * 2 + n * 4 + n * 8);
  EXPECT_EQ(d32.read<float>(n), f32);
  EXPECT_EQ(d64.read<double>(n), f64);
  EXPECT_EQ(dbf.read<uint16_t>(n), bf16);
  EXPECT_EQ(dhf.read<uint16_t>(n), f16);
  EXPECT_EQ(di32.read<int32_t>(n), i32);
  EXPECT_EQ(di64.read<int64_t>(n), i64);
  gaccrt_cuda_synchronize();
  ASSERT_EQ(gaccrt_trace_write(), 0);
  gaccrt_trace_enable(nullptr);
  std::string trace = readFile(path);
  for (int bucket = 0; bucket < 8; ++bucket)
    EXPECT_NE(trace.find("\"name\":\"all-reduce bucket " +
                         std::to_string(bucket) + "\",\"cat\":\"collective\""),
              std::string::npos)
        << bucket;
}

TEST_F(CudaDevice, StartedAllReduceOrdersTheStreamsWithoutAHostWait) {
  // What a step with overlap-all-reduce does on one rank: the bucket is
  // written on the compute stream, the all-reduce starts, unrelated work
  // follows, and the compute stream waits for the all-reduce before the
  // bucket is read. One rank leaves the data as it is, but the streams are
  // ordered just as with several: the read sees the compute stream's writes.
  std::string path = testing::TempDir() + "gaccrt-cuda-started-trace.json";
  gaccrt_trace_enable(path.c_str());
  const int64_t n = 1 << 20;
  std::vector<float> host(n), other(n, 2.0f);
  for (int64_t i = 0; i < n; ++i)
    host[i] = float(i % 97);
  DeviceBuffer bucket(host.data(), n * 4), unrelated(other.data(), n * 4),
      target(nullptr, n * 4);
  gaccrt_cuda_reset_counts();
  // Asynchronous writes into the bucket, then the start.
  gaccrt_cuda_memset_zero(bucket.pointer, n * 2);
  int64_t handle = gaccrt_cuda_all_reduce_start(bucket.pointer, n, GACCRT_F32,
                                                GACCRT_SUM, 0);
  EXPECT_GT(handle, 0);
  EXPECT_EQ(gaccrt_cuda_all_reduces_in_flight(), 1);
  // Work that does not touch the bucket is not held back by it.
  gaccrt_cuda_memcpy_d2d(target.pointer, unrelated.pointer, n * 4);
  gaccrt_cuda_all_reduce_wait(handle, bucket.pointer);
  EXPECT_EQ(gaccrt_cuda_all_reduces_in_flight(), 0);
  gaccrt_cuda_counts counts;
  gaccrt_cuda_get_counts(&counts);
  EXPECT_EQ(counts.syncs, 0) << "start or wait waited on the host";
  // Waiting again for a finished handle does nothing.
  gaccrt_cuda_all_reduce_wait(handle, bucket.pointer);
  std::vector<float> reduced = bucket.read<float>(n);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    wrong += reduced[i] != (i < n / 2 ? 0.0f : host[i]);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(target.read<float>(n), other);
  EXPECT_EQ(gaccrt_collectives_issued(), 1);
  EXPECT_EQ(gaccrt_bytes_reduced(), n * 4);

  // Many steps: handles keep increasing, events are reused, and no data
  // means nothing to wait for.
  int64_t last = handle;
  for (int step = 0; step < 1000; ++step) {
    int64_t next = gaccrt_cuda_all_reduce_start(bucket.pointer, n, GACCRT_F32,
                                                GACCRT_AVERAGE, 1);
    EXPECT_GT(next, last);
    last = next;
    gaccrt_cuda_all_reduce_wait(next, bucket.pointer);
  }
  int64_t empty =
      gaccrt_cuda_all_reduce_start(nullptr, 0, GACCRT_F32, GACCRT_SUM, 2);
  EXPECT_EQ(gaccrt_cuda_all_reduces_in_flight(), 0);
  gaccrt_cuda_all_reduce_wait(empty, nullptr);
  EXPECT_EQ(bucket.read<float>(n), reduced);

  gaccrt_cuda_synchronize();
  ASSERT_EQ(gaccrt_trace_write(), 0);
  gaccrt_trace_enable(nullptr);
  std::string trace = readFile(path);
  EXPECT_NE(
      trace.find("\"name\":\"all-reduce bucket 0\",\"cat\":\"collective\""),
      std::string::npos);
  EXPECT_NE(trace.find("\"overlapped\": true"), std::string::npos);
}

TEST_F(CudaDevice, StartedReduceScatterAndAllGatherCopyOnOneRank) {
  // shard-optimizer-state overlapped on one rank: the started collectives
  // are device copies ordered on the compute stream; the waits find nothing
  // in flight and never wait on the host.
  const int64_t n = 1 << 16;
  std::vector<float> host(n);
  for (int64_t i = 0; i < n; ++i)
    host[i] = float(i % 89) - 3.0f;
  DeviceBuffer send(host.data(), n * 4), recv(nullptr, n * 4),
      gathered(nullptr, n * 4);
  gaccrt_cuda_reset_counts();
  int64_t scatter = gaccrt_cuda_reduce_scatter_start(
      send.pointer, recv.pointer, n, GACCRT_F32, GACCRT_AVERAGE, 0);
  int64_t gather = gaccrt_cuda_all_gather_start(recv.pointer, gathered.pointer,
                                                n, GACCRT_F32, 1);
  EXPECT_GT(gather, scatter);
  gaccrt_cuda_reduce_scatter_wait(scatter, send.pointer, recv.pointer);
  gaccrt_cuda_all_gather_wait(gather, recv.pointer, gathered.pointer);
  gaccrt_cuda_counts counts;
  gaccrt_cuda_get_counts(&counts);
  EXPECT_EQ(counts.syncs, 0) << "start or wait waited on the host";
  EXPECT_EQ(gathered.read<float>(n), host);
  EXPECT_EQ(gaccrt_collectives_issued(), 2);
}

TEST_F(CudaDevice, StartedAllReduceOnAFreedBlockOrdersItsReuse) {
  // A block freed while its all-reduce is in flight goes back to the pool;
  // the next allocation of its size gets it, and work on it is ordered
  // after the all-reduce (on the device).
  const int64_t n = 4096;
  std::vector<float> ones(n, 1.0f);
  void *block = gaccrt_cuda_alloc(n * 4);
  gaccrt_cuda_memcpy_h2d(block, ones.data(), n * 4);
  int64_t handle =
      gaccrt_cuda_all_reduce_start(block, n, GACCRT_F32, GACCRT_SUM, 0);
  gaccrt_cuda_free(block);
  void *again = gaccrt_cuda_alloc(n * 4);
  EXPECT_EQ(again, block);
  gaccrt_cuda_memset_zero(again, n * 4);
  std::vector<float> values(n, 5.0f);
  gaccrt_cuda_memcpy_d2h(values.data(), again, n * 4);
  EXPECT_EQ(values, std::vector<float>(n, 0.0f));
  gaccrt_cuda_all_reduce_wait(handle, block);
  gaccrt_cuda_free(again);
}

TEST_F(CudaDevice, WaitOnAnotherBufferAborts) {
  EXPECT_DEATH(
      {
        void *a = gaccrt_cuda_alloc(64);
        void *b = gaccrt_cuda_alloc(64);
        int64_t handle =
            gaccrt_cuda_all_reduce_start(a, 16, GACCRT_F32, GACCRT_SUM, 3);
        gaccrt_cuda_all_reduce_wait(handle, b);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce_wait: handle [0-9]+ \\(bucket "
      "3\\) was started on another buffer than the one waited for");
}

TEST_F(CudaDevice, AllReduceOfHostMemoryAborts) {
  static float host[4];
  EXPECT_DEATH(gaccrt_cuda_all_reduce(host, 4, GACCRT_F32, GACCRT_SUM, 3),
               "gaccrt: error: gaccrt_cuda_all_reduce: bucket 3 is not in "
               "device memory");
}

TEST_F(CudaDevice, AllReduceOverrunningItsAllocationAborts) {
  // 4 MiB: a multiple of the allocation granularity, so the range is exact.
  EXPECT_DEATH(
      {
        void *data = gaccrt_cuda_alloc(int64_t(4) << 20);
        gaccrt_cuda_all_reduce(data, (int64_t(1) << 20) + 1, GACCRT_F32,
                               GACCRT_SUM, 2);
      },
      "gaccrt: error: gaccrt_cuda_all_reduce: bucket 2 \\(4194308 bytes at "
      "offset 0\\) overruns its device allocation of 4194304 bytes");
}

TEST_F(CudaDevice, HugeAllocationAbortsWithTheDeviceMemory) {
  EXPECT_DEATH(gaccrt_cuda_alloc(int64_t(1) << 60),
               "gaccrt: error: gaccrt_cuda_alloc: cuMemAlloc of "
               "1152921504606846976 bytes failed: CUDA_ERROR_");
}

TEST_F(CudaDevice, FreedBlocksArePooledAndCounted) {
  // An odd size no other test uses: 123457 and 123400 bytes both round up
  // to 123904.
  gaccrt_cuda_reset_counts();
  void *first = gaccrt_cuda_alloc(123457);
  gaccrt_cuda_free(first);
  EXPECT_GE(gaccrt_cuda_pooled_bytes(), 123904);
  void *second = gaccrt_cuda_alloc(123400);
  EXPECT_EQ(second, first);
  EXPECT_EQ(gaccrt_cuda_current_bytes() >= 123400, true);
  gaccrt_cuda_counts counts{};
  gaccrt_cuda_get_counts(&counts);
  EXPECT_EQ(counts.allocations, 2);
  EXPECT_EQ(counts.device_allocations, 1);
  EXPECT_EQ(counts.launches, 0);
  gaccrt_cuda_free(second);
}

TEST_F(CudaDevice, TimingMarkMeasuresDeviceTime) {
  gaccrt_cuda_mark();
  DeviceBuffer a(nullptr, 1 << 20);
  gaccrt_cuda_memset_zero(a.pointer, 1 << 20);
  double ms = gaccrt_cuda_elapsed_ms_since_mark();
  EXPECT_GE(ms, 0.0);
  EXPECT_LT(ms, 60000.0);
}

/// Runs the embedded kernel y = a * x + y through the mgpu* ABI, as the
/// code lowered by gpu-to-llvm does.
void runAxpy(void *module) {
  ASSERT_NE(module, nullptr);
  void *function = mgpuModuleGetFunction(module, "gaccrt_test_axpy");
  ASSERT_NE(function, nullptr);
  void *stream = mgpuStreamCreate();
  const int n = 300;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(i), y[i] = 1.0f;
  int64_t before = gaccrt_cuda_current_bytes();
  void *dx = mgpuMemAlloc(n * 4, stream, false);
  void *dy = mgpuMemAlloc(n * 4, stream, false);
  EXPECT_EQ(gaccrt_cuda_current_bytes(), before + 8 * n);
  mgpuMemcpy(dx, x.data(), n * 4, stream);
  mgpuMemcpy(dy, y.data(), n * 4, stream);
  float a = 2.0f;
  int count = n;
  void *params[] = {&a, &dx, &dy, &count};
  mgpuLaunchKernel(function, (n + 127) / 128, 1, 1, 128, 1, 1, 0, stream,
                   params, nullptr, 4);
  void *event = mgpuEventCreate();
  mgpuEventRecord(event, stream);
  mgpuStreamWaitEvent(stream, event);
  mgpuEventSynchronize(event);
  mgpuEventDestroy(event);
  mgpuMemcpy(y.data(), dy, n * 4, stream);
  mgpuStreamSynchronize(stream);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(y[i], 2.0f * float(i) + 1.0f) << i;
  mgpuMemset32(dy, 0x3f800000u, n, stream); // 1.0f
  mgpuMemset16(dx, 0x3c00, 2 * n, stream);  // f16 1.0 pairs
  mgpuMemcpy(y.data(), dy, n * 4, stream);
  std::vector<uint16_t> halves(2 * n);
  mgpuMemcpy(halves.data(), dx, n * 4, stream);
  mgpuStreamSynchronize(stream);
  EXPECT_EQ(y, std::vector<float>(n, 1.0f));
  EXPECT_EQ(halves, std::vector<uint16_t>(2 * n, 0x3c00));
  mgpuMemFree(dx, stream);
  mgpuMemFree(dy, stream);
  EXPECT_EQ(gaccrt_cuda_current_bytes(), before);
  mgpuStreamDestroy(stream);
  mgpuModuleUnload(module);
}

TEST_F(CudaDevice, MgpuModuleLoadJITAndLaunch) {
  runAxpy(mgpuModuleLoadJIT(const_cast<char *>(kGaccrtTestKernelsPtx), 2));
}

TEST_F(CudaDevice, MgpuModuleLoadAndLaunch) {
  runAxpy(mgpuModuleLoad(const_cast<char *>(kGaccrtTestKernelsPtx),
                         sizeof(kGaccrtTestKernelsPtx)));
}

void launchAxpyWithTooLargeBlock() {
  void *module =
      mgpuModuleLoadJIT(const_cast<char *>(kGaccrtTestKernelsPtx), 2);
  void *function = mgpuModuleGetFunction(module, "gaccrt_test_axpy");
  float a = 1.0f;
  void *x = nullptr, *y = nullptr;
  int n = 0;
  void *params[] = {&a, &x, &y, &n};
  mgpuLaunchKernel(function, 1, 1, 1, 4096, 1, 1, 0, nullptr, params, nullptr,
                   4);
}

TEST_F(CudaDevice, MgpuFailuresNameTheCall) {
  EXPECT_DEATH(mgpuModuleLoadJIT(const_cast<char *>(".version 8.0\n"
                                                    ".target sm_75\n"
                                                    "this is not ptx\n"),
                                 2),
               "gaccrt: error: mgpuModuleLoadJIT: cuModuleLoadDataEx failed: "
               "CUDA_ERROR_");
  EXPECT_DEATH(
      {
        void *module =
            mgpuModuleLoadJIT(const_cast<char *>(kGaccrtTestKernelsPtx), 2);
        mgpuModuleGetFunction(module, "no_such_kernel");
      },
      "gaccrt: error: mgpuModuleGetFunction: cuModuleGetFunction of kernel "
      "'no_such_kernel' failed: CUDA_ERROR_");
  EXPECT_DEATH(
      launchAxpyWithTooLargeBlock(),
      "gaccrt: error: mgpuLaunchKernel: cuLaunchKernel of kernel "
      "'gaccrt_test_axpy' \\(grid 1x1x1, block 4096x1x1, 0 bytes of dynamic "
      "shared memory\\) failed: CUDA_ERROR_");
  EXPECT_DEATH(mgpuSetDefaultDevice(gaccrt_cuda_device() + 1),
               "gaccrt: error: mgpuSetDefaultDevice\\([0-9]+\\): the CUDA "
               "backend already runs on device");
}

} // namespace
