// Tensors of every supported type, built here from chosen scales and quants,
// go through a GGUF file and come out of dequantize() (and
// QuantMatrix::DequantizeRow) as exactly the values the format's formula gives.
//
// The blocks are packed by this test's own encoders, and the expected floats
// computed from the chosen numbers in double precision. Every scale has few
// significant bits, so each expected value is exact in fp32 (checked), and any
// correct order of fp32 operations must reproduce it bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "pipeline/format/gguf_file.h"
#include "pipeline/quant/qmatrix.h"
#include "tests/pipeline/format/gguf_writer.h"

namespace troupe {
namespace {

namespace g = gguf_test;

// The value of fp16 bits `h`, decoded from the IEEE 754 definition.
double HalfValue(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  double v;
  if (exp == 0) {
    v = std::ldexp(mant, -24);  // zero or subnormal
  } else if (exp == 31) {
    v = mant == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else {
    v = std::ldexp(1024 + mant, exp - 25);
  }
  return sign ? -v : v;
}

// The fp16 bits of `x`, which must be exactly representable (not NaN).
uint16_t HalfBits(double x) {
  static const auto* table = [] {
    auto* t = new std::unordered_map<double, uint16_t>();
    for (uint32_t h = 0; h < 0x10000; ++h)
      if (!std::isnan(HalfValue(static_cast<uint16_t>(h)))) t->emplace(HalfValue(static_cast<uint16_t>(h)), h);
    return t;
  }();
  if (x == 0) return std::signbit(x) ? 0x8000 : 0;
  auto it = table->find(x);
  if (it == table->end()) {
    ADD_FAILURE() << x << " is not exact in fp16";
    return 0;
  }
  return it->second;
}

// `x` as a float, failing the test if that rounds: the expected values must be exact.
float Exact(double x) {
  const float f = static_cast<float>(x);
  if (static_cast<double>(f) != x) ADD_FAILURE() << "expected value " << x << " is not exact in fp32";
  return f;
}

void PutU16(std::vector<uint8_t>* out, uint16_t v) {
  out->push_back(static_cast<uint8_t>(v & 0xFF));
  out->push_back(static_cast<uint8_t>(v >> 8));
}

// Block scales: exact in fp16, at most four significant bits, mixed signs and
// magnitudes (2^-10 .. 96), so products with 6- and 8-bit integers stay exact.
const std::vector<double> kScales = {1.0,       0.5,  -0.375,      0.0625, 2.5,  -1.75,
                                     3.0 / 256, 96.0, -1.0 / 1024, 6.0,    0.25, -13.0};
const std::vector<double> kMins = {0.0, 0.25, -1.5, 0.046875, 5.0, -0.125, 12.0, 1.0 / 512};

// One tensor's bytes and the floats they must decode to, row-major.
struct Encoded {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
  bool signed_zeros = false;  // plain types keep the sign of zero
};

class GgufDequantTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()) << "mkdtemp failed"; }

  // Stores `e` as tensor "w" with GGUF dims {cols, rows} (after a small F32
  // tensor, so "w" is not at offset 0), reads it back and checks dequantize()
  // and QuantMatrix::DequantizeRow against e.values.
  void Check(uint32_t code, GgmlType type, int64_t cols, int64_t rows, const Encoded& e) {
    ASSERT_EQ(static_cast<int64_t>(e.values.size()), cols * rows);
    ASSERT_EQ(static_cast<int64_t>(e.bytes.size()), ggml_row_bytes(type, cols) * rows);
    g::GgufWriter w;
    w.Kv("general.architecture", g::Str("llama"))
        .Tensor("lead", {3}, 0, std::vector<uint8_t>(12, 0x3F))
        .Tensor("w", {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}, code, e.bytes);
    auto opened = GgufFile::Open(dir_.Write(std::string(ggml_type_name(type)) + ".gguf", w.Build()));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    const TensorView* tv = (*opened)->FindTensor("w");
    ASSERT_NE(tv, nullptr);
    EXPECT_EQ(tv->type, type);
    EXPECT_EQ(tv->shape, (std::vector<int64_t>{rows, cols}));
    ASSERT_EQ(tv->n_bytes, e.bytes.size());
    ASSERT_EQ(std::memcmp(tv->data, e.bytes.data(), e.bytes.size()), 0);

    const float kGuard = -12345.0f;
    std::vector<float> out(e.values.size() + 1, kGuard);
    dequantize(tv->type, tv->data, out.data(), tv->numel());
    EXPECT_EQ(out.back(), kGuard) << "dequantize wrote past the end";
    out.pop_back();
    ExpectSame(out, e.values, e.signed_zeros, "dequantize");

    auto m = QuantMatrix::FromView(*tv);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->rows(), rows);
    EXPECT_EQ(m->cols(), cols);
    std::vector<float> row(cols + 1, kGuard);
    for (int64_t r = 0; r < rows; ++r) {
      m->DequantizeRow(r, row.data());
      EXPECT_EQ(row.back(), kGuard) << "DequantizeRow wrote past the row";
      ExpectSame(std::vector<float>(row.begin(), row.end() - 1),
                 std::vector<float>(e.values.begin() + r * cols, e.values.begin() + (r + 1) * cols), e.signed_zeros,
                 "DequantizeRow " + std::to_string(r));
    }
  }

  static void ExpectSame(const std::vector<float>& got, const std::vector<float>& want, bool signed_zeros,
                         const std::string& what) {
    int bad = 0;
    for (size_t i = 0; i < want.size() && bad < 8; ++i) {
      const bool same = std::isnan(want[i])
                            ? std::isnan(got[i])
                            : got[i] == want[i] && (!signed_zeros || std::signbit(got[i]) == std::signbit(want[i]));
      if (!same) {
        ++bad;
        ADD_FAILURE() << what << ": value " << i << " is " << got[i] << ", expected " << want[i];
      }
    }
  }

  g::ScratchDir dir_;
  std::mt19937 rng_{20240611};
  uint32_t Next(uint32_t n) { return rng_() % n; }
};

