//===- StepIOTest.cpp - The runners' host buffers and result checks -------===//

#include "StepIO.h"
#include "gaccrt/gaccrt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using namespace mlir::gacc;

namespace {

TEST(StepIO, NonFiniteCountsEachFloatType) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> f32 = {1, nan, inf, -inf, -inf, 0, -0.0f};
  EXPECT_EQ(describeNonFinite(DType::F32, f32.data(), f32.size()),
            "1 NaN, 1 +inf, 2 -inf of 7 values");
  std::vector<double> f64 = {std::nan(""), 2,
                             -std::numeric_limits<double>::infinity()};
  EXPECT_EQ(describeNonFinite(DType::F64, f64.data(), f64.size()),
            "1 NaN, 1 -inf of 3 values");
  // f16: 0x7c00 +inf, 0xfc00 -inf, 0x7e00 NaN, 0x3c00 1.0, 0x7bff the
  // largest finite value.
  std::vector<uint16_t> f16 = {0x7c00, 0xfc00, 0x7e00, 0x3c00, 0x7bff};
  EXPECT_EQ(describeNonFinite(DType::F16, f16.data(), f16.size()),
            "1 NaN, 1 +inf, 1 -inf of 5 values");
  // bf16: 0x7f80 +inf, 0x7fc0 NaN, 0x7f7f the largest finite value, 0x3f80
  // 1.0.
  std::vector<uint16_t> bf16 = {0x7f80, 0x7fc0, 0x7f7f, 0x3f80};
  EXPECT_EQ(describeNonFinite(DType::BF16, bf16.data(), bf16.size()),
            "1 NaN, 1 +inf of 4 values");
  // Finite, or not a float type: nothing to say.
  EXPECT_EQ(describeNonFinite(DType::F32, f32.data(), 1), "");
  std::vector<int32_t> ints = {0x7f800000, -1};
  EXPECT_EQ(describeNonFinite(DType::I32, ints.data(), ints.size()), "");
}

TEST(StepIO, CopiesAndZerosAcrossPieces) {
  // Sizes around the 4 MiB piece, with a tail; one buffer to zero.
  std::vector<size_t> sizes = {(9 << 20) + 13, 5, (4 << 20), 1 << 20};
  std::vector<std::vector<char>> from, to;
  std::vector<HostCopy> copies;
  for (size_t k = 0; k < sizes.size(); ++k) {
    from.emplace_back(sizes[k]);
    to.emplace_back(sizes[k], char(0x5a));
    for (size_t i = 0; i < sizes[k]; ++i)
      from[k][i] = char(i * 31 + k);
    copies.push_back({to[k].data(), k == 3 ? nullptr : from[k].data(),
                      static_cast<int64_t>(sizes[k])});
  }
  copyOnThreads(copies);
  for (size_t k = 0; k < 3; ++k)
    EXPECT_EQ(std::memcmp(to[k].data(), from[k].data(), sizes[k]), 0) << k;
  EXPECT_EQ(std::count(to[3].begin(), to[3].end(), 0),
            static_cast<std::ptrdiff_t>(sizes[3]));
  copyOnThreads({}); // nothing to do
}

TEST(StepIO, HostBlockThatCannotBeAllocatedIsNamed) {
  // 2^60 bytes of parameters: more than any address space holds. The
  // error names the whole block, not its first buffer.
  StepSignature signature;
  signature.name = "huge";
  TensorInfo param;
  param.role = Role::Param;
  param.shape = {int64_t(1) << 58};
  signature.args.push_back(param);
  TensorInfo loss;
  loss.role = Role::Loss;
  signature.results.push_back(loss);
  PackedStep step(signature, /*cuda=*/false);
  std::string error;
  EXPECT_FALSE(step.setInputs({NpyArray()}, error));
  // The parameter, the loss at 64 bytes, in whole huge pages.
  int64_t huge = gaccrt_huge_page_bytes();
  int64_t block = ((int64_t(1) << 60) + 64 + huge - 1) / huge * huge;
  EXPECT_EQ(error, "cannot allocate " + std::to_string(block) +
                       " bytes for the 2 arguments and results of 'huge'");
}

} // namespace
