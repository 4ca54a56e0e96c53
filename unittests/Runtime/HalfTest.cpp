//===- HalfTest.cpp - bf16 and f16 conversions ----------------------------===//

#include "gaccrt/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {

TEST(Half, BF16RoundsToNearestEven) {
  EXPECT_EQ(gaccrt_f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(gaccrt_f32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(gaccrt_f32_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(gaccrt_f32_to_bf16(-0.0f), 0x8000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(gaccrt_f32_to_bf16(1.00390625f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
  EXPECT_EQ(gaccrt_f32_to_bf16(1.01171875f), 0x3f82);
  // Just above halfway rounds up.
  EXPECT_EQ(gaccrt_f32_to_bf16(gaccrt_f32_from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(gaccrt_f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(gaccrt_f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_TRUE(std::isnan(gaccrt_bf16_to_f32(
      gaccrt_f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits in the low bits must not become infinity.
  EXPECT_TRUE(std::isnan(gaccrt_bf16_to_f32(
      gaccrt_f32_to_bf16(gaccrt_f32_from_bits(0x7f800001u)))));
}

TEST(Half, BF16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float value = gaccrt_bf16_to_f32(uint16_t(bits));
    uint16_t back = gaccrt_f32_to_bf16(value);
    if (std::isnan(value))
      EXPECT_TRUE(std::isnan(gaccrt_bf16_to_f32(back)));
    else
      EXPECT_EQ(back, bits) << std::hex << bits;
  }
}

TEST(Half, F16KnownValues) {
  EXPECT_EQ(gaccrt_f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(gaccrt_f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(gaccrt_f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(gaccrt_f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(gaccrt_f32_to_f16(65520.0f), 0x7c00); // rounds to infinity
  EXPECT_EQ(gaccrt_f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(gaccrt_f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(gaccrt_f32_to_f16(std::ldexp(1.0f, -25)), 0x0000); // tie to even
  EXPECT_EQ(gaccrt_f32_to_f16(std::ldexp(3.0f, -25)), 0x0002); // tie to even
  EXPECT_EQ(gaccrt_f32_to_f16(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(gaccrt_f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(gaccrt_f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(gaccrt_f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(
      gaccrt_f16_to_f32(gaccrt_f32_to_f16(gaccrt_f32_from_bits(0x7f800001u)))));
}

TEST(Half, F16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float value = gaccrt_f16_to_f32(uint16_t(bits));
    uint16_t back = gaccrt_f32_to_f16(value);
    if (std::isnan(value))
      EXPECT_TRUE(std::isnan(gaccrt_f16_to_f32(back)));
    else
      EXPECT_EQ(back, bits) << std::hex << bits;
  }
}

#ifdef __FLT16_MAX__
// Against the compiler's own _Float16 rounding on a sweep of f32 patterns.
TEST(Half, F16MatchesCompilerRounding) {
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4093) {
    float value = gaccrt_f32_from_bits(uint32_t(bits));
    if (std::isnan(value))
      continue;
    _Float16 reference = static_cast<_Float16>(value);
    uint16_t referenceBits;
    std::memcpy(&referenceBits, &reference, sizeof(referenceBits));
    ASSERT_EQ(gaccrt_f32_to_f16(value), referenceBits)
        << std::hex << "f32 bits " << bits;
  }
}
#endif

} // namespace
