// Activation quantization (activations.h) against ggml's formulas, bit for
// bit: the expected bytes are computed here, independently, from the
// definitions of ggml's quantize_row_q8_0 / q8_1 (x86) and
// quantize_row_q8_K_ref — rounding with ggml's own magic-number trick and
// fp16 with the compiler's _Float16 rather than the code under test — and
// must equal what QuantizeActRow (AVX-512 when built) and
// QuantizeActRowScalar write, in every layout.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "pipeline/quant/activations.h"

namespace troupe {
namespace {

// ggml's nearest_int: round half to even for |v| < 2^22.
int NearestInt(float v) {
  const float t = v + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &t, sizeof i);
  return (i & 0x007FFFFF) - 0x00400000;
}

float Half(float v) { return static_cast<float>(static_cast<_Float16>(v)); }

// ggml Q8_0 / Q8_1 block of 32.
struct Block32 {
  int8_t q[32];
  float d;  // fp16(amax / 127), widened
  float s;  // Q8_1: fp16(fp32 d * sum(q))
  int sum;
};

Block32 Reference32(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  Block32 b{};
  for (int j = 0; j < 32; ++j) {
    b.q[j] = static_cast<int8_t>(NearestInt(x[j] * id));
    b.sum += b.q[j];
  }
  b.d = Half(d);
  b.s = Half(d * static_cast<float>(b.sum));
  return b;
}

// ggml Q8_K super-block of 256 (quantize_row_q8_K_ref).
struct Block256 {
  int8_t q[256];
  int16_t bsums[16];
  float d;
};

Block256 Reference256(const float* x) {
  Block256 b{};
  float max = 0.0f, amax = 0.0f;
  for (int j = 0; j < 256; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax == 0.0f) return b;
  const float iscale = -127.0f / max;
  for (int j = 0; j < 256; ++j) {
    b.q[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * x[j])));
  }
  for (int i = 0; i < 16; ++i) {
    int s = 0;
    for (int j = 0; j < 16; ++j) s += b.q[16 * i + j];
    b.bsums[i] = static_cast<int16_t>(s);
  }
  b.d = 1.0f / iscale;
  return b;
}

// The expected image of one row in `layout` (padding zero).
std::vector<uint8_t> ExpectedRow(ActLayout layout, const float* x, int64_t cols) {
  std::vector<uint8_t> out(ActRowBytes(layout, cols), 0);
  if (layout == ActLayout::kQ8x2) {
    for (int64_t b = 0; b < cols / 32; ++b) {
      const Block32 r = Reference32(x + 32 * b);
      auto& g = reinterpret_cast<ActGroupQ8x2*>(out.data())[b / 2];
      const int k = static_cast<int>(b % 2);
      std::memcpy(g.q + 32 * k, r.q, 32);
      g.d[k] = r.d;
      g.s[k] = r.s;
      g.corr[k] = 128 * r.sum;
    }
    return out;
  }
  for (int64_t b = 0; b < cols / 256; ++b) {
    const Block256 r = Reference256(x + 256 * b);
    auto& blk = reinterpret_cast<ActBlockQ8K*>(out.data())[b];
    for (int v = 0; v < 256; ++v) {
      int at = v;
      if (layout == ActLayout::kQ8KPaired) {  // value 128h + 64a + 32b + l at 128h + 64b + 32a + l
        const int h = v / 128, a = (v / 64) % 2, bb = (v / 32) % 2, l = v % 32;
        at = 128 * h + 64 * bb + 32 * a + l;
      }
      blk.q[at] = r.q[v];
    }
    for (int i = 0; i < 16; ++i) blk.bsum16[i] = r.bsums[i];
    for (int i = 0; i < 8; ++i) {
      blk.bsum32[i] = static_cast<int16_t>(r.bsums[2 * i] + r.bsums[2 * i + 1]);
    }
    blk.d = r.d;
  }
  return out;
}

