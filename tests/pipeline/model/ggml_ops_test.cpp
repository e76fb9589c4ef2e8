// ggml's fp32 formulas that cpu_ops reproduces for bit-exact agreement with
// llama.cpp's one-token path: the SIMD exp approximation (ggml_v_expf), SiLU
// built on it, ggml_vec_dot_f16's reduction order and the softmax sum. Each is
// checked against a scalar spelling of ggml's algorithm (std::fma for fused
// steps) and against hand-computed values.
#include <dlfcn.h>
#include <glob.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "pipeline/model/cpu_ops.h"
#include "pipeline/quant/half.h"

namespace troupe {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// ggml_v_expf for one lane, in the variant this build uses.
float ExpReference(float x) {
#if defined(__AVX512F__) && defined(__AVX512DQ__)
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j =
      std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
               std::fma(0x1.ffffecp-1f, b, 1.0f));
  if (std::fabs(n) > 192) return n <= 0 ? 0.0f : INFINITY;
  return std::ldexp(j, static_cast<int>(n));  // vscalefps: j * 2^n, one rounding
#elif defined(__AVX2__) && defined(__FMA__)
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j =
      std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
               0x1.ffffecp-1f * b);
  if (std::fabs(n) > 192) return n <= 0 ? 0.0f : INFINITY;
  // (126 < |n| <= 192 takes ggml's two-step scaling; not compared bitwise.)
  const float k = std::ldexp(1.0f, static_cast<int>(n));
  return std::fma(j, k, k);
#else
  return std::exp(x);
#endif
}

TEST(GgmlOps, ExpMatchesGgmlAlgorithmAndStaysNearExp) {
  std::vector<float> x;
  for (float v = -100.0f; v <= 88.0f; v += 0.0137f) x.push_back(v);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> small(-20.0f, 0.0f);  // softmax inputs are <= 0
  for (int i = 0; i < 10000; ++i) x.push_back(small(rng));
  std::vector<float> y(x.size());
  GgmlExp(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = ExpReference(x[i]);
    if (std::fabs(static_cast<int>(std::lround(x[i] * 1.4426950f))) <= 126) {
      ASSERT_EQ(Bits(y[i]), Bits(want)) << "x = " << x[i];
    }
    // Within ggml's stated bound (1.45 + 0.5 ulp) of the true value.
    const double exact = std::exp(static_cast<double>(x[i]));
    if (exact > 1e-37 && exact < 1e38) {
      const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(exact)) - 23);
      ASSERT_LE(std::fabs(y[i] - exact), 2.5 * ulp) << "x = " << x[i];
    }
  }
}

TEST(GgmlOps, ExpHandValues) {
  const float x[] = {0.0f, -0.0f, 1.0f, -1.0f, 89.0f, -105.0f, -INFINITY, INFINITY};
  float y[8];
  GgmlExp(x, y, 8);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_NEAR(y[2], 2.7182817f, 3e-7f);
  EXPECT_NEAR(y[3], 0.36787945f, 6e-8f);
  EXPECT_EQ(y[4], INFINITY);  // flushes above 88.38
  EXPECT_EQ(y[5], 0.0f);      // and below -103.97
  EXPECT_EQ(y[6], 0.0f);      // masked attention cells: exactly zero weight
  EXPECT_EQ(y[7], INFINITY);
}

TEST(GgmlOps, SiluMulIsXOverOnePlusExpTimesUp) {
  // 37 values: two full SIMD blocks and a scalar tail (expf) on AVX-512,
  // four blocks and a tail on AVX2.
  std::vector<float> g(37), up(37);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int i = 0; i < 37; ++i) g[i] = normal(rng), up[i] = normal(rng);
  std::vector<float> out = g;
  SiluMul(out.data(), up.data(), 37);
#if defined(__AVX512F__) && defined(__AVX512DQ__)
  const int simd = 32;
#elif defined(__AVX2__) && defined(__FMA__)
  const int simd = 32;
