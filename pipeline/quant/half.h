// Exact conversions between fp32 and the two 16-bit float encodings found in
// model files: IEEE binary16 ("fp16", ggml_fp16_t) and bfloat16 ("bf16").
//
// Widening (16 -> 32 bits) is exact for every input, subnormals included; NaN
// stays NaN with its payload and the quiet bit set. Narrowing (32 -> 16 bits)
// rounds to nearest, ties to even, overflows to +-inf and keeps NaN a (quiet)
// NaN. All functions are pure integer code: they do not depend on the
// floating-point environment (rounding mode, FTZ/DAZ) and are thread-safe.
#pragma once

#include <cstdint>
#include <cstring>

namespace troupe {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// binary16 -> fp32, exact.
inline float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) {  // inf / NaN
    const uint32_t quiet = mant != 0 ? 0x00400000u : 0u;
    return BitsToFloat(sign | 0x7F800000u | quiet | (mant << 13));
  }
  if (exp != 0) return BitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return BitsToFloat(sign);
  // Subnormal: mant * 2^-24. Normalise so the leading one becomes implicit.
  int e = 113;  // exponent field the value would have if mant had bit 10 set
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return BitsToFloat(sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3FFu) << 13));
}

// fp32 -> binary16, round to nearest even.
inline uint16_t Fp32ToFp16(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) {  // NaN: keep the top payload bits, force quiet
    return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  }
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to inf (or is inf)
  if (a >= 0x38800000u) {                       // normal binary16 range (>= 2^-14)
    uint32_t q = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x3FFu);
    const uint32_t rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;  // carry may bump the exponent
    return static_cast<uint16_t>(sign | q);
  }
  // Subnormal (or zero) binary16: value / 2^-24 = m * 2^(e - 126) with m the
  // 24-bit significand. Shift right by 126 - e and round to nearest even.
  const uint32_t e = a >> 23;
  const int shift = 126 - static_cast<int>(e);
  if (e == 0 || shift > 24) return sign;  // below half the smallest subnormal
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may become the smallest normal
  return static_cast<uint16_t>(sign | q);
}

// bfloat16 -> fp32, exact (bf16 is the top half of an fp32).
inline float Bf16ToFp32(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

// fp32 -> bfloat16, round to nearest even.
inline uint16_t Fp32ToBf16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace troupe
