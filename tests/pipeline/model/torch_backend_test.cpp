// The torch backend (torch_decoder.cpp, torch_lm_head.cpp) on the real model,
// on every device this build sees: the CPU always, "cuda:0" where a CUDA
// libtorch sees a GPU (skipped, naming why, elsewhere). Close to the
// quantized kernels (which round activations to 8 bits, so "close" is a few
// percent: the exact-math check is tests/python/test_torch_backend.py), and
// the properties the ring relies on: spans compose exactly, sessions batched
// together equal sessions alone, a prefill equals step-by-step decoding, a
// copied or beam-reordered cache continues as the original — within the
// dtype's rounding; a cache too large for the device is an error.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>

#include "pipeline/format/model_source.h"
#include "pipeline/model/beam_caches.h"
#include "pipeline/model/decoder.h"
#include "pipeline/model/embedding.h"
#include "pipeline/model/lm_head.h"
#include "pipeline/model/torch_device.h"

namespace troupe {
namespace {

TEST(ResolveBackendTest, NamesWhatItCannotUse) {
  auto kernels = ResolveBackend(ModelOptions{});
  ASSERT_TRUE(kernels.ok());
  EXPECT_EQ(kernels->backend, Backend::kKernels);
  EXPECT_EQ(kernels->Describe(), "kernels (cpu)");
  ModelOptions torch;
  torch.backend = "torch";
  auto cpu = ResolveBackend(torch);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->Describe(), "torch (cpu, f32)");
  torch.dtype = "bf16";
  EXPECT_EQ(ResolveBackend(torch)->dtype, "bf16");

  ModelOptions bad;
  bad.backend = "tpu";
  EXPECT_NE(ResolveBackend(bad).status().message().find("'tpu'"), std::string::npos);
  bad = ModelOptions{};
  bad.device = "gpu0";
  EXPECT_NE(ResolveBackend(bad).status().message().find("'gpu0'"), std::string::npos);
  bad = ModelOptions{};
  bad.backend = "torch";
  bad.dtype = "int4";
  EXPECT_NE(ResolveBackend(bad).status().message().find("'int4'"), std::string::npos);
  bad = ModelOptions{};
  bad.dtype = "bf16";  // the kernels keep the file's blocks
  EXPECT_EQ(ResolveBackend(bad).status().code(), StatusCode::kInvalidArgument);
  bad = ModelOptions{};
  bad.backend = "kernels";
  bad.device = "cuda:0";
  EXPECT_NE(ResolveBackend(bad).status().message().find("CPU only"), std::string::npos);
  EXPECT_EQ(NormalizeDevice("cuda").value(), "cuda:0");
  if (!CudaAvailable()) {
    bad = ModelOptions{};
    bad.device = "cuda:0";
    Status st = ResolveBackend(bad).status();
    EXPECT_EQ(st.code(), StatusCode::kUnsupported);
    EXPECT_NE(st.message().find("cuda:0"), std::string::npos) << st.message();
  }
}

// One device (and its default dtype) per test instance.
class TorchBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    auto src = ModelSource::Open(TROUPE_DEFAULT_MODEL);
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    source_ = std::move(src).value();
    embedding_ = Embedding::Load(*source_).value();
    kernels_ = Decoder::Load(*source_, 0, 30, ModelOptions{2}).value();
    kernel_head_ = LmHead::Load(*source_, ModelOptions{2}).value();
  }
  static void TearDownTestSuite() {
    kernel_head_.reset();
    kernels_.reset();
    embedding_.reset();
    source_.reset();
  }
  void SetUp() override {
    if (GetParam() != "cpu" && !CudaAvailable())
      GTEST_SKIP() << GetParam() << ": " << CheckDeviceAvailable(GetParam()).message();
  }

  ModelOptions Options() const {
    ModelOptions o{2};
    o.backend = "torch";
    o.device = GetParam();
    return o;
  }
  bool f32() const { return GetParam() == "cpu"; }
  std::unique_ptr<Decoder> Load(int64_t begin, int64_t end) {
    auto d = Decoder::Load(*source_, begin, end, Options());
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? std::move(d).value() : nullptr;
  }
  at::Tensor Embed(const std::vector<int32_t>& ids) { return embedding_->Forward(ids).value(); }
  std::unique_ptr<KvCache> Cache(const Decoder& d, int64_t max_length) {
    return KvCache::Create(d.cache_shape(), max_length).value();
  }
  // |a - b| / |b| over the whole tensor.
  static double Relative(const at::Tensor& a, const at::Tensor& b) {
    return (a - b).norm().item<double>() / b.norm().item<double>();
  }
  // The tolerance of "equal up to the dtype's rounding" for batching and
  // prefill, which change the shapes of the products (and so their order).
  double Rounding() const { return f32() ? 1e-5 : 2e-2; }

  static std::unique_ptr<ModelSource> source_;
  static std::unique_ptr<Embedding> embedding_;
  static std::unique_ptr<Decoder> kernels_;
  static std::unique_ptr<LmHead> kernel_head_;
};
std::unique_ptr<ModelSource> TorchBackendTest::source_;
std::unique_ptr<Embedding> TorchBackendTest::embedding_;
std::unique_ptr<Decoder> TorchBackendTest::kernels_;
std::unique_ptr<LmHead> TorchBackendTest::kernel_head_;