#else
  const int simd = 0;
#endif
  for (int i = 0; i < 37; ++i) {
    const float neg = 0.0f - g[i];
    float e;
    if (i < simd) {
      GgmlExp(&neg, &e, 1);
    } else {
      e = std::exp(-g[i]);
    }
    const float want = g[i] / (1.0f + e) * up[i];
    EXPECT_EQ(Bits(out[i]), Bits(want)) << i << " g " << g[i] << " e " << e << " up " << up[i];
  }
}

TEST(GgmlOps, DotF16ReductionOrder) {
  // 64 fp16 values: products x_i y_i are exact in fp32. 2^24 at i = 0, ones at
  // i = 16, 32, 48. ggml's SIMD accumulators add lane 0 of i = 0 and 32 first
  // (fl(2^24 + 1) = 2^24, ties to even), then the pair at 16 and 48 (2):
  // 2^24 + 2. A sequential double sum would give 2^24 + 3 -> 2^24 + 4.
  std::vector<uint16_t> x(65, Fp32ToFp16(0.0f)), y(65, Fp32ToFp16(0.0f));
  x[0] = y[0] = Fp32ToFp16(4096.0f);
  for (int i : {16, 32, 48}) x[i] = y[i] = Fp32ToFp16(1.0f);
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  EXPECT_EQ(GgmlDotF16(x.data(), y.data(), 64), 16777218.0f);
#else
  EXPECT_EQ(GgmlDotF16(x.data(), y.data(), 64), 16777220.0f);
#endif
  // Values past the last whole step are added in double: 2^24 + 2 + 1 rounds
  // to 2^24 + 4 only at the end.
  x[64] = y[64] = Fp32ToFp16(1.0f);
  EXPECT_EQ(GgmlDotF16(x.data(), y.data(), 65), 16777220.0f);
  // Zero-length and small dots.
  EXPECT_EQ(GgmlDotF16(x.data(), y.data(), 0), 0.0f);
  EXPECT_EQ(GgmlDotF16(x.data() + 16, y.data() + 16, 1), 1.0f);
}

// The attention's 16-keys-at-once scores equal GgmlDotF16 per key, bit for
// bit, for head sizes that take the fast paths (64, 128; 96 on AVX2) and
// ones that do not (96 on AVX-512, 80). Values spread over 2^-8..2^8 so that another summation order
// rounds differently — checked: a plain left-to-right float sum differs.
TEST(GgmlOps, DotF16Rows16MatchesOneRowAtATime) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-8, 8);
  for (int64_t n : {64, 128, 96, 80}) {
    const int64_t stride = n + 32;
    int order_sensitive = 0;
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<uint16_t> x(16 * stride), y(n);
      for (auto& v : x) v = Fp32ToFp16(std::ldexp(mant(rng), expo(rng)));
      for (auto& v : y) v = Fp32ToFp16(std::ldexp(mant(rng), expo(rng)));
      float out[16];
      GgmlDotF16Rows16(x.data(), stride, y.data(), n, out);
      for (int j = 0; j < 16; ++j) {
        const float want = GgmlDotF16(x.data() + j * stride, y.data(), n);
        uint32_t a, b;
        std::memcpy(&a, &out[j], 4);
        std::memcpy(&b, &want, 4);
        EXPECT_EQ(a, b) << "n " << n << " trial " << trial << " row " << j << ": " << out[j] << " vs " << want;
        float plain = 0.0f;
        for (int64_t i = 0; i < n; ++i) plain += Fp16ToFp32(x[j * stride + i]) * Fp16ToFp32(y[i]);
        order_sensitive += plain != want;
      }
    }
    EXPECT_GT(order_sensitive, 0) << "n " << n << ": the data does not tell summation orders apart";
  }
}