// Rows exercising the corners of the formulas, then random rows whose scales
// span 10^-6 .. 10^3 with outliers.
std::vector<float> TestRows(int64_t n, int64_t cols) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(-6.0f, 3.0f);
  std::uniform_int_distribution<int64_t> col(0, cols - 1);
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (int64_t t = 0; t < n; ++t) {
    const float scale = std::pow(10.0f, uni(rng));
    for (int64_t c = 0; c < cols; ++c) x[t * cols + c] = scale * normal(rng);
    for (int k = 0; k < 3; ++k) x[t * cols + col(rng)] *= 40.0f;
  }
  float* r = x.data();
  std::fill(r, r + 256, 0.0f);  // row 0: a zero block / super-block
  r += cols;                    // row 1: exact .5 ties (id = 1 or -1)
  for (int j = 0; j < 256; ++j) r[j] = static_cast<float>(j % 64) - 31.5f;
  r[0] = 127.0f;  // amax 127 in every 32-block:
  for (int b = 32; b < 256; b += 32) r[b] = b % 64 ? -127.0f : 127.0f;
  for (int row = 2; row <= 3; ++row) {  // rows 2, 3: q8_K max ties
    r += cols;
    for (int j = 0; j < 256; ++j) r[j] = 0.1f * normal(rng);
    r[3] = row == 2 ? 9.0f : -9.0f;  // the first of +-9 sets the sign
    r[7] = -r[3];
  }
  r += cols;  // row 4: fp16-subnormal scales
  for (int j = 0; j < 256; ++j) r[j] = 1e-6f * normal(rng);
  r += cols;  // row 5: tiny but finite 127 / amax
  for (int j = 0; j < 256; ++j) r[j] = 1e-33f * normal(rng);
  r += cols;  // row 6: one nonzero value per block
  std::fill(r, r + cols, 0.0f);
  for (int64_t j = 5; j < cols; j += 32) r[j] = -3.25f;
  return x;
}

TEST(ActivationsTest, QuantizationMatchesGgmlFormulasBitForBit) {
  const int64_t n = 24;
  for (ActLayout layout : {ActLayout::kQ8x2, ActLayout::kQ8K, ActLayout::kQ8KPaired}) {
    for (int64_t cols : {256, 1536, 2816}) {  // 2816 = 88 blocks: partial groups of 4
      const std::vector<float> x = TestRows(n, cols);
      const int64_t bytes = ActRowBytes(layout, cols);
      std::vector<uint8_t> buf(bytes + 64);
      uint8_t* dst = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
      for (int64_t t = 0; t < n; ++t) {
        const std::vector<uint8_t> expected = ExpectedRow(layout, &x[t * cols], cols);
        for (bool simd : {false, true}) {
          std::memset(dst, 0xA5, bytes);
          if (simd) {
            QuantizeActRow(layout, &x[t * cols], cols, dst);
          } else {
            QuantizeActRowScalar(layout, &x[t * cols], cols, dst);
          }
          int64_t first = -1;
          for (int64_t i = 0; i < bytes && first < 0; ++i) {
            if (dst[i] != expected[i]) first = i;
          }
          EXPECT_EQ(first, -1) << "layout " << static_cast<int>(layout) << " cols " << cols << " row " << t
                               << (simd ? " (QuantizeActRow)" : " (scalar)") << ": first differing byte " << first;
        }
      }
    }
  }
}

// What the kernels rely on: every value is within half a step of q * d_used
// plus the fp16 rounding of the scale, |x - q d16| <= d/2 + 127 |d16 - d|.
TEST(ActivationsTest, QuantizationErrorIsHalfAStepPlusScaleRounding) {
  const int64_t cols = 1024;
  const std::vector<float> x = TestRows(16, cols);
  for (ActLayout layout : {ActLayout::kQ8x2, ActLayout::kQ8K, ActLayout::kQ8KPaired}) {
    std::vector<uint8_t> buf(ActRowBytes(layout, cols) + 64);
    uint8_t* dst = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    for (int64_t t = 0; t < 16; ++t) {
      const float* xr = &x[t * cols];
      QuantizeActRow(layout, xr, cols, dst);
      const int64_t bv = ActGroupValues(layout) == 256 ? 256 : 32;
      for (int64_t j = 0; j < cols; ++j) {
        int q = 0;
        float d_used = 0;
        if (layout == ActLayout::kQ8x2) {
          const auto& g = reinterpret_cast<const ActGroupQ8x2*>(dst)[j / 64];
          q = g.q[j % 64];
          d_used = g.d[(j % 64) / 32];
        } else {
          const auto& b = reinterpret_cast<const ActBlockQ8K*>(dst)[j / 256];
          int v = static_cast<int>(j % 256);
          if (layout == ActLayout::kQ8KPaired) {  // swap the middle two 32-value runs
            const int in = v % 128, run = in / 32;
            v = v - in + (run == 1 ? 64 : run == 2 ? 32 : 32 * run) + in % 32;
          }
          q = b.q[v];
          d_used = b.d;
        }
        float amax = 0.0f;
        const int64_t b0 = j / bv * bv;
        for (int64_t i = b0; i < b0 + bv; ++i) amax = std::max(amax, std::fabs(xr[i]));
        const double d = amax / 127.0;
        const double bound = (d / 2 + 127 * std::fabs(std::fabs(d_used) - d)) * (1 + 1e-5) + 1e-45;
        ASSERT_LE(std::abs(q), 127);
        ASSERT_LE(std::fabs(xr[j] - double(q) * d_used), bound)
            << "layout " << static_cast<int>(layout) << " row " << t << " col " << j;
      }
    }
  }
}

