#include "http/openai_api.h"

#include <gtest/gtest.h>

#include "messages/wire_error.h"

namespace troupe::http {
namespace {

using json = nlohmann::json;

ParsedRequest MustParse(ApiKind kind, const json& body) {
  ParsedRequest out;
  auto err = ParseRequest(kind, body.dump(), &out);
  EXPECT_FALSE(err.has_value()) << (err ? err->message : "");
  return out;
}

ApiError MustFail(ApiKind kind, const std::string& body) {
  ParsedRequest out;
  auto err = ParseRequest(kind, body, &out);
  EXPECT_TRUE(err.has_value()) << body;
  return err.value_or(ApiError{});
}

TEST(OpenAiApi, CompletionDefaultsFollowOpenAi) {
  ParsedRequest r = MustParse(ApiKind::kCompletion, {{"prompt", "hi"}});
  EXPECT_EQ(r.job.prompt(), "hi");
  EXPECT_EQ(r.job.sampling().max_tokens(), 16);
  EXPECT_FLOAT_EQ(r.job.sampling().temperature(), 1.0f);
  EXPECT_FALSE(r.job.sampling().has_seed());  // the head derives one
  EXPECT_TRUE(r.job.stream());                // the front end always needs the tokens
  EXPECT_FALSE(r.stream);
}

TEST(OpenAiApi, ACompletionPromptMayBeTokenIds) {
  ParsedRequest r = MustParse(ApiKind::kCompletion, {{"prompt", json::array({5, 0, 17})}});
  EXPECT_EQ(std::vector<int32_t>(r.job.prompt_tokens().begin(), r.job.prompt_tokens().end()),
            (std::vector<int32_t>{5, 0, 17}));
  EXPECT_TRUE(r.job.prompt().empty());
}

TEST(OpenAiApi, EchoScoresThePromptAndMayGenerateNothing) {
  ParsedRequest r = MustParse(ApiKind::kCompletion,
                              {{"prompt", json::array({5, 6})}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 0}});
  EXPECT_TRUE(r.echo);
  EXPECT_TRUE(r.drop_answer);
  EXPECT_EQ(r.job.sampling().max_tokens(), 1);
  EXPECT_EQ(r.job.sampling().prompt_logprobs(), 1);
  r = MustParse(ApiKind::kCompletion, {{"prompt", "hi"}, {"echo", true}});
  EXPECT_EQ(r.job.sampling().prompt_logprobs(), 0) << "the prompt's tokens come back even without logprobs";
  EXPECT_FALSE(r.drop_answer);
}

TEST(OpenAiApi, CompletionFieldsAndExtras) {
  ParsedRequest r = MustParse(ApiKind::kCompletion, {{"prompt", json::array({"x"})},
                                                     {"max_tokens", 7},
                                                     {"temperature", 0},
                                                     {"top_p", 0.5},
                                                     {"seed", 42},
                                                     {"stop", json::array({"a", "bc"})},
                                                     {"stream", true},
                                                     {"stream_options", {{"include_usage", true}}},
                                                     {"n", 1},
                                                     {"top_k", 3},
                                                     {"min_p", 0.1},
                                                     {"repetition_penalty", 1.2},
                                                     {"min_tokens", 2},
                                                     {"presence_penalty", 0},
                                                     {"user", "u"},
                                                     {"unknown_field", 1}});
  EXPECT_EQ(r.job.prompt(), "x");
  const v1::SamplingParams& s = r.job.sampling();
  EXPECT_EQ(s.max_tokens(), 7);
  EXPECT_EQ(s.temperature(), 0.0f);
  EXPECT_FLOAT_EQ(s.top_p(), 0.5f);
  EXPECT_EQ(s.seed(), 42u);
  ASSERT_EQ(s.stop_size(), 2);
  EXPECT_EQ(s.stop(1), "bc");
  EXPECT_EQ(s.top_k(), 3);
  EXPECT_FLOAT_EQ(s.min_p(), 0.1f);
  EXPECT_FLOAT_EQ(s.repeat_penalty(), 1.2f);
  EXPECT_EQ(s.min_tokens(), 2);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(OpenAiApi, ContrastiveExtra) {
  ParsedRequest off = MustParse(ApiKind::kCompletion, {{"prompt", "x"}});
  EXPECT_FALSE(off.job.sampling().contrastive());
  ParsedRequest on = MustParse(ApiKind::kChat, {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                                                {"contrastive", {{"alpha", 0.2}, {"beta", 1.5}}}});
  EXPECT_TRUE(on.job.sampling().contrastive());
  EXPECT_FLOAT_EQ(on.job.sampling().contrastive_alpha(), 0.2f);
  EXPECT_FLOAT_EQ(on.job.sampling().contrastive_beta(), 1.5f);
  ParsedRequest defaults = MustParse(ApiKind::kCompletion, {{"prompt", "x"}, {"contrastive", json::object()}});
  EXPECT_TRUE(defaults.job.sampling().contrastive());
  EXPECT_FLOAT_EQ(defaults.job.sampling().contrastive_alpha(), 0.1f);
  EXPECT_FLOAT_EQ(defaults.job.sampling().contrastive_beta(), 0.5f);
  EXPECT_TRUE(MustParse(ApiKind::kCompletion, {{"prompt", "x"}, {"contrastive", true}}).job.sampling().contrastive());
  EXPECT_FALSE(MustParse(ApiKind::kCompletion, {{"prompt", "x"}, {"contrastive", false}}).job.sampling().contrastive());

  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "contrastive": {"alpha": 1.5}})").param,
            "contrastive.alpha");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "contrastive": {"beta": -1}})").param,
            "contrastive.beta");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "contrastive": {"gamma": 1}})").param,
            "contrastive.gamma");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "contrastive": 0.5})").code, "invalid_type");
}

