// Each tensor encoding: its exact byte layout, its round-trip error bound, its
// overflow and NaN/Inf behaviour, and the non-finite scan.
#include "messages/tensor_encoding.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "pipeline/quant/half.h"

namespace troupe {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<uint8_t> Encode(v1::Dtype dtype, const std::vector<float>& x) {
  std::vector<uint8_t> bytes(*EncodedBytes(dtype, static_cast<int64_t>(x.size())));
  std::optional<WireError> error = EncodeValues(dtype, x.data(), static_cast<int64_t>(x.size()), bytes.data());
  EXPECT_FALSE(error) << error->ToString();
  return bytes;
}

std::vector<float> Decode(v1::Dtype dtype, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n);
  DecodeValues(dtype, bytes.data(), static_cast<int64_t>(n), out.data());
  return out;
}

// Values spanning many magnitudes and both signs, as hidden states do.
std::vector<float> RandomValues(size_t n, uint32_t seed, float max_log2 = 8.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> exponent(-12.0f, max_log2);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> x(n);
  for (float& v : x) v = std::exp2(exponent(rng)) * (negative(rng) ? -1.0f : 1.0f);
  if (n > 5) x[5] = 0.0f;
  return x;
}

TEST(TensorEncodingTest, EncodedBytes) {
  EXPECT_EQ(EncodedBytes(v1::DTYPE_F32, 10), 40u);
  EXPECT_EQ(EncodedBytes(v1::DTYPE_BF16, 10), 20u);
  EXPECT_EQ(EncodedBytes(v1::DTYPE_F16, 10), 20u);
  EXPECT_EQ(EncodedBytes(v1::DTYPE_INT8_BLOCK32, 1), 34u);
  EXPECT_EQ(EncodedBytes(v1::DTYPE_INT8_BLOCK32, 32), 34u);
  EXPECT_EQ(EncodedBytes(v1::DTYPE_INT8_BLOCK32, 33), 68u);
  EXPECT_EQ(EncodedBytes(v1::DTYPE_INT8_BLOCK32, 576), 18u * 34u);
  EXPECT_EQ(EncodedBytes(v1::DTYPE_F32, 0), 0u);
  EXPECT_FALSE(EncodedBytes(v1::DTYPE_UNSPECIFIED, 10));
  EXPECT_FALSE(EncodedBytes(static_cast<v1::Dtype>(99), 10));
  EXPECT_FALSE(EncodedBytes(v1::DTYPE_F32, -1));
  EXPECT_FALSE(EncodedBytes(v1::DTYPE_F32, std::numeric_limits<int64_t>::max()));
}

TEST(TensorEncodingTest, DtypeNames) {
  EXPECT_EQ(DtypeName(v1::DTYPE_F32), "f32");
  EXPECT_EQ(DtypeName(v1::DTYPE_INT8_BLOCK32), "int8_block32");
  EXPECT_EQ(DtypeName(static_cast<v1::Dtype>(42)), "dtype(42)");
  EXPECT_FALSE(DtypeKnown(v1::DTYPE_UNSPECIFIED));
}

TEST(TensorEncodingTest, F32LayoutIsLittleEndianBinary32AndExact) {
  const std::vector<float> x = {1.0f, -2.5f, 3.0e-40f /* subnormal */, 1e30f};
  const std::vector<uint8_t> bytes = Encode(v1::DTYPE_F32, x);
  ASSERT_EQ(bytes.size(), 16u);
  EXPECT_EQ(bytes[0], 0x00);
  EXPECT_EQ(bytes[3], 0x3F);  // 1.0f = 0x3F800000, little-endian
  EXPECT_EQ(bytes[2], 0x80);
  const std::vector<float> y = Decode(v1::DTYPE_F32, bytes, x.size());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), 16), 0);
}

TEST(TensorEncodingTest, Bf16RoundTripWithinRelative2PowMinus8) {
  const std::vector<float> x = RandomValues(4099, 1, 60.0f);
  const std::vector<uint8_t> bytes = Encode(v1::DTYPE_BF16, x);
  ASSERT_EQ(bytes.size(), 2 * x.size());
  const std::vector<float> y = Decode(v1::DTYPE_BF16, bytes, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(y[i] - x[i]), std::ldexp(std::fabs(x[i]), -8)) << i << ": " << x[i];
  }
  // 1.0 is 0x3F80.
  EXPECT_EQ(Encode(v1::DTYPE_BF16, {1.0f}), (std::vector<uint8_t>{0x80, 0x3F}));
}