// BuildActPairs lays block b of rows 2k and 2k + 1 side by side with their d
// spread over eight lanes each, the per-lane corrections 128 * (sum of four
// values), and the s of each octet of rows; a row past n (odd n) and the
// octet's rows past n are zeros, and nothing is written past the buffer.
TEST(ActivationsTest, BuildActPairsLaysRowPairsSideBySide) {
  const int64_t n = 9, cols = 160;  // 5 blocks: the last group half full; 5 pairs, the last half empty
  const std::vector<float> x = TestRows(n, cols);
  const int64_t stride = ActRowBytes(ActLayout::kQ8x2, cols);
  std::vector<uint8_t> buf(n * stride + 64);
  uint8_t* xq = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
  for (int64_t t = 0; t < n; ++t) QuantizeActRow(ActLayout::kQ8x2, &x[t * cols], cols, xq + t * stride);
  const int64_t blocks = 5;
  ASSERT_EQ(ActPairsBytes(n, cols), 5 * blocks * 192 + 2 * blocks * 8 * 4);
  std::vector<uint8_t> pbuf(ActPairsBytes(n, cols) + 128, 0xAB);
  uint8_t* dst = pbuf.data() + (64 - reinterpret_cast<uintptr_t>(pbuf.data()) % 64) % 64;
  BuildActPairs(xq, stride, n, cols, dst);
  const auto* pairs = reinterpret_cast<const ActPairBlock*>(dst);
  const float* octets = reinterpret_cast<const float*>(dst) + ActPairsOctetOffset(n, cols);
  for (int64_t t = 0; t < 10; ++t) {
    for (int64_t b = 0; b < blocks; ++b) {
      const ActPairBlock& p = pairs[(t / 2) * blocks + b];
      const int h = static_cast<int>(t % 2);
      const auto* g = t < n ? reinterpret_cast<const ActGroupQ8x2*>(xq + t * stride) + b / 2 : nullptr;
      for (int v = 0; v < 32; ++v) {
        EXPECT_EQ(p.q[32 * h + v], g ? g->q[32 * (b % 2) + v] : 0) << "row " << t << " block " << b;
      }
      for (int lane = 0; lane < 8; ++lane) {
        EXPECT_EQ(p.d[8 * h + lane], g ? g->d[b % 2] : 0.0f) << "row " << t << " block " << b;
        int32_t sum = 0;
        for (int v = 0; v < 4; ++v) sum += g ? g->q[32 * (b % 2) + 4 * lane + v] : 0;
        EXPECT_EQ(p.corr[8 * h + lane], 128 * sum) << "row " << t << " block " << b << " lane " << lane;
      }
    }
  }
  for (int64_t t = 0; t < 16; ++t) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float want = t < n ? (reinterpret_cast<const ActGroupQ8x2*>(xq + t * stride) + b / 2)->s[b % 2] : 0.0f;
      EXPECT_EQ(octets[((t / 8) * blocks + b) * 8 + t % 8], want) << "row " << t << " block " << b;
    }
  }
  EXPECT_EQ(dst[ActPairsBytes(n, cols)], 0xAB);  // nothing written past the buffer
}

}  // namespace
}  // namespace troupe
