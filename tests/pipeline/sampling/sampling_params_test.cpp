// SamplingParams::Validate: accepts the documented ranges, names the bad field.
#include "pipeline/sampling/sampling_params.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "pipeline/sampling/sampler.h"

namespace troupe {
namespace {

// Returns the Validate() status of default params changed by `edit`.
Status ValidateWith(const std::function<void(SamplingParams&)>& edit) {
  SamplingParams p;
  edit(p);
  return p.Validate();
}

void ExpectBad(const std::function<void(SamplingParams&)>& edit, const std::string& field) {
  const Status s = ValidateWith(edit);
  ASSERT_FALSE(s.ok()) << "expected an error naming " << field;
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("SamplingParams." + field), std::string::npos) << s.message();
}

TEST(SamplingParamsTest, DefaultsAreValidAndGreedy) {
  SamplingParams p;
  EXPECT_TRUE(p.Validate().ok());
  EXPECT_TRUE(p.greedy());
}

TEST(SamplingParamsTest, AcceptsBoundaryValues) {
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.temperature = -1.0f; }).ok());  // greedy
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.top_p = 1.0f; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.top_p = 1e-6f; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.min_p = 1.0f; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.top_a = 5.0f; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.repeat_last_n = -1; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.max_tokens = 1; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.min_tokens = 1000; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.contrastive_alpha = 0.0f; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.contrastive_alpha = 1.0f; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.contrastive_beta = 0.0f; }).ok());
  EXPECT_TRUE(ValidateWith([](SamplingParams& p) { p.contrastive_beta = 100.0f; }).ok());
  SamplingParams negative;
  negative.temperature = -0.5f;
  EXPECT_TRUE(negative.greedy());
}

TEST(SamplingParamsTest, RejectsEachBadField) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  ExpectBad([&](SamplingParams& p) { p.temperature = nan; }, "temperature");
  ExpectBad([&](SamplingParams& p) { p.temperature = inf; }, "temperature");
  ExpectBad([](SamplingParams& p) { p.top_k = -1; }, "top_k");
  ExpectBad([](SamplingParams& p) { p.top_p = 0.0f; }, "top_p");
  ExpectBad([](SamplingParams& p) { p.top_p = 1.5f; }, "top_p");
  ExpectBad([&](SamplingParams& p) { p.top_p = nan; }, "top_p");
  ExpectBad([](SamplingParams& p) { p.min_p = -0.1f; }, "min_p");
  ExpectBad([](SamplingParams& p) { p.min_p = 1.1f; }, "min_p");
  ExpectBad([](SamplingParams& p) { p.top_a = -1.0f; }, "top_a");
  ExpectBad([&](SamplingParams& p) { p.top_a = inf; }, "top_a");
  ExpectBad([](SamplingParams& p) { p.repeat_penalty = 0.0f; }, "repeat_penalty");
  ExpectBad([](SamplingParams& p) { p.repeat_penalty = -1.1f; }, "repeat_penalty");
  ExpectBad([](SamplingParams& p) { p.repeat_last_n = -2; }, "repeat_last_n");
  ExpectBad([](SamplingParams& p) { p.min_tokens = -1; }, "min_tokens");
  ExpectBad([](SamplingParams& p) { p.max_tokens = 0; }, "max_tokens");
  ExpectBad([](SamplingParams& p) { p.stop = {"ok", ""}; }, "stop[1]");
  ExpectBad([](SamplingParams& p) { p.contrastive_alpha = -0.01f; }, "contrastive_alpha");
  ExpectBad([](SamplingParams& p) { p.contrastive_alpha = 1.01f; }, "contrastive_alpha");
  ExpectBad([&](SamplingParams& p) { p.contrastive_alpha = nan; }, "contrastive_alpha");
  ExpectBad([](SamplingParams& p) { p.contrastive_beta = -0.5f; }, "contrastive_beta");
  ExpectBad([&](SamplingParams& p) { p.contrastive_beta = inf; }, "contrastive_beta");
  ExpectBad([&](SamplingParams& p) { p.contrastive_beta = nan; }, "contrastive_beta");
}

TEST(SamplingParamsTest, MessageCarriesTheValue) {
  const Status s = ValidateWith([](SamplingParams& p) { p.top_p = 1.5f; });
  EXPECT_NE(s.message().find("1.5"), std::string::npos) << s.message();
}

TEST(SamplingParamsTest, SamplerCreateRejectsBadParams) {
  SamplingParams p;
  p.top_k = -3;
  Result<Sampler> bad = Sampler::Create(p, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("top_k"), std::string::npos);
  EXPECT_TRUE(Sampler::Create(SamplingParams{}, {2}).ok());
}

}  // namespace
}  // namespace troupe