TEST_F(GgufDequantTest, F32IsCopiedBitForBit) {
  const std::vector<float> v = {0.0f,
                                -0.0f,
                                1.0f,
                                -1.0f,
                                1.0f / 3,
                                3.14159274f,
                                std::numeric_limits<float>::min(),
                                std::numeric_limits<float>::denorm_min(),
                                std::numeric_limits<float>::max(),
                                -std::numeric_limits<float>::max(),
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN(),
                                1e-40f,
                                -65504.0f,
                                123456.789f};
  Encoded e;
  e.bytes.resize(v.size() * 4);
  std::memcpy(e.bytes.data(), v.data(), e.bytes.size());
  e.values = v;
  e.signed_zeros = true;
  Check(0, GgmlType::F32, 8, 2, e);
}

TEST_F(GgufDequantTest, F16EveryBitPattern) {
  Encoded e;
  e.signed_zeros = true;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    PutU16(&e.bytes, static_cast<uint16_t>(h));
    const double v = HalfValue(static_cast<uint16_t>(h));
    e.values.push_back(std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : Exact(v));
  }
  Check(1, GgmlType::F16, 256, 256, e);
}

TEST_F(GgufDequantTest, BF16EveryBitPattern) {
  Encoded e;
  e.signed_zeros = true;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    PutU16(&e.bytes, static_cast<uint16_t>(h));
    const uint32_t bits = h << 16;  // bf16 is the top half of an fp32
    float f;
    std::memcpy(&f, &bits, 4);
    e.values.push_back(f);
  }
  Check(30, GgmlType::BF16, 256, 256, e);
}

// Q4_0: fp16 d, 16 bytes; value j = (lo(qs[j]) - 8)·d, value j+16 = (hi(qs[j]) - 8)·d.
TEST_F(GgufDequantTest, Q4_0) {
  const int64_t cols = 96, rows = 4;
  Encoded e;
  for (int64_t b = 0; b < cols * rows / 32; ++b) {
    const double d = kScales[b % kScales.size()];
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(b == 0 ? (j < 16 ? j : 31 - j) : Next(16));
    PutU16(&e.bytes, HalfBits(d));
    for (int j = 0; j < 16; ++j) e.bytes.push_back(static_cast<uint8_t>(q[j] | q[j + 16] << 4));
    for (int j = 0; j < 32; ++j) e.values.push_back(Exact((q[j] - 8) * d));
  }
  Check(2, GgmlType::Q4_0, cols, rows, e);
}

// Q4_1: fp16 d, fp16 m, 16 bytes; value j = lo(qs[j])·d + m, value j+16 = hi(qs[j])·d + m.
TEST_F(GgufDequantTest, Q4_1) {
  const int64_t cols = 64, rows = 3;
  Encoded e;
  for (int64_t b = 0; b < cols * rows / 32; ++b) {
    const double d = kScales[(b * 5) % kScales.size()], m = kMins[b % kMins.size()];
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(b == 0 ? (j < 16 ? j : 31 - j) : Next(16));
    PutU16(&e.bytes, HalfBits(d));
    PutU16(&e.bytes, HalfBits(m));
    for (int j = 0; j < 16; ++j) e.bytes.push_back(static_cast<uint8_t>(q[j] | q[j + 16] << 4));
    for (int j = 0; j < 32; ++j) e.values.push_back(Exact(q[j] * d + m));
  }
  Check(3, GgmlType::Q4_1, cols, rows, e);
}

// Q8_0: fp16 d, 32 int8; value = q·d.
TEST_F(GgufDequantTest, Q8_0) {
  const int64_t cols = 96, rows = 2;
  Encoded e;
  for (int64_t b = 0; b < cols * rows / 32; ++b) {
    const double d = kScales[(b * 7 + 3) % kScales.size()];
    PutU16(&e.bytes, HalfBits(d));
    for (int j = 0; j < 32; ++j) {
      // Block 0 walks -128..120 and ends on 127; the rest are random.
      const int q = b == 0 ? (j == 31 ? 127 : -128 + 8 * j) : static_cast<int>(Next(256)) - 128;
      e.bytes.push_back(static_cast<uint8_t>(static_cast<int8_t>(q)));
      e.values.push_back(Exact(q * d));
    }
  }
  Check(8, GgmlType::Q8_0, cols, rows, e);
}

