// fp16 / bf16 <-> fp32 conversions: exhaustive widening, rounding edge cases,
// and (where the CPU has them) agreement with the hardware conversions.

#include "pipeline/quant/half.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <limits>

namespace troupe {
namespace {

float Pow2(int e) { return std::ldexp(1.0f, e); }

TEST(HalfTest, Fp16ToFp32KnownValues) {
  EXPECT_EQ(Fp16ToFp32(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(Fp16ToFp32(0x8000)));
  EXPECT_EQ(Fp16ToFp32(0x3C00), 1.0f);
  EXPECT_EQ(Fp16ToFp32(0xC000), -2.0f);
  EXPECT_EQ(Fp16ToFp32(0x3555), 0.25f + 0x155 * Pow2(-12));  // 0.33325195
  EXPECT_EQ(Fp16ToFp32(0x7BFF), 65504.0f);
  EXPECT_EQ(Fp16ToFp32(0x0400), Pow2(-14));            // smallest normal
  EXPECT_EQ(Fp16ToFp32(0x0001), Pow2(-24));            // smallest subnormal
  EXPECT_EQ(Fp16ToFp32(0x03FF), 1023.0f * Pow2(-24));  // largest subnormal
  EXPECT_EQ(Fp16ToFp32(0x8201), -513.0f * Pow2(-24));
  EXPECT_EQ(Fp16ToFp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Fp16ToFp32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Fp16ToFp32(0x7E00)));
  EXPECT_TRUE(std::isnan(Fp16ToFp32(0x7C01)));  // signalling NaN stays NaN
  EXPECT_TRUE(std::isnan(Fp16ToFp32(0xFFFF)));
}

// Every binary16 value: exact by construction (sign * mantissa * 2^exp) and
// back again unchanged.
TEST(HalfTest, Fp16ExhaustiveRoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = Fp16ToFp32(static_cast<uint16_t>(h));
    const uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    if (exp == 0x1F) {
      EXPECT_EQ(std::isnan(f), mant != 0) << h;
      if (mant != 0) continue;
    } else {
      const float mag = exp == 0 ? std::ldexp(static_cast<float>(mant), -24)
                                 : std::ldexp(static_cast<float>(mant | 0x400), int(exp) - 25);
      ASSERT_EQ(f, (h & 0x8000) ? -mag : mag) << h;
    }
    ASSERT_EQ(Fp32ToFp16(f), h) << h;
  }
}

TEST(HalfTest, Fp32ToFp16Rounding) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Fp32ToFp16(65504.0f), 0x7BFF);
  EXPECT_EQ(Fp32ToFp16(65519.99f), 0x7BFF);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7C00);  // tie rounds to even = overflow
  EXPECT_EQ(Fp32ToFp16(1e10f), 0x7C00);
  EXPECT_EQ(Fp32ToFp16(-inf), 0xFC00);
  EXPECT_EQ(Fp32ToFp16(-0.0f), 0x8000);
  EXPECT_EQ(Fp32ToFp16(1.0f + Pow2(-11)), 0x3C00);      // tie, even stays
  EXPECT_EQ(Fp32ToFp16(1.0f + 3 * Pow2(-11)), 0x3C02);  // tie, odd rounds up
  EXPECT_EQ(Fp32ToFp16(1.0f + Pow2(-11) + Pow2(-20)), 0x3C01);
  EXPECT_EQ(Fp32ToFp16(Pow2(-25)), 0x0000);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(Fp32ToFp16(std::nextafter(Pow2(-25), 1.0f)), 0x0001);
  EXPECT_EQ(Fp32ToFp16(3 * Pow2(-25)), 0x0002);          // 1.5 ulp: tie to even
  EXPECT_EQ(Fp32ToFp16(5 * Pow2(-25)), 0x0002);          // 2.5 ulp: tie to even
  EXPECT_EQ(Fp32ToFp16(Pow2(-14) - Pow2(-25)), 0x0400);  // rounds up into the normals
  EXPECT_EQ(Fp32ToFp16(Pow2(-30)), 0x0000);
  EXPECT_EQ(Fp32ToFp16(-Pow2(-30)), 0x8000);
  EXPECT_EQ(Fp32ToFp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  const uint16_t nan = Fp32ToFp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  // A NaN whose payload lies only in the low bits must not become inf.
  EXPECT_NE(Fp32ToFp16(BitsToFloat(0x7F800001u)) & 0x03FF, 0);
}

#if defined(__F16C__)
// The F16C instructions are the hardware reference for binary16 rounding.
TEST(HalfTest, Fp32ToFp16MatchesF16C) {
  for (uint64_t u = 0; u < (1ull << 32); u += 997) {
    const float f = BitsToFloat(static_cast<uint32_t>(u));
    const uint16_t hw = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
    const uint16_t sw = Fp32ToFp16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(Fp16ToFp32(sw))) << u;
    } else {
      ASSERT_EQ(sw, hw) << "bits " << u;
    }
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float hw = _cvtsh_ss(static_cast<uint16_t>(h));
    const float sw = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      ASSERT_TRUE(std::isnan(sw));
    } else {
      ASSERT_EQ(FloatBits(sw), FloatBits(hw)) << h;
    }
  }
}
#endif

TEST(HalfTest, Bf16Conversions) {
  EXPECT_EQ(Bf16ToFp32(0x3F80), 1.0f);
  EXPECT_EQ(Bf16ToFp32(0xC040), -3.0f);
  EXPECT_EQ(Bf16ToFp32(0x0001), BitsToFloat(0x00010000u));  // subnormal, exact
  EXPECT_EQ(Bf16ToFp32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Bf16ToFp32(0x7FC0)));
  EXPECT_EQ(Fp32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(Fp32ToBf16(1.0f + Pow2(-8)), 0x3F80);      // tie, even stays
  EXPECT_EQ(Fp32ToBf16(1.0f + 3 * Pow2(-8)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(Fp32ToBf16(1.0f + Pow2(-8) + Pow2(-20)), 0x3F81);
  EXPECT_EQ(Fp32ToBf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
  EXPECT_EQ(Fp32ToBf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(Fp32ToBf16(-0.0f), 0x8000);
  EXPECT_EQ(Fp32ToBf16(BitsToFloat(0x00018000u)), 0x0002);                    // subnormal tie to even
  EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(BitsToFloat(0x7F800001u)))));  // low-payload NaN
  EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = Bf16ToFp32(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(Fp32ToBf16(f), b) << b;
  }
}

#if defined(__AVX512BF16__) && defined(__AVX512VL__)
// VCVTNEPS2BF16 rounds to nearest even (it flushes subnormals, so compare
// normal inputs only).
TEST(HalfTest, Fp32ToBf16MatchesAvx512Bf16) {
  for (uint64_t u = 0; u < (1ull << 32); u += 997) {
    const float f = BitsToFloat(static_cast<uint32_t>(u));
    if (std::isnan(f) || std::fpclassify(f) == FP_SUBNORMAL) continue;
    const __m128bh v = _mm_cvtneps_pbh(_mm_set1_ps(f));
    uint16_t hw;
    std::memcpy(&hw, &v, sizeof hw);
    ASSERT_EQ(Fp32ToBf16(f), hw) << "bits " << u;
  }
}
#endif

}  // namespace
}  // namespace troupe