TEST_P(TorchBackendTest, HiddenStatesAndLogitsAreCloseToTheKernels) {
  auto dec = Load(0, 30);
  ASSERT_NE(dec, nullptr);
  EXPECT_EQ(dec->cache_shape().device, NormalizeDevice(GetParam()).value());
  auto head = LmHead::Load(*source_, Options());
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  const std::vector<int32_t> ids = {504, 3458, 282, 4649, 314, 253, 19556, 905, 28, 30};
  auto ck = KvCache::Create(kernels_->cache_shape(), 16).value();
  auto ct = Cache(*dec, 16);
  at::Tensor hk = Embed(ids), ht = Embed(ids);
  ASSERT_TRUE(kernels_->Forward(hk, {{ck.get(), 10}}).ok());
  Status st = dec->Forward(ht, {{ct.get(), 10}});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ct->length(), 10);
  ASSERT_TRUE(ht.is_cpu());
  const double rel = Relative(ht, hk);
  std::cout << dec->Describe() << ": hidden state relative difference from the kernels " << rel << "\n";
  EXPECT_LT(rel, 0.05);
  at::Tensor lk = kernel_head_->Forward(hk).value();
  auto lt = (*head)->Forward(ht);
  ASSERT_TRUE(lt.ok()) << lt.status().ToString();
  EXPECT_TRUE(lt->is_cpu());
  EXPECT_EQ(lt->sizes(), lk.sizes());
  EXPECT_GE(lt->argmax(-1).eq(lk.argmax(-1)).sum().item<int64_t>(), 8) << lt->argmax(-1) << lk.argmax(-1);
  // One decode step more, against the filled caches.
  at::Tensor sk = Embed({42}), stt = Embed({42});
  ASSERT_TRUE(kernels_->Forward(sk, {{ck.get(), 1}}).ok());
  ASSERT_TRUE(dec->Forward(stt, {{ct.get(), 1}}).ok());
  EXPECT_LT(Relative(stt, sk), 0.05);
}

TEST_P(TorchBackendTest, SpansComposeToTheWholeModelExactly) {
  auto whole = Load(0, 30), first = Load(0, 11), second = Load(11, 30);
  const std::vector<int32_t> ids = {504, 3458, 282, 4649};
  auto cw = Cache(*whole, 8), c1 = Cache(*first, 8), c2 = Cache(*second, 8);
  at::Tensor hw = Embed(ids), hs = Embed(ids);
  ASSERT_TRUE(whole->Forward(hw, {{cw.get(), 4}}).ok());
  ASSERT_TRUE(first->Forward(hs, {{c1.get(), 4}}).ok());
  ASSERT_TRUE(second->Forward(hs, {{c2.get(), 4}}).ok());
  EXPECT_TRUE(at::equal(hw, hs));
  // A cache for other layers is refused.
  at::Tensor h = Embed({1});
  EXPECT_EQ(second->Forward(h, {{c1.get(), 1}}).code(), StatusCode::kInvalidArgument);
}

TEST_P(TorchBackendTest, BatchedSessionsEqualSessionsAloneUpToRounding) {
  auto dec = Load(0, 30);
  const std::vector<int32_t> a = {504, 3458, 282, 4649, 314}, b = {19556, 905, 28};
  auto ca = Cache(*dec, 16), cb = Cache(*dec, 16), ca2 = Cache(*dec, 16), cb2 = Cache(*dec, 16);
  at::Tensor ha = Embed(a), hb = Embed(b);
  ASSERT_TRUE(dec->Forward(ha, {{ca.get(), 5}}).ok());
  ASSERT_TRUE(dec->Forward(hb, {{cb.get(), 3}}).ok());
  at::Tensor hab = at::cat({Embed(a), Embed(b)}).contiguous();
  ASSERT_TRUE(dec->Forward(hab, {{ca2.get(), 5}, {cb2.get(), 3}}).ok());
  EXPECT_LT(Relative(hab.slice(0, 0, 5), ha), Rounding());
  EXPECT_LT(Relative(hab.slice(0, 5, 8), hb), Rounding());
  // A decode step of both in one batch, against caches of different lengths.
  at::Tensor sa = Embed({28}), sb = Embed({30});
  ASSERT_TRUE(dec->Forward(sa, {{ca.get(), 1}}).ok());
  ASSERT_TRUE(dec->Forward(sb, {{cb.get(), 1}}).ok());
  at::Tensor sab = at::cat({Embed({28}), Embed({30})}).contiguous();
  ASSERT_TRUE(dec->Forward(sab, {{ca2.get(), 1}, {cb2.get(), 1}}).ok());
  EXPECT_LT(Relative(sab.slice(0, 0, 1), sa), Rounding());
  EXPECT_LT(Relative(sab.slice(0, 1, 2), sb), Rounding());
  EXPECT_EQ(ca2->length(), 6);
  EXPECT_EQ(cb2->length(), 4);
}

