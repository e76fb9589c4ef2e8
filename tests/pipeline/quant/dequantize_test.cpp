// dequantize(): hand-packed blocks with known values for every type. The
// expected values come from each format's formula written out here, with
// scales chosen so every product is exact in fp32.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "pipeline/quant/blocks.h"
#include "pipeline/quant/half.h"
#include "pipeline/quant/qmatrix.h"

namespace troupe {
namespace {

template <class Block>
std::vector<uint8_t> Bytes(const Block& b) {
  std::vector<uint8_t> out(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  return out;
}

std::vector<float> Dequantize(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), -12345.0f);
  dequantize(type, bytes.data(), out.data(), n);
  return out;
}

TEST(DequantizeTest, F32F16Bf16) {
  const float f[3] = {1.5f, -0.0f, 3.0e-41f};
  std::vector<uint8_t> b(sizeof f);
  std::memcpy(b.data(), f, sizeof f);
  EXPECT_EQ(Dequantize(GgmlType::F32, b, 3), std::vector<float>(f, f + 3));

  const uint16_t h[4] = {0x3C00, 0xC100, 0x0001, 0x7BFF};
  std::vector<uint8_t> hb(sizeof h);
  std::memcpy(hb.data(), h, sizeof h);
  EXPECT_EQ(Dequantize(GgmlType::F16, hb, 4), (std::vector<float>{1.0f, -2.5f, std::ldexp(1.0f, -24), 65504.0f}));
  const uint16_t bf[3] = {0x3F80, 0xC020, 0x4049};
  std::vector<uint8_t> bb(sizeof bf);
  std::memcpy(bb.data(), bf, sizeof bf);
  EXPECT_EQ(Dequantize(GgmlType::BF16, bb, 3), (std::vector<float>{1.0f, -2.5f, 3.140625f}));
}

TEST(DequantizeTest, Q4_0) {
  BlockQ4_0 b;
  b.d = Fp32ToFp16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const std::vector<float> y = Dequantize(GgmlType::Q4_0, Bytes(b), 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8)) << j;
    EXPECT_EQ(y[j + 16], 0.5f * (7 - j)) << j;
  }
}

TEST(DequantizeTest, Q4_1) {
  BlockQ4_1 b;
  b.d = Fp32ToFp16(0.25f);
  b.m = Fp32ToFp16(-1.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((15 - j) | j << 4);
  const std::vector<float> y = Dequantize(GgmlType::Q4_1, Bytes(b), 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * (15 - j) - 1.5f) << j;
    EXPECT_EQ(y[j + 16], 0.25f * j - 1.5f) << j;
  }
}

TEST(DequantizeTest, Q8_0TwoBlocks) {
  BlockQ8_0 b[2];
  b[0].d = Fp32ToFp16(0.125f);
  b[1].d = Fp32ToFp16(-3.0f);
  for (int j = 0; j < 32; ++j) {
    b[0].qs[j] = static_cast<int8_t>(8 * j - 128);  // -128 .. 120
    b[1].qs[j] = static_cast<int8_t>(127 - j);
  }
  std::vector<uint8_t> bytes(sizeof b);
  std::memcpy(bytes.data(), b, sizeof b);
  const std::vector<float> y = Dequantize(GgmlType::Q8_0, bytes, 64);
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(y[j], 0.125f * (8 * j - 128)) << j;
    EXPECT_EQ(y[32 + j], -3.0f * (127 - j)) << j;
  }
}

// Packs 6-bit scales and mins as the Q4_K format describes: the low 6 bits of
// sub-blocks 0..3 in bytes 0..3 (scales) and 4..7 (mins); for sub-blocks
// 4..7 the low 4 bits go to bytes 8..11 (scale low nibble, min high nibble)
// and the top 2 bits to bits 6-7 of bytes 0..3 (scales) / 4..7 (mins).
void PackQ4KScales(const int sc[8], const int m[8], uint8_t out[12]) {
  for (int i = 0; i < 4; ++i) {
    out[i] = static_cast<uint8_t>((sc[i] & 63) | (sc[i + 4] >> 4) << 6);
    out[i + 4] = static_cast<uint8_t>((m[i] & 63) | (m[i + 4] >> 4) << 6);
    out[i + 8] = static_cast<uint8_t>((sc[i + 4] & 15) | (m[i + 4] & 15) << 4);
  }
}

TEST(DequantizeTest, Q4KScalePackingRoundTrips) {
  std::vector<int> vals;
  for (int v = 0; v < 64; ++v) vals.push_back(v);
  for (int rot = 0; rot < 64; ++rot) {
    int sc[8], m[8];
    for (int i = 0; i < 8; ++i) {
      sc[i] = vals[(rot + 7 * i) % 64];
      m[i] = vals[(rot * 3 + 11 * i + 5) % 64];
    }
    uint8_t packed[12], usc[8], um[8];
    PackQ4KScales(sc, m, packed);
    UnpackQ4KScales(packed, usc, um);
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(usc[i], sc[i]) << rot << " " << i;
      ASSERT_EQ(um[i], m[i]) << rot << " " << i;
    }
  }
}

TEST(DequantizeTest, Q4K) {
  const int sc[8] = {1, 2, 63, 17, 40, 5, 33, 60};
  const int m[8] = {0, 3, 62, 9, 48, 63, 1, 20};
  const float d = 0.5f, dmin = 0.25f;
  BlockQ4K b;
  b.d = Fp32ToFp16(d);
  b.dmin = Fp32ToFp16(dmin);
  PackQ4KScales(sc, m, b.scales);
  int q[256];  // the 4-bit value of every element, in element order
  for (int i = 0; i < 256; ++i) q[i] = (i * 7 + i / 64) % 16;
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      b.qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | q[64 * c + 32 + l] << 4);
    }
  }
  const std::vector<float> y = Dequantize(GgmlType::Q4_K, Bytes(b), 256);
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32;
    EXPECT_EQ(y[i], d * sc[sub] * q[i] - dmin * m[sub]) << i;
  }
}

TEST(DequantizeTest, Q6K) {
  int8_t scales[16];
  for (int i = 0; i < 16; ++i) scales[i] = static_cast<int8_t>(i % 2 ? -9 * i : 8 * i + 1);
  scales[3] = -128;
  scales[4] = 127;
  const float d = 0.0625f;
  int q[256];  // 6-bit values 0..63 in element order
  for (int i = 0; i < 256; ++i) q[i] = (i * 13 + i / 16) % 64;
  BlockQ6K b;
  std::memset(&b, 0, sizeof b);
  // ql: low nibbles; element 128h + 32k + l uses ql[64h + l + 32 (k & 1)],
  // low nibble for k < 2, high for k >= 2; its top 2 bits sit at bit 2k of
  // qh[32h + l].
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) {
        const int v = q[128 * h + 32 * k + l];
        uint8_t& ql = b.ql[64 * h + l + 32 * (k & 1)];
        ql = static_cast<uint8_t>(ql | (k < 2 ? (v & 15) : (v & 15) << 4));
        b.qh[32 * h + l] = static_cast<uint8_t>(b.qh[32 * h + l] | (v >> 4) << (2 * k));
      }
    }
  }
  std::memcpy(b.scales, scales, sizeof scales);
  b.d = Fp32ToFp16(d);
  const std::vector<float> y = Dequantize(GgmlType::Q6_K, Bytes(b), 256);
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(y[i], d * scales[i / 16] * (q[i] - 32)) << i;
  }
}

}  // namespace
}  // namespace troupe