// ToHalf (the KV cache's and the attention's fp32 -> fp16) gives
// Fp32ToFp16's bits for every value, whichever of its 16-, 8- and 1-wide
// paths a value goes through: ties, subnormals, overflow, infinities, NaN
// payloads, at every offset of odd-length rows.
TEST(GgmlOps, ToHalfIsFp32ToFp16ForEveryValue) {
  std::vector<float> x = {0.0f,     -0.0f,    1.0f,   65504.0f, 65519.0f,       65520.0f,       -70000.0f, 5.96e-8f,
                          2.98e-8f, 2.99e-8f, 1e-10f, 6.1e-5f,  1.00048828125f, 1.00146484375f, INFINITY,  -INFINITY};
  for (uint32_t bits : {0x7FC00001u, 0xFF812345u, 0x7F800001u}) {
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-30, 17);
  while (x.size() < 203) x.push_back(std::ldexp(mant(rng), expo(rng)));
  for (size_t offset = 0; offset < 17; ++offset) {
    const int64_t n = static_cast<int64_t>(x.size() - offset);
    std::vector<uint16_t> got(n);
    ToHalf(x.data() + offset, got.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(got[i], Fp32ToFp16(x[offset + i])) << "offset " << offset << " value " << x[offset + i];
    }
  }
}

TEST(GgmlOps, SoftMaxSumIsBlockwise) {
  // exp values stored = GgmlExp(x - max); the sum is accumulated in double
  // per SIMD block of 16 (AVX-512) / 8 (AVX2) values, each block summed in
  // fp32 first: with 1 + 15 x 2^-24 in one block the fp32 block sum is
  // different from the exact double sum.
  std::vector<float> x(16, -INFINITY), e(16);
  x[0] = 0.0f;
  const float tiny = std::log(0x1p-24f);
  for (int i = 1; i < 16; ++i) x[i] = tiny;
  const double sum = GgmlSoftMaxExp(x.data(), 0.0f, e.data(), 16);
  std::vector<float> want(16);
  std::vector<float> shifted(16);
  for (int i = 0; i < 16; ++i) shifted[i] = x[i] - 0.0f;
  GgmlExp(shifted.data(), want.data(), 16);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(Bits(e[i]), Bits(want[i])) << i;
  double exact = 0;
  for (float v : want) exact += v;
#if defined(__AVX512F__) && defined(__AVX512DQ__) || (defined(__AVX2__) && defined(__FMA__))
  EXPECT_NE(sum, exact);  // fp32 block sums lose the tiny terms
  EXPECT_LT(sum, exact);
#else
  EXPECT_EQ(sum, exact);
#endif
}

// GeGLU (Gemma): ggml_vec_geglu_f32 looks gelu up in ggml_table_gelu_f16,
// which ggml fills once at start-up. Our table must be the same 65536
// entries: compared with the one inside llama.cpp's own libggml-cpu (from
// llama-cpp-python, installed by scripts/setup.sh --with-test-deps).
TEST(GgmlOps, GeluTableIsLlamaCpps) {
  glob_t g{};
  const std::string pattern =
      std::string(TROUPE_SOURCE_DIR) + "/.venv/lib/python3*/site-packages/llama_cpp/lib/libggml-cpu.so";
  const bool found = ::glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0;
  const std::string path = found ? g.gl_pathv[0] : "";
  globfree(&g);
  if (!found) GTEST_SKIP() << "llama-cpp-python is installed by scripts/setup.sh --with-test-deps";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto init = reinterpret_cast<void (*)()>(dlsym(lib, "ggml_cpu_init"));
  const auto* theirs = static_cast<const uint16_t*>(dlsym(lib, "ggml_table_gelu_f16"));
  ASSERT_NE(init, nullptr);
  ASSERT_NE(theirs, nullptr);
  init();
  const uint16_t* ours = GeluTable();
  int differ = 0;
  for (int h = 0; h < (1 << 16); ++h) differ += ours[h] != theirs[h];
  EXPECT_EQ(differ, 0) << "entries of 65536";
  EXPECT_NE(theirs[0x3c00], 0) << "ggml's table was not filled";  // gelu(1) != 0
  dlclose(lib);
}

