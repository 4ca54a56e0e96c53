//===- CudaTestMain.cpp - Entry point of gaccrt-cuda-tests ----------------===//
//
// Runs single-rank (the backend is forced to "single") and reports how many
// device tests skipped themselves because this machine has no usable CUDA
// device. Death tests re-execute the binary: the driver, cuBLAS and OpenBLAS
// start threads.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

extern int gaccrtCudaSkippedDeviceTests;

int main(int argc, char **argv) {
  setenv("GACCRT_BACKEND", "single", 1);
  testing::InitGoogleTest(&argc, argv);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int result = RUN_ALL_TESTS();
  if (gaccrtCudaSkippedDeviceTests > 0)
    std::printf("no CUDA device: %d tests skipped\n",
                gaccrtCudaSkippedDeviceTests);
  return result;
}