TEST(TensorEncodingTest, F16RoundTripWithinRelative2PowMinus11) {
  std::vector<float> x = RandomValues(4099, 2, 15.0f);
  for (float& v : x) {
    if (v != 0.0f && std::fabs(v) < 6.2e-5f) v = std::copysign(6.2e-5f, v);  // normal f16 range
  }
  const std::vector<uint8_t> bytes = Encode(v1::DTYPE_F16, x);
  const std::vector<float> y = Decode(v1::DTYPE_F16, bytes, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(y[i] - x[i]), std::ldexp(std::fabs(x[i]), -11)) << i << ": " << x[i];
  }
  EXPECT_EQ(Encode(v1::DTYPE_F16, {1.0f}), (std::vector<uint8_t>{0x00, 0x3C}));
  EXPECT_EQ(Encode(v1::DTYPE_F16, {65504.0f}), (std::vector<uint8_t>{0xFF, 0x7B}));
}

TEST(TensorEncodingTest, Int8BlockLayoutIsGgmlQ8_0) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = -127.0f;
  x[2] = 3.4f;
  x[31] = -0.6f;
  const std::vector<uint8_t> bytes = Encode(v1::DTYPE_INT8_BLOCK32, x);
  ASSERT_EQ(bytes.size(), 34u);
  EXPECT_EQ(bytes[0], 0x00);  // scale 1.0 = binary16 0x3C00, little-endian
  EXPECT_EQ(bytes[1], 0x3C);
  EXPECT_EQ(static_cast<int8_t>(bytes[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(bytes[3]), -127);
  EXPECT_EQ(static_cast<int8_t>(bytes[4]), 3);
  EXPECT_EQ(static_cast<int8_t>(bytes[5]), 0);
  EXPECT_EQ(static_cast<int8_t>(bytes[33]), -1);
}

// Every value within d/2 of its input, d being its block's stored scale.
void ExpectInt8WithinHalfScale(const std::vector<float>& x) {
  const std::vector<uint8_t> bytes = Encode(v1::DTYPE_INT8_BLOCK32, x);
  ASSERT_EQ(bytes.size(), (x.size() + 31) / 32 * 34);
  const std::vector<float> y = Decode(v1::DTYPE_INT8_BLOCK32, bytes, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t block = i / 32;
    uint16_t d_bits;
    std::memcpy(&d_bits, &bytes[block * 34], 2);
    const float d = Fp16ToFp32(d_bits);
    float amax = 0.0f;
    for (size_t j = block * 32; j < std::min(x.size(), block * 32 + 32); ++j) {
      amax = std::max(amax, std::fabs(x[j]));
    }
    EXPECT_GE(d, amax / 127.0f) << "scale rounds up";
    EXPECT_LE(std::fabs(y[i] - x[i]), d * 0.5f * (1.0f + 1e-6f)) << i << ": " << x[i];
  }
}

TEST(TensorEncodingTest, Int8RoundTripWithinHalfAScalePerBlock) {
  ExpectInt8WithinHalfScale(RandomValues(576 * 3, 3));
  ExpectInt8WithinHalfScale(RandomValues(1000, 4, 15.0f));  // 1000 = 31 blocks + 8
  ExpectInt8WithinHalfScale(RandomValues(7, 5));            // one short block
}

TEST(TensorEncodingTest, Int8EdgeMagnitudes) {
  // All-zero block: scale 0, values exactly 0.
  ExpectInt8WithinHalfScale(std::vector<float>(40, 0.0f));
  // Below the f16 subnormal range: the scale rounds up to the smallest one.
  ExpectInt8WithinHalfScale({1e-30f, -2e-30f, 0.0f});
  ExpectInt8WithinHalfScale({1e-6f, 3e-7f, -1e-6f});
  // The largest block whose scale fits f16: 65504 * 127.
  ExpectInt8WithinHalfScale({65504.0f * 127.0f, -1.0f, 12345.0f});
}

TEST(TensorEncodingTest, Int8PaddingIsZeroAndIgnored) {
  const std::vector<float> x = {1.0f, 2.0f, 3.0f};
  std::vector<uint8_t> bytes = Encode(v1::DTYPE_INT8_BLOCK32, x);
  for (size_t i = 2 + 3; i < 34; ++i) EXPECT_EQ(bytes[i], 0) << i;
  bytes[20] = 0x55;  // garbage in the padding does not change the values
  const std::vector<float> y = Decode(v1::DTYPE_INT8_BLOCK32, bytes, 3);
  const std::vector<float> z = Decode(v1::DTYPE_INT8_BLOCK32, Encode(v1::DTYPE_INT8_BLOCK32, x), 3);
  EXPECT_EQ(y, z);
}

TEST(TensorEncodingTest, OverflowIsAnErrorNotAnInfinity) {
  std::vector<uint8_t> bytes(68);
  const std::vector<float> big = {1.0f, 70000.0f};
  std::optional<WireError> e = EncodeValues(v1::DTYPE_F16, big.data(), 2, bytes.data());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, v1::BAD_TENSOR);
  EXPECT_NE(e->text.find("index 1"), std::string::npos) << e->text;

  const std::vector<float> huge = {1.0f, 65520.0f * 127.0f};
  e = EncodeValues(v1::DTYPE_INT8_BLOCK32, huge.data(), 2, bytes.data());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, v1::BAD_TENSOR);

  // bf16 has the f32 range: no overflow below FLT_MAX.
  EXPECT_FALSE(EncodeValues(v1::DTYPE_BF16, huge.data(), 2, bytes.data()));
}