TEST_P(TorchBackendTest, PrefillEqualsStepByStepUpToRounding) {
  auto dec = Load(0, 30);
  const std::vector<int32_t> ids = {504, 3458, 282, 4649, 314, 253};
  auto c1 = Cache(*dec, 8), c2 = Cache(*dec, 8);
  at::Tensor all = Embed(ids);
  ASSERT_TRUE(dec->Forward(all, {{c1.get(), 6}}).ok());
  // A prefill after cached positions: the causal mask is offset by the cache.
  auto c3 = Cache(*dec, 8);
  at::Tensor head = Embed({504, 3458}), tail = Embed({282, 4649, 314, 253});
  ASSERT_TRUE(dec->Forward(head, {{c3.get(), 2}}).ok());
  ASSERT_TRUE(dec->Forward(tail, {{c3.get(), 4}}).ok());
  EXPECT_LT(Relative(tail, all.slice(0, 2, 6)), Rounding());
  for (size_t i = 0; i < ids.size(); ++i) {
    at::Tensor one = Embed({ids[i]});
    ASSERT_TRUE(dec->Forward(one, {{c2.get(), 1}}).ok());
    EXPECT_LT(Relative(one, all.slice(0, i, i + 1)), Rounding()) << "position " << i;
  }
}

TEST_P(TorchBackendTest, CopiedAndReorderedCachesContinueAsTheOriginal) {
  auto dec = Load(0, 30);
  const std::vector<int32_t> ids = {504, 3458, 282, 4649, 314, 253};
  auto original = Cache(*dec, 10), copy = Cache(*dec, 10);
  at::Tensor h = Embed(ids);
  ASSERT_TRUE(dec->Forward(h, {{original.get(), 6}}).ok());
  ASSERT_TRUE(copy->CopyFrom(*original).ok());
  EXPECT_EQ(copy->length(), 6);
  at::Tensor s1 = Embed({28}), s2 = Embed({28});
  ASSERT_TRUE(dec->Forward(s1, {{original.get(), 1}}).ok());
  ASSERT_TRUE(dec->Forward(s2, {{copy.get(), 1}}).ok());
  EXPECT_TRUE(at::equal(s1, s2));
  // Beam rows: both take row 0's history; row 1's cache is refilled from it.
  std::vector<std::unique_ptr<KvCache>> rows;
  rows.push_back(std::move(original));
  rows.push_back(Cache(*dec, 10));
  ASSERT_TRUE(rows[1]->CopyPrefix(*rows[0], 2).ok());  // some other history
  auto copies = ReorderBeamCaches({0, 0}, &rows);
  ASSERT_TRUE(copies.ok()) << copies.status().ToString();
  EXPECT_EQ(*copies, 1);
  EXPECT_EQ(rows[1]->length(), 7);
  at::Tensor both = at::cat({Embed({30}), Embed({30})}).contiguous();
  ASSERT_TRUE(dec->Forward(both, {{rows[0].get(), 1}, {rows[1].get(), 1}}).ok());
  EXPECT_TRUE(at::equal(both.slice(0, 0, 1), both.slice(0, 1, 2)));
}

TEST_P(TorchBackendTest, ACacheLargerThanTheDeviceIsAnErrorNotACrash) {
  auto dec = Load(0, 30);
  auto huge = KvCache::Create(dec->cache_shape(), int64_t{1} << 34);  // ~ 10^15 bytes
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find(NormalizeDevice(GetParam()).value()), std::string::npos)
      << huge.status().message();
  // And the decoder goes on serving.
  auto cache = Cache(*dec, 4);
  at::Tensor h = Embed({1, 2});
  EXPECT_TRUE(dec->Forward(h, {{cache.get(), 2}}).ok());
}

INSTANTIATE_TEST_SUITE_P(Devices, TorchBackendTest, ::testing::Values("cpu", "cuda:0"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "cpu" ? std::string("cpu") : std::string("cuda0");
                         });

}  // namespace
}  // namespace troupe
