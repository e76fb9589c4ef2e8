// Weight block layouts of the GGUF/ggml quantized types Troupe reads.
//
// Each struct is the exact byte image of one block as stored in a file
// (little-endian, no padding; Troupe assumes a little-endian host); fp16
// fields are raw binary16 bits (half.h).
// The code never casts file bytes to these structs: blocks are copied out
// with memcpy or read with unaligned SIMD loads, so weight data needs no
// particular alignment. The formulas next to each struct are the values
// dequantize() produces; they match ggml's dequantize_row_*.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace troupe {

constexpr int kQk = 32;    // values per Q4_0 / Q4_1 / Q5_0 / Q8_0 block
constexpr int kQkK = 256;  // values per K-quant super-block

// Q4_0: x[j] = d * ((qs[j] & 15) - 8), x[j + 16] = d * ((qs[j] >> 4) - 8).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQk / 2];
};

// Q4_1: x[j] = d * (qs[j] & 15) + m, x[j + 16] = d * (qs[j] >> 4) + m.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQk / 2];
};

// Q5_0: 5-bit values, low nibbles as in Q4_0 and the fifth bits in qh (bit j
// of the little-endian uint32 is value j's): x[j] = d * ((qs[j] & 15 |
// bit j << 4) - 16), x[j + 16] = d * ((qs[j] >> 4 | bit (j + 16) << 4) - 16).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQk / 2];
};

// Q8_0: x[j] = d * qs[j].
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQk];
};

// Q4_K: 8 sub-blocks of 32 values, each with a 6-bit scale sc[i] and 6-bit
// min m[i] packed into 12 bytes (UnpackQ4KScales). Sub-blocks 2c and 2c+1
// share qs[32c .. 32c+31]: x[64c + l] = d*sc[2c]*(qs[32c+l] & 15) - dmin*m[2c],
// x[64c + 32 + l] = d*sc[2c+1]*(qs[32c+l] >> 4) - dmin*m[2c+1], l in [0, 32).
struct BlockQ4K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQkK / 2];
};

// Q5_K: Q4_K with a fifth bit per value: scales as Q4_K; for c in [0, 4) and
// l in [0, 32), x[64c + l] = d*sc[2c]*((qs[32c+l] & 15) + 16 * (qh[l] >> 2c & 1))
// - dmin*m[2c], x[64c + 32 + l] = d*sc[2c+1]*((qs[32c+l] >> 4) + 16 *
// (qh[l] >> (2c+1) & 1)) - dmin*m[2c+1].
struct BlockQ5K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQkK / 8];
  uint8_t qs[kQkK / 2];
};

// Q6_K: 6-bit values q in [0, 64) stored as a low nibble (ql) and two high
// bits (qh); 16 signed 8-bit scales, one per 16 values: x[i] =
// d * scales[i / 16] * (q[i] - 32). For half h (128 values) and l in [0, 32),
// with L = ql + 64h and H = qh + 32h:
//   q[128h + l]      = (L[l] & 15)      | ((H[l] >> 0) & 3) << 4
//   q[128h + 32 + l] = (L[l + 32] & 15) | ((H[l] >> 2) & 3) << 4
//   q[128h + 64 + l] = (L[l] >> 4)      | ((H[l] >> 4) & 3) << 4
//   q[128h + 96 + l] = (L[l + 32] >> 4) | ((H[l] >> 6) & 3) << 4
struct BlockQ6K {
  uint8_t ql[kQkK / 2];
  uint8_t qh[kQkK / 4];
  int8_t scales[kQkK / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block is 18 bytes");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block is 20 bytes");
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block is 22 bytes");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block is 34 bytes");
static_assert(sizeof(BlockQ4K) == 144, "Q4_K block is 144 bytes");
static_assert(sizeof(BlockQ5K) == 176, "Q5_K block is 176 bytes");
static_assert(sizeof(BlockQ6K) == 210, "Q6_K block is 210 bytes");
static_assert(offsetof(BlockQ6K, d) == 208, "Q6_K d is last");

// Q4_K scale packing, with s = scales[12] viewed as bytes:
//   i < 4:  sc[i] = s[i] & 63,                         m[i] = s[i + 4] & 63
//   i >= 4: sc[i] = (s[i + 4] & 15) | (s[i - 4] >> 6) << 4,
//           m[i]  = (s[i + 4] >> 4) | (s[i] >> 6) << 4
// Word-parallel form, w0..w2 = the three little-endian 32-bit words of s:
// returns the 8 scales (resp. mins) as the bytes of a little-endian uint64.
inline void UnpackQ4KScalesPacked(const uint8_t s[12], uint64_t* sc, uint64_t* m) {
  uint32_t w[3];
  std::memcpy(w, s, sizeof w);
  const uint32_t sc_lo = w[0] & 0x3F3F3F3Fu;
  const uint32_t m_lo = w[1] & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (w[2] & 0x0F0F0F0Fu) | ((w[0] >> 6) & 0x03030303u) << 4;
  const uint32_t m_hi = ((w[2] >> 4) & 0x0F0F0F0Fu) | ((w[1] >> 6) & 0x03030303u) << 4;
  *sc = sc_lo | static_cast<uint64_t>(sc_hi) << 32;
  *m = m_lo | static_cast<uint64_t>(m_hi) << 32;
}

inline void UnpackQ4KScales(const uint8_t s[12], uint8_t sc[8], uint8_t m[8]) {
  uint64_t sc8, m8;
  UnpackQ4KScalesPacked(s, &sc8, &m8);
  for (int k = 0; k < 8; ++k) {
    sc[k] = static_cast<uint8_t>(sc8 >> (8 * k));
    m[k] = static_cast<uint8_t>(m8 >> (8 * k));
  }
}

}  // namespace troupe