TEST(GgmlOps, GeluMulFollowsGgmlGeglu) {
  std::vector<float> gate = {-20.0f, -10.0f, -9.99f, -1.0f, 0.0f, 0.5f, 1.0f, 3.0f, 9.99f, 10.0f, 25.0f};
  std::vector<float> up(gate.size(), 2.0f);
  std::vector<float> x = gate;
  GeluMul(x.data(), up.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(x[0], 0.0f);  // <= -10: zero
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[9], 20.0f);  // >= 10: x * up
  EXPECT_EQ(x[10], 50.0f);
  EXPECT_EQ(x[4], 0.0f);
  for (size_t i = 2; i < 9; ++i) {
    const float exact =
        0.5f * gate[i] * (1.0f + std::tanh(0.7978845608f * gate[i] * (1.0f + 0.044715f * gate[i] * gate[i])));
    EXPECT_NEAR(x[i], exact * 2.0f, std::fabs(exact) * 2e-3 + 1e-6) << gate[i];  // through fp16
    EXPECT_EQ(x[i], Fp16ToFp32(GeluTable()[Fp32ToFp16(gate[i])]) * 2.0f);
  }
}

// The 16-wide GeluMul gives the scalar rule's bits for every input: each fp16
// value, random floats between them (the rounding to fp16), the edges ±10,
// infinities and NaNs, at every offset of a 16-lane vector.
TEST(GgmlOps, GeluMulVectorMatchesTheScalarRuleBitForBit) {
  std::vector<float> gate;
  for (uint32_t h = 0; h < (1u << 16); ++h) gate.push_back(Fp16ToFp32(static_cast<uint16_t>(h)));
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  for (int i = 0; i < 100000; ++i) gate.push_back(wide(rng));
  for (float v : {10.0f, -10.0f, std::nextafter(10.0f, 0.0f), std::nextafter(-10.0f, 0.0f), INFINITY, -INFINITY, NAN,
                  -NAN, 0.0f, -0.0f}) {
    gate.push_back(v);
  }
  gate.push_back(1.0f);  // a scalar tail
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> up(gate.size());
  for (float& u : up) u = nd(rng);
  for (size_t offset : {size_t{0}, size_t{5}}) {
    std::vector<float> x(gate.begin() + static_cast<std::ptrdiff_t>(offset), gate.end());
    GeluMul(x.data(), up.data() + offset, static_cast<int64_t>(x.size()));
    int differ = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float g = gate[offset + i], u = up[offset + i];
      const float want = g <= -10.0f ? 0.0f : g >= 10.0f ? g * u : Fp16ToFp32(GeluTable()[Fp32ToFp16(g)]) * u;
      const bool same = std::isnan(want) ? std::isnan(x[i]) : Bits(want) == Bits(x[i]);
      if (!same && ++differ <= 5) ADD_FAILURE() << "gate " << g << " up " << u << ": " << x[i] << " vs " << want;
    }
    EXPECT_EQ(differ, 0) << "of " << x.size() << " at offset " << offset;
  }
}

