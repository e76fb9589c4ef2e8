// SamplingParams crosses the wire unchanged; unset fields take the C++
// defaults; unusable values are BAD_REQUEST.
#include "messages/sampling_params_proto.h"

#include <gtest/gtest.h>

namespace troupe {
namespace {

TEST(SamplingParamsProtoTest, EmptyMessageMeansDefaults) {
  WireResult<SamplingParams> p = SamplingParamsFromProto(v1::SamplingParams());
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  const SamplingParams d;
  EXPECT_EQ(p->temperature, d.temperature);
  EXPECT_EQ(p->top_p, d.top_p);  // 1, not the proto3 zero
  EXPECT_EQ(p->repeat_penalty, d.repeat_penalty);
  EXPECT_EQ(p->repeat_last_n, d.repeat_last_n);
  EXPECT_EQ(p->max_tokens, d.max_tokens);
  EXPECT_EQ(p->seed, 0u);
  EXPECT_TRUE(p->stop.empty());
  EXPECT_EQ(p->top_logprobs, -1);  // no logprobs unless asked
  EXPECT_FALSE(p->contrastive);
  EXPECT_EQ(p->contrastive_alpha, d.contrastive_alpha);  // 0.1, not the proto3 zero
  EXPECT_EQ(p->contrastive_beta, d.contrastive_beta);    // 0.5
  EXPECT_EQ(p->num_beams, 1);                            // no beam search unless asked
  EXPECT_EQ(p->length_penalty, 1.0f);
  EXPECT_EQ(p->early_stopping, EarlyStopping::kFalse);
  EXPECT_EQ(p->num_return_sequences, 1);
}

TEST(SamplingParamsProtoTest, BeamSearchRoundTrip) {
  for (EarlyStopping mode : {EarlyStopping::kFalse, EarlyStopping::kTrue, EarlyStopping::kNever}) {
    SamplingParams s;
    s.num_beams = 4;
    s.length_penalty = -0.5f;
    s.early_stopping = mode;
    s.num_return_sequences = 3;
    v1::SamplingParams wire;
    ASSERT_TRUE(wire.ParseFromString(SamplingParamsToProto(s).SerializeAsString()));
    WireResult<SamplingParams> back = SamplingParamsFromProto(wire);
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(back->num_beams, 4);
    EXPECT_EQ(back->length_penalty, -0.5f);
    EXPECT_EQ(back->early_stopping, mode);
    EXPECT_EQ(back->num_return_sequences, 3);
  }
  // The wire numbers are fixed (other implementations send them).
  EXPECT_EQ(static_cast<int>(v1::EARLY_STOPPING_NEVER), static_cast<int>(EarlyStopping::kNever));
  EXPECT_EQ(static_cast<int>(v1::EARLY_STOPPING_TRUE), static_cast<int>(EarlyStopping::kTrue));
}

TEST(SamplingParamsProtoTest, BadBeamValuesAreBadRequestNamingTheField) {
  v1::SamplingParams wire;
  wire.set_num_beams(2);
  wire.set_num_return_sequences(3);
  WireResult<SamplingParams> p = SamplingParamsFromProto(wire);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, v1::BAD_REQUEST);
  EXPECT_NE(p.error().text.find("num_return_sequences"), std::string::npos);

  wire.Clear();
  wire.set_num_beams(2);
  wire.set_early_stopping(static_cast<v1::EarlyStopping>(9));  // an unknown number from a newer sender
  p = SamplingParamsFromProto(wire);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().text.find("early_stopping"), std::string::npos);

  wire.Clear();
  wire.set_num_beams(2);
  wire.set_temperature(0.7f);
  p = SamplingParamsFromProto(wire);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().text.find("temperature"), std::string::npos);
}