TEST(OpenAiApi, ChatMessagesInOrder) {
  ParsedRequest r = MustParse(
      ApiKind::kChat,
      {{"messages",
        json::array({{{"role", "developer"}, {"content", "be brief"}},
                     {{"role", "user"},
                      {"content", json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}})}},
                     {{"role", "assistant"}, {"content", "c"}},
                     {{"role", "user"}, {"content", "d"}}})},
       {"max_completion_tokens", 5}});
  ASSERT_EQ(r.job.chat_size(), 4);
  EXPECT_EQ(r.job.chat(0).role(), "system");
  EXPECT_EQ(r.job.chat(1).content(), "ab");
  EXPECT_EQ(r.job.chat(2).role(), "assistant");
  EXPECT_EQ(r.job.sampling().max_tokens(), 5);
  EXPECT_TRUE(r.job.prompt().empty());
}

TEST(OpenAiApi, RefusalsNameTheField) {
  EXPECT_EQ(MustFail(ApiKind::kCompletion, "{nope").code, "invalid_json");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, std::string(1000, '[')).message.find("nested") != std::string::npos, true);
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "n": 17})").param, "n");
  EXPECT_EQ(
      MustFail(ApiKind::kChat, R"({"messages": [{"role": "user", "content": "x"}], "n": 2, "session": "s"})").param,
      "n");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "max_tokens": -1})").param, "max_tokens");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "max_tokens": 1.5})").code, "invalid_type");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "max_tokens": 1.5})").message,
            "max_tokens: expected an integer, got 1.5");
  // Past 64 bits a JSON integer parses as a float: a range error, naming the value.
  const ApiError huge = MustFail(ApiKind::kCompletion, R"({"prompt": "x", "max_tokens": 1180591620717411303424})");
  EXPECT_EQ(huge.code, "invalid_value");
  EXPECT_EQ(huge.message, "max_tokens: must be between 1 and 1073741824, got 1.1805916207174113e+21");
  const ApiError seed = MustFail(ApiKind::kCompletion, R"({"prompt": "x", "seed": 1180591620717411303424})");
  EXPECT_EQ(seed.code, "invalid_value");
  EXPECT_EQ(seed.message, "seed: must fit in 64 bits, got 1.1805916207174113e+21");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "seed": 2.5})").message,
            "seed: expected an integer, got 2.5");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "temperature": "1"})").param, "temperature");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "temperature": 2.5})").param, "temperature");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "stop": ["a", 1]})").param, "stop");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "stop": ""})").param, "stop");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": ["a", "b"]})").param, "prompt");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": [[1, 2], [3]]})").param, "prompt");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": [1, -2]})").param, "prompt");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": [1, "a"]})").param, "prompt");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": ""})").param, "prompt");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "echo": true, "stream": true})").param, "echo");
  EXPECT_EQ(MustFail(ApiKind::kChat, R"({"messages": [{"role": "user", "content": "x"}], "echo": true})").param,
            "echo");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "max_tokens": 0})").param, "max_tokens");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "num_beams": 4, "stream": true})").param, "num_beams");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "num_beams": 4, "n": 2})").param, "n");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "num_beams": 2, "early_stopping": "soon"})").param,
            "early_stopping");
  ParsedRequest beams = MustParse(ApiKind::kCompletion, {{"prompt", "x"},
                                                         {"num_beams", 4},
                                                         {"num_return_sequences", 2},
                                                         {"early_stopping", "never"},
                                                         {"length_penalty", 2}});
  EXPECT_TRUE(beams.beams);
  EXPECT_EQ(beams.job.sampling().num_beams(), 4);
  EXPECT_EQ(beams.job.sampling().num_return_sequences(), 2);
  EXPECT_EQ(beams.job.sampling().early_stopping(), v1::EARLY_STOPPING_NEVER);
  EXPECT_EQ(beams.job.sampling().temperature(), 0.0f) << "greedy unless a temperature is given";
  EXPECT_EQ(MustFail(ApiKind::kChat, R"({"messages": [{"role": "user", "content": "x"}], "early_stopping": 3})").param,
            "early_stopping");
  EXPECT_EQ(MustFail(ApiKind::kCompletion, R"({"prompt": "x", "stream_options": {}})").param, "stream_options");
  EXPECT_EQ(MustFail(ApiKind::kChat, R"({"messages": []})").param, "messages");
  EXPECT_EQ(MustFail(ApiKind::kChat, R"({"messages": [{"role": "tool", "content": "x"}]})").param, "messages[0].role");
  EXPECT_EQ(MustFail(ApiKind::kChat, R"({"messages": [{"role": "user"}]})").param, "messages[0].content");
  EXPECT_EQ(MustFail(ApiKind::kChat, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})").code,
            "unsupported_parameter");
}