// Sliding-window attention (Gemma): keys before the window count for nothing,
// whatever they hold; a window of one returns the current value row; a window
// wider than the history changes nothing.
TEST(GgmlOps, AttentionWindowMasksOlderKeys) {
  const int64_t d = 64, n_heads = 2, len = 40, max_len = 64;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint16_t> keys(max_len * d), values(max_len * d);
  for (auto& k : keys) k = Fp32ToFp16(nd(rng));
  for (auto& v : values) v = Fp32ToFp16(nd(rng));
  std::vector<float> q(n_heads * d);
  for (auto& x : q) x = nd(rng);
  AttentionShape s{n_heads, 1, d, max_len * d};
  auto run = [&](const AttentionShape& shape, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v) {
    std::vector<float> out(n_heads * d);
    Attention(q.data(), k.data(), v.data(), shape, len - 1, 1, out.data(), 1);
    return out;
  };
  const std::vector<float> full = run(s, keys, values);
  AttentionShape wide = s;
  wide.window = len + 5;
  EXPECT_EQ(run(wide, keys, values), full);
  AttentionShape w8 = s;
  w8.window = 8;
  const std::vector<float> windowed = run(w8, keys, values);
  EXPECT_NE(windowed, full);
  std::vector<uint16_t> k2 = keys, v2 = values;  // scramble what the window hides
  for (int64_t j = 0; j < len - 8; ++j)
    for (int64_t e = 0; e < d; ++e) {
      k2[j * d + e] = Fp32ToFp16(100.0f);
      v2[j * d + e] = Fp32ToFp16(-50.0f);
    }
  EXPECT_EQ(run(w8, k2, v2), windowed);
  AttentionShape w1 = s;
  w1.window = 1;
  const std::vector<float> last = run(w1, keys, values);
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t e = 0; e < d; ++e) EXPECT_EQ(last[h * d + e], Fp16ToFp32(values[(len - 1) * d + e]));
}

// A non-zero scale replaces 1/sqrt(head_dim): scaling q by c with scale 1 is
// the same as the default when c = 1/sqrt(d) is a power of two (d = 64: 1/8).
TEST(GgmlOps, AttentionScaleReplacesTheDefault) {
  const int64_t d = 64, len = 20, max_len = 32;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint16_t> keys(max_len * d), values(max_len * d);
  for (auto& k : keys) k = Fp32ToFp16(nd(rng));
  for (auto& v : values) v = Fp32ToFp16(nd(rng));
  std::vector<float> q(d), q8(d);
  for (int64_t e = 0; e < d; ++e) {  // away from fp16's subnormals, where /8 would round
    const float x = nd(rng);
    q[e] = std::copysign(0.5f + std::fabs(x), x);
    q8[e] = q[e] / 8.0f;
  }
  AttentionShape s{1, 1, d, max_len * d};
  std::vector<float> a(d), b(d);
  Attention(q.data(), keys.data(), values.data(), s, len - 1, 1, a.data(), 1);
  s.scale = 1.0f;
  Attention(q8.data(), keys.data(), values.data(), s, len - 1, 1, b.data(), 1);
  EXPECT_EQ(a, b);
}

