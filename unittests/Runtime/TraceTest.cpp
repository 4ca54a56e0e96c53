//===- TraceTest.cpp - Timers and the Chrome trace file -------------------===//

#include "gaccrt/gaccrt.h"

#include "Internal.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string readFile(const std::string &path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// Checks the trace with Python's json module; the script exits non-zero and
/// says why when something is missing.
const char *kCheckScript = R"PY(
import json, sys
trace = json.load(open(sys.argv[1]))
assert trace["displayTimeUnit"] == "ms", trace.get("displayTimeUnit")
events = trace["traceEvents"]
meta = [e for e in events if e["ph"] == "M"]
assert meta == [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
                 "args": {"name": "rank 0"}}], meta
by_name = {e["name"]: e for e in events if e["ph"] == "X"}
for e in by_name.values():
    assert e["pid"] == 0 and e["tid"] == 0, e
    assert e["dur"] >= 0 and e["ts"] > 0, e
expected = {"outer": "step", "inner": "work", "micro-batch 0": "region",
            "micro-batch 1": "region", "all-reduce bucket 3": "collective",
            "sgemm 2x2x2": "gemm", "sgemm 2x2x1": "accumulate",
            "custom \"quoted\"": "tool"}
for name, cat in expected.items():
    assert name in by_name, (name, sorted(by_name))
    assert by_name[name]["cat"] == cat, by_name[name]
outer, inner = by_name["outer"], by_name["inner"]
assert outer["ts"] <= inner["ts"], (outer, inner)
assert inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 0.002
assert by_name["all-reduce bucket 3"]["args"] == {
    "bytes": 12, "count": 3, "kind": "average", "dtype": "f32"}
custom = by_name["custom \"quoted\""]
assert custom["ts"] == 1000.0 and custom["dur"] == 250.5, custom
assert custom["args"] == {"step": 2}, custom
assert "disabled" not in by_name
)PY";

TEST(Trace, ClockIsMonotonic) {
  double first = gaccrt_now_us();
  double second = gaccrt_now_us();
  EXPECT_GT(first, 0.0);
  EXPECT_GE(second, first);
}

TEST(Trace, WritesValidChromeTrace) {
  ASSERT_EQ(gaccrt_init(), 0);
  std::string path = testing::TempDir() + "gaccrt-trace-test.json";
  std::remove(path.c_str());

  // Events before enabling are not recorded (and stay balanced).
  EXPECT_EQ(gaccrt_trace_enabled(), 0);
  gaccrt_trace_begin("disabled", "none");
  gaccrt_trace_end();
  EXPECT_NE(gaccrt_trace_write(), 0);

  gaccrt_trace_enable(path.c_str());
  EXPECT_EQ(gaccrt_trace_enabled(), 1);
  gaccrt_trace_begin("outer", "step");
  gaccrt_trace_begin("inner", "work");
  gaccrt_trace_end();
  for (int64_t region = 0; region < 2; ++region) {
    gaccrt_trace_region_begin(region);
    gaccrt_trace_region_end(region);
  }
  std::vector<float> bucket = {1, 2, 3};
  gaccrt_all_reduce(bucket.data(), 3, GACCRT_F32, GACCRT_AVERAGE, 3);
  std::vector<float> a = {1, 2, 3, 4}, b = {1, 0, 0, 1}, c(4, 0.0f);
  gaccrt_sgemm(0, 0, 1.0f, 0.0f, a.data(), a.data(), 0, 2, 2, 2, 1, b.data(),
               b.data(), 0, 2, 2, 2, 1, c.data(), c.data(), 0, 2, 2, 2, 1);
  gaccrt_sgemm(0, 0, 1.0f, 1.0f, a.data(), a.data(), 0, 2, 1, 2, 1, b.data(),
               b.data(), 0, 1, 2, 2, 1, c.data(), c.data(), 0, 2, 2, 2, 1);
  gaccrt_trace_complete("custom \"quoted\"", "tool", 1000.0, 250.5,
                        "{\"step\": 2}");
  gaccrt_trace_end(); // outer
  ASSERT_EQ(gaccrt_trace_write(), 0);

  std::string text = readFile(path);
  EXPECT_NE(text.find("\"traceEvents\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\":\"micro-batch 1\",\"cat\":\"region\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"displayTimeUnit\":\"ms\""), std::string::npos);

  std::string python = GACCRT_PYTHON3;
  if (python.empty()) {
    gaccrt_trace_enable(nullptr);
    GTEST_SKIP() << "no python3 to parse the trace";
  }
  std::string script = testing::TempDir() + "gaccrt-check-trace.py";
  std::ofstream(script) << kCheckScript;
  std::string command = python + " " + script + " " + path;
  EXPECT_EQ(std::system(command.c_str()), 0) << text;

  gaccrt_trace_enable(nullptr);
  EXPECT_EQ(gaccrt_trace_enabled(), 0);
}

TEST(Trace, CommunicationTrackOfTheCudaBackend) {
  // libgaccrt_cuda records its NCCL all-reduces (device times) through this
  // hook on track 1, which the file names "communication".
  ASSERT_EQ(gaccrt_init(), 0);
  std::string path = testing::TempDir() + "gaccrt-trace-track-test.json";
  gaccrt_trace_enable(path.c_str());
  gaccrt_internal_trace_complete_on_track("all-reduce bucket 5", "collective",
                                          2000.0, 10.0,
                                          "{\"overlapped\": true}", 1);
  gaccrt_trace_complete("sgemm 2x2x2", "gemm", 1990.0, 30.0, nullptr);
  ASSERT_EQ(gaccrt_trace_write(), 0);
  gaccrt_trace_enable(nullptr);
  std::string text = readFile(path);
  EXPECT_NE(text.find("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,"
                      "\"tid\":1,\"args\":{\"name\":\"communication\"}}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"name\":\"all-reduce bucket 5\",\"cat\":"
                      "\"collective\",\"ph\":\"X\",\"ts\":2000.000,\"dur\":"
                      "10.000,\"pid\":0,\"tid\":1,\"args\":{\"overlapped\": "
                      "true}}"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("\"name\":\"sgemm 2x2x2\",\"cat\":\"gemm\",\"ph\":"
                "\"X\",\"ts\":1990.000,\"dur\":30.000,\"pid\":0,\"tid\":0"),
      std::string::npos)
      << text;
}

TEST(Trace, UnwritablePathIsReported) {
  gaccrt_trace_enable("/nonexistent-gaccrt-dir/trace.json");
  testing::internal::CaptureStderr();
  EXPECT_NE(gaccrt_trace_write(), 0);
  std::string errors = testing::internal::GetCapturedStderr();
  EXPECT_NE(errors.find("gaccrt: error: cannot write the trace file "
                        "'/nonexistent-gaccrt-dir/trace.json'"),
            std::string::npos)
      << errors;
  gaccrt_trace_enable(nullptr);
}

TEST(Trace, UnbalancedEndWarns) {
  testing::internal::CaptureStderr();
  gaccrt_trace_end();
  std::string errors = testing::internal::GetCapturedStderr();
  EXPECT_NE(errors.find("gaccrt: warning: gaccrt_trace_end without a "
                        "matching gaccrt_trace_begin"),
            std::string::npos)
      << errors;
}

} // namespace
