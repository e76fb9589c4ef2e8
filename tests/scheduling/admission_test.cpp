// Admission: every refusal, in order, and what an admitted job carries.
#include "scheduling/admission.h"

#include <gtest/gtest.h>

namespace troupe::scheduling {
namespace {

// One token per byte of the prompt, or of each message's content; a prompt
// "fail" does not tokenize.
Result<std::vector<int32_t>> ByteTokens(const PromptRequest& r) {
  if (r.prompt == "fail") return Status::InvalidArgument("cannot tokenize");
  std::string text = r.prompt;
  for (const ChatMessage& m : r.messages) text += m.content;
  return std::vector<int32_t>(text.begin(), text.end());
}

// A model of `max_positions` positions and 256 tokens, with an amateur when named.
AdmissionLimits Limits(int64_t max_positions, const std::string& amateur_model = "") {
  AdmissionLimits l;
  l.max_positions = max_positions;
  l.vocab = 256;
  l.amateur_model = amateur_model;
  return l;
}

v1::JobSubmit Submit(const std::string& prompt) {
  v1::JobSubmit s;
  s.set_prompt(prompt);
  s.mutable_sampling()->set_max_tokens(4);
  return s;
}

TEST(AdmissionTest, AdmitsAPrompt) {
  v1::JobSubmit s = Submit("abc");
  s.set_stream(true);
  WireResult<AdmittedJob> job = Admit(s, ByteTokens, Limits(16));
  ASSERT_TRUE(job.ok()) << job.error().text;
  EXPECT_EQ(job->prompt, (std::vector<int32_t>{'a', 'b', 'c'}));
  EXPECT_EQ(job->params.max_tokens, 4);
  EXPECT_FALSE(job->seed_given);
  EXPECT_TRUE(job->stream);
  s.mutable_sampling()->set_seed(3);
  job = Admit(s, ByteTokens, Limits(16));
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(job->seed_given);
  EXPECT_EQ(job->params.seed, 3u);
}

TEST(AdmissionTest, AdmitsAChatAsAConversation) {
  v1::JobSubmit s = Submit("");
  s.set_system("be brief");
  v1::ChatMessage* m = s.add_chat();
  m->set_role("user");
  m->set_content("hi");
  bool seen = false;
  auto tokenize = [&](const PromptRequest& r) {
    seen = r.chat && r.system == "be brief" && r.messages.size() == 1 && r.messages[0].role == "user";
    return ByteTokens(r);
  };
  ASSERT_TRUE(Admit(s, tokenize, Limits(16)).ok());
  EXPECT_TRUE(seen);
}

TEST(AdmissionTest, TokenIdsAndKeptSessions) {
  v1::JobSubmit s = Submit("");
  s.add_prompt_tokens(7);
  s.add_prompt_tokens(0);
  WireResult<AdmittedJob> job = Admit(s, ByteTokens, Limits(16));
  ASSERT_TRUE(job.ok()) << job.error().text;
  EXPECT_EQ(job->prompt, (std::vector<int32_t>{7, 0}));

  v1::JobSubmit open = Submit("hi");
  open.set_session("chat-1");
  open.set_keep(true);
  open.set_max_length(12);
  job = Admit(open, ByteTokens, Limits(16));
  ASSERT_TRUE(job.ok()) << job.error().text;
  EXPECT_EQ(job->session, "chat-1");
  EXPECT_TRUE(job->keep);
  EXPECT_EQ(job->max_length, 12);

  // A continuing chat turn is tokenized as a continuation.
  v1::JobSubmit next = Submit("");
  next.set_session("chat-1");
  next.add_chat()->set_role("user");
  bool continuation = false;
  auto tokenize = [&](const PromptRequest& r) {
    continuation = r.continuation;
    return Result<std::vector<int32_t>>(std::vector<int32_t>{1, 2});
  };
  job = Admit(next, tokenize, Limits(16));
  ASSERT_TRUE(job.ok()) << job.error().text;
  EXPECT_TRUE(continuation);
  EXPECT_TRUE(job->chat_continuation);
}

TEST(AdmissionTest, RefusesWhatCannotRun) {
  auto refusal = [](const v1::JobSubmit& s, int64_t max_positions = 16) {
    WireResult<AdmittedJob> r = Admit(s, ByteTokens, Limits(max_positions));
    EXPECT_FALSE(r.ok());
    return r.ok() ? WireError{} : r.error();
  };
  v1::JobSubmit keep = Submit("abc");
  keep.set_keep(true);
  EXPECT_EQ(refusal(keep).text, "keep needs a session name");
  v1::JobSubmit name = Submit("abc");
  name.set_session("two words");
  EXPECT_EQ(refusal(name).text, "kept session names are printable ASCII without spaces");
  v1::JobSubmit length = Submit("abc");
  length.set_session("s");
  length.set_max_length(8);
  EXPECT_EQ(refusal(length).text, "max_length is chosen when a kept session opens (with keep)");
  length.set_keep(true);
  length.set_max_length(17);
  EXPECT_EQ(refusal(length).text, "max_length 17 is above the model's context (16)");

  v1::JobSubmit beams = Submit("abc");
  beams.set_session("s");
  beams.mutable_sampling()->set_num_beams(2);
  EXPECT_NE(refusal(beams).text.find("beam search does not run in a kept session"), std::string::npos);

  v1::JobSubmit ids = Submit("");
  ids.add_prompt_tokens(5);
  ids.add_prompt_tokens(256);
  EXPECT_EQ(refusal(ids).text, "prompt token 1 is 256, not in the vocabulary [0, 256)");
  ids.set_prompt("abc");
  EXPECT_EQ(refusal(ids).text, "a job has one of a prompt, chat messages or prompt token ids");

  v1::JobSubmit params = Submit("abc");
  params.mutable_sampling()->set_max_tokens(0);
  EXPECT_NE(refusal(params).code, v1::ERROR_CODE_UNSPECIFIED);

  v1::JobSubmit both = Submit("abc");
  both.add_chat()->set_role("user");
  EXPECT_EQ(refusal(both).text, "a job has one of a prompt, chat messages or prompt token ids");

  v1::JobSubmit role = Submit("");
  role.add_chat()->set_role("user");
  role.add_chat()->set_role("robot");
  EXPECT_EQ(refusal(role).text, "chat message 1: unknown role 'robot' (system, user, assistant)");

  EXPECT_EQ(refusal(Submit("fail")).code, v1::BAD_REQUEST);
  EXPECT_NE(refusal(Submit("fail")).text.find("cannot tokenize"), std::string::npos);

  const WireError long_prompt = refusal(Submit("0123456789"), 10);
  EXPECT_EQ(long_prompt.code, v1::BAD_REQUEST);
  EXPECT_EQ(long_prompt.text, "the prompt has 10 tokens; the model's context is 10");
  EXPECT_TRUE(Admit(Submit("012345678"), ByteTokens, Limits(10)).ok());
}

TEST(AdmissionTest, ContrastiveNeedsTheHeadsAmateur) {
  v1::JobSubmit s = Submit("abc");
  s.mutable_sampling()->set_contrastive(true);
  WireResult<AdmittedJob> refused = Admit(s, ByteTokens, Limits(16));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, v1::BAD_REQUEST);
  EXPECT_NE(refused.error().text.find("amateur model"), std::string::npos) << refused.error().text;
  WireResult<AdmittedJob> job = Admit(s, ByteTokens, Limits(16, "/models/small.gguf"));
  ASSERT_TRUE(job.ok()) << job.error().text;
  EXPECT_TRUE(job->params.contrastive);
  EXPECT_EQ(job->params.contrastive_alpha, 0.1f);
  // Bad alpha is the parameter's error, whatever the head has.
  s.mutable_sampling()->set_contrastive_alpha(2.0f);
  EXPECT_NE(Admit(s, ByteTokens, Limits(16, "/models/small.gguf")).error().text.find("contrastive_alpha"),
            std::string::npos);
  // Without contrastive, a head with no amateur admits as before.
  EXPECT_TRUE(Admit(Submit("abc"), ByteTokens, Limits(16)).ok());
}

}  // namespace
}  // namespace troupe::scheduling