TEST(TensorEncodingTest, NonFiniteValuesPassThroughFloatEncodings) {
  const std::vector<float> x = {kNaN, kInf, -kInf, 1.0f};
  for (v1::Dtype dtype : {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16}) {
    SCOPED_TRACE(DtypeName(dtype));
    const std::vector<float> y = Decode(dtype, Encode(dtype, x), x.size());
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], kInf);
    EXPECT_EQ(y[2], -kInf);
    EXPECT_EQ(y[3], 1.0f);
  }
}

TEST(TensorEncodingTest, NonFiniteCannotBeInt8) {
  std::vector<uint8_t> bytes(68);
  for (float bad : {kNaN, kInf, -kInf}) {
    std::vector<float> x(40, 1.0f);
    x[35] = bad;
    std::optional<WireError> e = EncodeValues(v1::DTYPE_INT8_BLOCK32, x.data(), 40, bytes.data());
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, v1::NON_FINITE);
    EXPECT_NE(e->text.find("index 35"), std::string::npos) << e->text;
  }
}

TEST(TensorEncodingTest, FindNonFiniteReportsTheFirstIndex) {
  for (v1::Dtype dtype : {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16}) {
    SCOPED_TRACE(DtypeName(dtype));
    std::vector<float> x = RandomValues(5000, 6, 10.0f);
    EXPECT_EQ(FindNonFinite(dtype, Encode(dtype, x).data(), 5000), -1);
    for (int64_t at : {0, 1023, 1024, 4097, 4999}) {
      for (float bad : {kNaN, kInf, -kInf}) {
        std::vector<float> y = x;
        y[at] = bad;
        if (at + 3 < 5000) y[at + 3] = kNaN;  // a later one is not reported
        EXPECT_EQ(FindNonFinite(dtype, Encode(dtype, y).data(), 5000), at) << bad;
      }
    }
    std::vector<float> max_finite(3, dtype == v1::DTYPE_F16 ? 65504.0f : 3.0e38f);
    EXPECT_EQ(FindNonFinite(dtype, Encode(dtype, max_finite).data(), 3), -1);
  }
}

TEST(TensorEncodingTest, FindNonFiniteInt8LooksAtScales) {
  std::vector<uint8_t> bytes = Encode(v1::DTYPE_INT8_BLOCK32, RandomValues(100, 7));
  EXPECT_EQ(FindNonFinite(v1::DTYPE_INT8_BLOCK32, bytes.data(), 100), -1);
  for (uint16_t scale : {uint16_t{0x7C00}, uint16_t{0xFC00}, uint16_t{0x7E00}}) {
    std::vector<uint8_t> b = bytes;
    std::memcpy(&b[2 * 34], &scale, 2);
    EXPECT_EQ(FindNonFinite(v1::DTYPE_INT8_BLOCK32, b.data(), 100), 64);
    std::vector<float> y = Decode(v1::DTYPE_INT8_BLOCK32, b, 100);
    bool any = false;
    for (int i = 64; i < 96; ++i) any |= !std::isfinite(y[i]);
    EXPECT_TRUE(any);
  }
}

TEST(TensorEncodingTest, UnalignedBuffersWork) {
  const std::vector<float> x = RandomValues(100, 8);
  for (v1::Dtype dtype : {v1::DTYPE_F32, v1::DTYPE_BF16, v1::DTYPE_F16, v1::DTYPE_INT8_BLOCK32}) {
    const std::vector<uint8_t> bytes = Encode(dtype, x);
    std::vector<uint8_t> shifted(bytes.size() + 1);
    std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
    std::vector<float> a(100), b(100);
    DecodeValues(dtype, bytes.data(), 100, a.data());
    DecodeValues(dtype, shifted.data() + 1, 100, b.data());
    EXPECT_EQ(a, b) << DtypeName(dtype);
    EXPECT_EQ(FindNonFinite(dtype, shifted.data() + 1, 100), -1);
  }
}

}  // namespace
}  // namespace troupe