TEST(SamplingParamsProtoTest, RoundTrip) {
  SamplingParams s;
  s.temperature = 0.8f;
  s.top_k = 50;
  s.top_p = 0.95f;
  s.min_p = 0.02f;
  s.top_a = 0.1f;
  s.repeat_penalty = 1.3f;
  s.repeat_last_n = -1;
  s.min_tokens = 3;
  s.max_tokens = 77;
  s.seed = 123456789012345ull;
  s.stop = {"</s>", "\n\n"};
  s.top_logprobs = 4;
  s.presence_penalty = 0.5f;
  s.frequency_penalty = -1.25f;
  s.no_repeat_ngram_size = 3;
  s.logit_bias = {{2, -100.0f}, {7, 3.5f}};
  s.contrastive = true;
  s.contrastive_alpha = 0.25f;
  s.contrastive_beta = 1.75f;
  v1::SamplingParams wire;
  ASSERT_TRUE(wire.ParseFromString(SamplingParamsToProto(s).SerializeAsString()));
  EXPECT_TRUE(wire.has_seed());
  WireResult<SamplingParams> back = SamplingParamsFromProto(wire);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->temperature, s.temperature);
  EXPECT_EQ(back->top_k, s.top_k);
  EXPECT_EQ(back->top_p, s.top_p);
  EXPECT_EQ(back->min_p, s.min_p);
  EXPECT_EQ(back->top_a, s.top_a);
  EXPECT_EQ(back->repeat_penalty, s.repeat_penalty);
  EXPECT_EQ(back->repeat_last_n, s.repeat_last_n);
  EXPECT_EQ(back->min_tokens, s.min_tokens);
  EXPECT_EQ(back->max_tokens, s.max_tokens);
  EXPECT_EQ(back->seed, s.seed);
  EXPECT_EQ(back->stop, s.stop);
  EXPECT_EQ(back->top_logprobs, s.top_logprobs);
  EXPECT_EQ(back->presence_penalty, s.presence_penalty);
  EXPECT_EQ(back->frequency_penalty, s.frequency_penalty);
  EXPECT_EQ(back->no_repeat_ngram_size, s.no_repeat_ngram_size);
  EXPECT_EQ(back->logit_bias, s.logit_bias);  // in id order, whatever the map's order
  EXPECT_TRUE(back->contrastive);
  EXPECT_EQ(back->contrastive_alpha, s.contrastive_alpha);
  EXPECT_EQ(back->contrastive_beta, s.contrastive_beta);
}

TEST(SamplingParamsProtoTest, ContrastiveUsesFields21To23) {
  // Other work on the wire takes 17..20; these numbers are part of the contract.
  const auto* d = v1::SamplingParams::descriptor();
  EXPECT_EQ(d->FindFieldByName("contrastive")->number(), 21);
  EXPECT_EQ(d->FindFieldByName("contrastive_alpha")->number(), 22);
  EXPECT_EQ(d->FindFieldByName("contrastive_beta")->number(), 23);
}

TEST(SamplingParamsProtoTest, InvalidValuesAreBadRequest) {
  v1::SamplingParams wire;
  wire.set_top_p(1.5f);
  WireResult<SamplingParams> p = SamplingParamsFromProto(wire);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, v1::BAD_REQUEST);
  EXPECT_NE(p.error().text.find("top_p"), std::string::npos);
  v1::SamplingParams many;
  many.set_top_logprobs(21);
  WireResult<SamplingParams> q = SamplingParamsFromProto(many);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().text.find("top_logprobs"), std::string::npos);

  wire.Clear();
  wire.add_stop("");
  EXPECT_EQ(SamplingParamsFromProto(wire).error().code, v1::BAD_REQUEST);
  wire.Clear();
  wire.set_max_tokens(0);
  EXPECT_EQ(SamplingParamsFromProto(wire).error().code, v1::BAD_REQUEST);
  wire.Clear();
  wire.set_contrastive_alpha(1.5f);
  WireResult<SamplingParams> a = SamplingParamsFromProto(wire);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, v1::BAD_REQUEST);
  EXPECT_NE(a.error().text.find("contrastive_alpha"), std::string::npos) << a.error().text;
  wire.Clear();
  wire.set_contrastive_beta(-1.0f);
  WireResult<SamplingParams> b = SamplingParamsFromProto(wire);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().text.find("contrastive_beta"), std::string::npos) << b.error().text;
}

}  // namespace
}  // namespace troupe