// Found with chat_request_fuzz (tests/fuzz/regressions/): a number too large
// for a double (1e400) made nlohmann::json throw out_of_range, not parse_error,
// through ParseRequest (std::terminate in the HTTP handler).
TEST(OpenAiApi, NumbersPastADoubleAreInvalidJson) {
  for (const char* body : {R"({"prompt": "x", "temperature": 1e400})", R"({"prompt": "x", "extra": -1e400})",
                           R"({"messages": [{"role": "user", "content": "x"}], "seed": 1e999})"}) {
    for (ApiKind kind : {ApiKind::kCompletion, ApiKind::kChat}) {
      ApiError e = MustFail(kind, body);
      EXPECT_EQ(e.status, 400) << body;
      EXPECT_EQ(e.code, "invalid_json") << body;
      EXPECT_NE(e.message.find("number overflow"), std::string::npos) << e.message;
    }
  }
}

// What the job client returns for an Error from the head.
Status FromHead(v1::ErrorCode code, const std::string& text) {
  v1::Error e;
  e.set_code(code);
  e.set_text(text);
  return StatusFromError(e);
}

TEST(OpenAiApi, HeadErrorsMapToHttp) {
  ApiError context =
      ErrorFromStatus(FromHead(v1::BAD_REQUEST, "the prompt has 9000 tokens; the model's context is 8192"));
  EXPECT_EQ(context.status, 400);
  EXPECT_EQ(context.type, "invalid_request_error");
  EXPECT_EQ(context.code, "context_length_exceeded");
  EXPECT_EQ(context.message, "the prompt has 9000 tokens; the model's context is 8192");
  ApiError bad = ErrorFromStatus(FromHead(v1::BAD_REQUEST, "top_p must be in (0, 1]"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.code, "invalid_value");
  EXPECT_EQ(bad.message, "top_p must be in (0, 1]");
  ApiError busy = ErrorFromStatus(FromHead(v1::BUSY, "the head's queue is full"));
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.code, "queue_full");
  ApiError session = ErrorFromStatus(FromHead(v1::SESSION_BUSY, "kept session 's' is running job 4"));
  EXPECT_EQ(session.status, 409);
  EXPECT_EQ(session.param, "session");
  EXPECT_EQ(session.message, "kept session 's' is running job 4");
  for (v1::ErrorCode code : {v1::NO_ROUTE, v1::UNAVAILABLE, v1::CACHE_FULL, v1::TIMEOUT}) {
    ApiError e = ErrorFromStatus(FromHead(code, "no shard serves layer 10"));
    EXPECT_EQ(e.status, 503) << ErrorCodeName(code);
    EXPECT_EQ(e.code, ErrorCodeName(code));
    EXPECT_EQ(e.type, "server_error");
    EXPECT_EQ(e.message, ErrorCodeName(code) + ": no shard serves layer 10");  // as the CLI prints it
  }
  ApiError internal = ErrorFromStatus(FromHead(v1::INTERNAL, "bug"));
  EXPECT_EQ(internal.status, 500);
  EXPECT_EQ(internal.code, "INTERNAL");
  ApiError cancelled = ErrorFromStatus(FromHead(v1::CANCELLED, "job 3 was cancelled"));
  EXPECT_EQ(cancelled.status, 500);
  EXPECT_EQ(cancelled.code, "CANCELLED");
  json body = ErrorBody(ErrorFromStatus(FromHead(v1::NO_ROUTE, "no shard")));
  EXPECT_EQ(body["error"]["code"], "NO_ROUTE");
  EXPECT_EQ(body["error"]["type"], "server_error");
}

