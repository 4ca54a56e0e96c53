/*===- half.h - bf16 and f16 conversions ----------------------------------===*\
 *
 * Header-only conversions between f32 and the 16-bit float formats bf16
 * (bfloat16) and f16 (IEEE binary16), shared by the runtime's collectives and
 * the tools' .npy reader/writer. f32 -> 16-bit rounds to nearest even, keeps
 * infinities and signed zeros, maps NaN to a quiet NaN, and produces
 * subnormals and overflow to infinity as IEEE rounding does. Nothing here is
 * an exported symbol.
 *
\*===----------------------------------------------------------------------===*/

#ifndef GACCRT_HALF_H
#define GACCRT_HALF_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uint32_t gaccrt_f32_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static inline float gaccrt_f32_from_bits(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

static inline float gaccrt_bf16_to_f32(uint16_t value) {
  return gaccrt_f32_from_bits((uint32_t)value << 16);
}

static inline uint16_t gaccrt_f32_to_bf16(float value) {
  uint32_t bits = gaccrt_f32_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) /* NaN: keep sign, make it quiet */
    return (uint16_t)((bits >> 16) | 0x0040u);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)((bits + roundingBias) >> 16);
}

static inline float gaccrt_f16_to_f32(uint16_t value) {
  uint32_t sign = (uint32_t)(value & 0x8000u) << 16;
  uint32_t exponent = (value >> 10) & 0x1fu;
  uint32_t mantissa = value & 0x3ffu;
  if (exponent == 0x1fu) /* infinity or NaN */
    return gaccrt_f32_from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0)
      return gaccrt_f32_from_bits(sign);
    /* Subnormal: value = mantissa * 2^-24, exact in f32. */
    float magnitude = (float)mantissa * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return gaccrt_f32_from_bits(sign | ((exponent + 112u) << 23) |
                              (mantissa << 13));
}

static inline uint16_t gaccrt_f32_to_f16(float value) {
  uint32_t bits = gaccrt_f32_bits(value);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) /* NaN */
    return (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) /* rounds to >= 2^16: infinity */
    return (uint16_t)(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    /* Below the smallest normal f16 (2^-14): subnormal or zero. Scaling by
     * 2^24 makes the result's ULP 1; the float-to-int conversion below is
     * exact after rounding to nearest even. */
    float scaled = gaccrt_f32_from_bits(magnitude) * 16777216.0f;
    uint32_t integer = (uint32_t)scaled;
    float fraction = scaled - (float)integer;
    if (fraction > 0.5f || (fraction == 0.5f && (integer & 1u)))
      ++integer;
    return (uint16_t)(sign | integer);
  }
  /* Normal: rebias the exponent, round the 13 dropped bits to nearest even;
   * a carry into the exponent is the correct result. */
  uint32_t roundingBias = 0xfffu + ((magnitude >> 13) & 1u);
  magnitude = magnitude - 0x38000000u + roundingBias;
  return (uint16_t)(sign | (magnitude >> 13));
}

#ifdef __cplusplus
}
#endif

#endif /* GACCRT_HALF_H */