// Q4_K: 256 values in 8 sub-blocks of 32, each with a 6-bit scale sc[s] and
// min m[s]; value = d·sc[s]·q - dmin·m[s]. Layout: fp16 d, fp16 dmin, 12 bytes
// of packed scales/mins, 128 bytes of nibbles (sub-blocks 2c and 2c+1 share
// bytes 32c..32c+31: low nibbles, then high).
TEST_F(GgufDequantTest, Q4_K) {
  const int64_t cols = 512, rows = 3;
  Encoded e;
  for (int64_t b = 0; b < cols * rows / 256; ++b) {
    const double d = kScales[(b * 3) % kScales.size()], dmin = kMins[(b + 1) % kMins.size()];
    uint8_t sc[8], m[8], q[256];
    const uint8_t sc0[8] = {63, 0, 1, 32, 17, 48, 63, 5}, m0[8] = {0, 63, 62, 1, 31, 63, 16, 40};
    for (int s = 0; s < 8; ++s) {
      sc[s] = b == 0 ? sc0[s] : static_cast<uint8_t>(Next(64));
      m[s] = b == 0 ? m0[s] : static_cast<uint8_t>(Next(64));
    }
    for (int v = 0; v < 256; ++v) q[v] = static_cast<uint8_t>(b == 0 ? v % 16 : Next(16));

    PutU16(&e.bytes, HalfBits(d));
    PutU16(&e.bytes, HalfBits(dmin));
    uint8_t packed[12];
    for (int k = 0; k < 4; ++k) {
      packed[k] = static_cast<uint8_t>(sc[k] | (sc[k + 4] >> 4) << 6);
      packed[k + 4] = static_cast<uint8_t>(m[k] | (m[k + 4] >> 4) << 6);
      packed[k + 8] = static_cast<uint8_t>((sc[k + 4] & 0xF) | (m[k + 4] & 0xF) << 4);
    }
    e.bytes.insert(e.bytes.end(), packed, packed + 12);
    uint8_t qs[128] = {};
    for (int v = 0; v < 256; ++v) {
      const int s = v / 32, byte = 32 * (s / 2) + v % 32;
      qs[byte] |= static_cast<uint8_t>(s % 2 == 0 ? q[v] : q[v] << 4);
    }
    e.bytes.insert(e.bytes.end(), qs, qs + 128);
    for (int v = 0; v < 256; ++v) e.values.push_back(Exact(d * sc[v / 32] * q[v] - dmin * m[v / 32]));
  }
  Check(12, GgmlType::Q4_K, cols, rows, e);
}

// Q6_K: 256 values with 6-bit quants q and 16 int8 scales, one per 16 values;
// value v = d·sc[v/16]·(q - 32). Layout: 128 bytes ql (low 4 bits), 64 bytes qh
// (high 2 bits), 16 scales, fp16 d. In half h (128 values), group g (32 values),
// lane l: low bits in ql[64h + 32(g&1) + l] (low nibble for g < 2, high for
// g >= 2), high bits in qh[32h + l] at bit 2g.
TEST_F(GgufDequantTest, Q6_K) {
  const int64_t cols = 256, rows = 5;
  Encoded e;
  for (int64_t b = 0; b < cols * rows / 256; ++b) {
    const double d = kScales[(b * 5 + 1) % kScales.size()];
    int8_t sc[16];
    uint8_t q[256];
    const int8_t sc0[16] = {-128, 127, 0, -1, 1, 64, -64, 33, -33, 100, -100, 7, -7, 120, -120, 2};
    for (int s = 0; s < 16; ++s) sc[s] = b == 0 ? sc0[s] : static_cast<int8_t>(static_cast<int>(Next(256)) - 128);
    for (int v = 0; v < 256; ++v) q[v] = static_cast<uint8_t>(b == 0 ? (v * 5) % 64 : Next(64));

    uint8_t ql[128] = {}, qh[64] = {};
    for (int v = 0; v < 256; ++v) {
      const int h = v / 128, gr = (v % 128) / 32, l = v % 32;
      ql[64 * h + 32 * (gr & 1) + l] |= static_cast<uint8_t>(gr < 2 ? q[v] & 0xF : (q[v] & 0xF) << 4);
      qh[32 * h + l] |= static_cast<uint8_t>((q[v] >> 4) << (2 * gr));
    }
    e.bytes.insert(e.bytes.end(), ql, ql + 128);
    e.bytes.insert(e.bytes.end(), qh, qh + 64);
    for (int s = 0; s < 16; ++s) e.bytes.push_back(static_cast<uint8_t>(sc[s]));
    PutU16(&e.bytes, HalfBits(d));
    for (int v = 0; v < 256; ++v) e.values.push_back(Exact(d * sc[v / 16] * (q[v] - 32)));
  }
  Check(14, GgmlType::Q6_K, cols, rows, e);
}

}  // namespace
}  // namespace troupe