// llama.cpp's non-flash attention spelled out one value at a time, in the
// summation order of the ggml build this one matches: scores by GgmlDotF16
// (checked above), softmax by GgmlSoftMaxExp, probabilities rounded to
// fp16, then ggml_vec_dot_f16 over the positions for each output: on
// AVX-512 position j feeds lane j % 64 (a std::fma chain from +0), lanes
// reduced as (l + 32, then 16 + 48) and _mm512_reduce_add_ps's tree; on AVX2
// lane j % 32 and HaddReduce8's tree; portable ggml a double sum.
std::vector<float> AttentionReference(const std::vector<float>& q, const std::vector<uint16_t>& keys,
                                      const std::vector<uint16_t>& values, const AttentionShape& s, int64_t len) {
  const int64_t d = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int64_t len16 = (len + 15) / 16 * 16;
  const int64_t first = s.window > 0 ? std::max<int64_t>(0, len - s.window) : 0;
  std::vector<float> out(s.n_heads * d);
  for (int64_t h = 0; h < s.n_heads; ++h) {
    const uint16_t* k = keys.data() + h / group * s.cache_stride;
    const uint16_t* v = values.data() + h / group * s.cache_stride;
    std::vector<uint16_t> qh(d);
    for (int64_t e = 0; e < d; ++e) qh[e] = Fp32ToFp16(q[h * d + e]);
    std::vector<float> scores(len16, -INFINITY), probs(len16);
    float max_score = -INFINITY;
    for (int64_t j = first; j < len; ++j) {
      scores[j] = GgmlDotF16(k + j * d, qh.data(), d) * scale;
      max_score = std::max(max_score, scores[j]);
    }
    const float inv = static_cast<float>(1.0 / GgmlSoftMaxExp(scores.data(), max_score, probs.data(), len16));
    std::vector<float> p(len);
    for (int64_t j = 0; j < len; ++j) p[j] = Fp16ToFp32(Fp32ToFp16(probs[j] * inv));
    for (int64_t e = 0; e < d; ++e) {
      auto value = [&](int64_t j) { return Fp16ToFp32(v[j * d + e]); };
#if defined(__AVX512F__) && defined(__AVX512DQ__)
      float a[64] = {};
      for (int64_t j = first; j < len; ++j) a[j % 64] = std::fma(value(j), p[j], a[j % 64]);
      float y[16];
      for (int l = 0; l < 16; ++l) y[l] = (a[l] + a[32 + l]) + (a[16 + l] + a[48 + l]);
      for (int l = 0; l < 8; ++l) y[l] += y[l + 8];
      for (int l = 0; l < 4; ++l) y[l] += y[l + 4];
      out[h * d + e] = (y[0] + y[2]) + (y[1] + y[3]);
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
      float a[32] = {};
      for (int64_t j = first; j < len; ++j) a[j % 32] = std::fma(value(j), p[j], a[j % 32]);
      float y[8];
      for (int l = 0; l < 8; ++l) y[l] = (a[l] + a[16 + l]) + (a[8 + l] + a[24 + l]);
      for (int l = 0; l < 4; ++l) y[l] += y[l + 4];
      out[h * d + e] = (y[0] + y[1]) + (y[2] + y[3]);
#else
      double sum = 0.0;
      for (int64_t j = 0; j < len; ++j) sum += static_cast<double>(value(j) * p[j]);
      out[h * d + e] = static_cast<float>(sum);
#endif
    }
  }
  return out;
}