// The code decides, never the text: a message that merely starts like a code
// name does not change the answer.
TEST(OpenAiApi, ErrorsMapByCodeNotByText) {
  EXPECT_EQ(ErrorFromStatus(Status::Internal("NO_ROUTE: looks like a route problem")).status, 500);
  EXPECT_EQ(ErrorFromStatus(Status::Internal("BAD_REQUEST: not really")).status, 500);
  EXPECT_EQ(ErrorFromStatus(FromHead(v1::UNAVAILABLE, "BAD_REQUEST: quoted")).status, 503);
}

// Failures of the client itself (no wire code carried) map by StatusCode.
TEST(OpenAiApi, LocalErrorsMapByStatusCode) {
  ApiError timeout = ErrorFromStatus(Status::DeadlineExceeded("no answer from tcp://x within 10 s"));
  EXPECT_EQ(timeout.status, 503);
  EXPECT_EQ(timeout.code, "TIMEOUT");
  EXPECT_EQ(timeout.message, "no answer from tcp://x within 10 s");
  EXPECT_EQ(ErrorFromStatus(Status::Unavailable("the link is backed up")).code, "UNAVAILABLE");
  EXPECT_EQ(ErrorFromStatus(Status::Unavailable("the link is backed up")).status, 503);
  EXPECT_EQ(ErrorFromStatus(Status::ResourceExhausted("cache")).code, "CACHE_FULL");
  ApiError invalid = ErrorFromStatus(Status::InvalidArgument("the prompt is not valid UTF-8"));
  EXPECT_EQ(invalid.status, 400);
  EXPECT_EQ(invalid.message, "the prompt is not valid UTF-8");
  EXPECT_EQ(ErrorFromStatus(Status::Cancelled("gave up")).status, 500);
  EXPECT_EQ(ErrorFromStatus(Status::IoError("poll: context terminated")).code, "INTERNAL");
  EXPECT_EQ(ErrorFromStatus(Status::IoError("poll: context terminated")).status, 500);
}

TEST(OpenAiApi, ResponsesAndChunks) {
  ResponseMeta meta{"cmpl-1", 5, "m.gguf"};
  v1::Finish f;
  f.set_reason(v1::FINISH_EOS);
  f.set_prompt_tokens(3);
  f.set_generated_tokens(4);
  json r = CompletionResponse(ApiKind::kChat, meta, "hello", f);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "hello");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"]["total_tokens"], 7);
  json c = StreamChunk(ApiKind::kCompletion, meta, "x", nullptr);
  EXPECT_EQ(c["choices"][0]["text"], "x");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  f.set_reason(v1::FINISH_LENGTH);
  EXPECT_EQ(StreamChunk(ApiKind::kChat, meta, "", &f)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(SseEvent(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  // Invalid UTF-8 never throws.
  EXPECT_NO_THROW(SseEvent(json{{"t", std::string("\xff")}}));
}

TEST(OpenAiApi, PrometheusText) {
  v1::MetricsSnapshot m;
  (*m.mutable_counters())["head/steps"] = 3;
  (*m.mutable_counters())["shard-0/steps"] = 4;
  (*m.mutable_counters())["shard-0/sessions_opened_total"] = 2;
  (*m.mutable_gauges())["shard-0/cache_bytes_in_use"] = 1024;
  (*m.mutable_gauges())["odd node/bad-name"] = 0.5;
  const std::string t = PrometheusText(m);
  EXPECT_NE(t.find("# TYPE troupe_steps_total counter\ntroupe_steps_total{node=\"head\"} 3\n"
                   "troupe_steps_total{node=\"shard-0\"} 4\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("troupe_sessions_opened_total{node=\"shard-0\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE troupe_cache_bytes_in_use gauge\n"), std::string::npos) << t;
  EXPECT_NE(t.find("troupe_bad_name{node=\"odd node\"} 0.5\n"), std::string::npos) << t;
  // Labeled names keep their labels, after the node's.
  (*m.mutable_counters())["head/handshakes_refused_total{address=\"10.0.0.7\",peer=\"shard-2\"}"] = 3;
  (*m.mutable_counters())["shard-0/step_bytes_sent_total{to=\"shard-1\"}"] = 100;
  const std::string l = PrometheusText(m);
  EXPECT_NE(l.find("# TYPE troupe_handshakes_refused_total counter\n"
                   "troupe_handshakes_refused_total{node=\"head\",address=\"10.0.0.7\",peer=\"shard-2\"} 3\n"),
            std::string::npos)
      << l;
  EXPECT_NE(l.find("troupe_step_bytes_sent_total{node=\"shard-0\",to=\"shard-1\"} 100\n"), std::string::npos) << l;
}

}  // namespace
}  // namespace troupe::http
