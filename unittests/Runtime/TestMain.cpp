//===- TestMain.cpp - Entry point of gaccrt-tests -------------------------===//
//
// The unit tests of gaccrt and GaccNpy run single-rank: the backend is forced
// to "single" so an mpirun environment cannot change them, and death tests
// re-execute the binary because OpenBLAS starts threads. The GEMM cache is
// off (as in the lit suite): the decisions of earlier runs on this machine
// (~/.cache/gacc) must not change which library a test's GEMM runs on.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char **argv) {
  setenv("GACCRT_BACKEND", "single", 1);
  setenv("GACCRT_GEMM_CACHE", "off", 1);
  testing::InitGoogleTest(&argc, argv);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  return RUN_ALL_TESTS();
}