// Attention equals that spelling bit for bit, whether heads sharing a kv
// head go together (groups of 1 to 4) or alone (few rows across threads), at
// head sizes 64, 128 and 80 (not a multiple of 64: the one-head path),
// lengths short of, at and past ggml's 64 lanes, with and without a sliding
// window. Values span 2^-6..2^6 so the summation order shows: a plain
// left-to-right float sum of the same products differs somewhere.
TEST(GgmlOps, AttentionIsGgmlsAttentionInItsSummationOrder) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-6, 6);
  auto wide = [&] { return std::ldexp(mant(rng), expo(rng)); };
  int order_sensitive = 0, checked = 0;
  struct Heads {
    int64_t n, kv;
  };
  for (const Heads heads : {Heads{9, 3}, Heads{8, 2}, Heads{4, 2}, Heads{2, 2}}) {
    for (int64_t d : {64, 128, 80}) {
      for (int64_t len : {1, 5, 64, 65, 130, 203}) {
        for (int64_t window : {0, 40}) {
          const int64_t max_len = len + 7;
          AttentionShape s{heads.n, heads.kv, d, max_len * d};
          s.window = window;
          std::vector<uint16_t> keys(heads.kv * max_len * d), values(keys.size());
          for (auto& x : keys) x = Fp32ToFp16(wide() / 4);
          for (auto& x : values) x = Fp32ToFp16(wide());
          std::vector<float> q(heads.n * d);
          for (auto& x : q) x = wide() / 4;
          const std::vector<float> want = AttentionReference(q, keys, values, s, len);
          for (int threads : {1, 2}) {
            std::vector<float> out(q.size(), std::numeric_limits<float>::quiet_NaN());
            Attention(q.data(), keys.data(), values.data(), s, len - 1, 1, out.data(), threads);
            int differ = 0;
            for (size_t i = 0; i < out.size(); ++i) differ += Bits(out[i]) != Bits(want[i]);
            EXPECT_EQ(differ, 0) << heads.n << "/" << heads.kv << " heads, d " << d << ", length " << len << ", window "
                                 << window << ", " << threads << " threads";
            ++checked;
          }
          // The data tells orders apart: one head's plain float sums.
          const int64_t first = window > 0 ? std::max<int64_t>(0, len - window) : 0;
          if (len - first > 1) {
            std::vector<float> p(len, 1.0f / static_cast<float>(len - first));
            for (int64_t e = 0; e < d; ++e) {
              float plain = 0.0f;
              for (int64_t j = first; j < len; ++j) plain += Fp16ToFp32(values[j * d + e]) * p[j];
              float a[64] = {};
              for (int64_t j = first; j < len; ++j)
                a[j % 64] = std::fma(Fp16ToFp32(values[j * d + e]), p[j], a[j % 64]);
              float lanes = 0.0f;
              for (float x : a) lanes += x;
              order_sensitive += plain != lanes;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 3 * 6 * 2 * 2);
  EXPECT_GT(order_sensitive, 0) << "the data does not tell summation orders apart";
}

// A batch's attention in one pass gives each session what its own call gives,
// bit for bit, whatever the sessions' lengths, query rows, cache sizes and
// the thread count; and cache cells past a session's length (the attention
// reads up to 15 of them with its 16-key scores, then drops them) change
// nothing, even when they hold NaN.
TEST(GgmlOps, AttentionBatchIsEachSessionsAttention) {
  const int64_t d = 64, n_heads = 9, n_kv = 3;
  struct Session {
    int64_t start, t, max_len;
    std::vector<uint16_t> keys, values;
    std::vector<float> q, alone, batched;
  };
  std::vector<Session> sessions = {{4, 1, 16, {}, {}, {}, {}, {}},
                                   {130, 1, 160, {}, {}, {}, {}, {}},
                                   {30, 20, 64, {}, {}, {}, {}, {}},
                                   {201, 1, 224, {}, {}, {}, {}, {}}};
  std::mt19937 rng(13);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const uint16_t nan = Fp32ToFp16(std::numeric_limits<float>::quiet_NaN());
  for (Session& x : sessions) {
    x.keys.assign(n_kv * x.max_len * d, nan);
    x.values.assign(n_kv * x.max_len * d, nan);
    for (int64_t g = 0; g < n_kv; ++g)
      for (int64_t j = 0; j < x.start + x.t; ++j)
        for (int64_t e = 0; e < d; ++e) {
          x.keys[(g * x.max_len + j) * d + e] = Fp32ToFp16(nd(rng));
          x.values[(g * x.max_len + j) * d + e] = Fp32ToFp16(nd(rng));
        }
    x.q.resize(x.t * n_heads * d);
    for (auto& v : x.q) v = nd(rng);
    x.alone.resize(x.q.size());
    x.batched.resize(x.q.size());
  }
  AttentionShape shape{n_heads, n_kv, d, 0};
  std::vector<AttentionRows> rows;
  for (Session& x : sessions) {
    AttentionShape one = shape;
    one.cache_stride = x.max_len * d;
    Attention(x.q.data(), x.keys.data(), x.values.data(), one, x.start, x.t, x.alone.data(), 1);
    rows.push_back({x.q.data(), x.keys.data(), x.values.data(), x.max_len * d, x.start, x.t, x.batched.data()});
  }
  for (int threads : {1, 2, 3}) {
    for (Session& x : sessions) x.batched.assign(x.batched.size(), std::numeric_limits<float>::quiet_NaN());
    AttentionBatch(shape, rows.data(), static_cast<int>(rows.size()), threads);
    for (size_t n = 0; n < sessions.size(); ++n) {
      const Session& x = sessions[n];
      EXPECT_EQ(std::memcmp(x.batched.data(), x.alone.data(), x.alone.size() * sizeof(float)), 0)
          << "session " << n << ", " << threads << " threads";
      for (float v : x.alone) ASSERT_TRUE(std::isfinite(v)) << "session " << n << ": NaN past its length leaked in";
    }
  }
}

}  // namespace
}  // namespace troupe
