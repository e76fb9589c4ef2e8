// libFuzzer target: an HTTP request body through http::ParseRequest, as
// POST /v1/chat/completions and as POST /v1/completions, then what the head
// does with an accepted job's text: the chat messages rendered by a ChatML
// template and tokenized (the tiny vocabulary of tests/pipeline/text/
// tiny_spec.h, rendered and encoded directly; the head goes through
// PromptTokens in pipeline/text/prompt.cpp). Input: the body's bytes.
// Properties checked (a violation aborts): a refusal is a 400
// invalid_request_error with a message and a code, whose ErrorBody dumps; an
// accepted request is stream-set, has 1..kMaxChoices choices, a chat of
// system/user/assistant messages (chat) or a non-empty prompt or token ids
// (completions), sampling parameters that convert back and validate, and
// travels in an envelope the wire decoder accepts; parsing is deterministic;
// the rendered chat holds every message and round-trips through the tokenizer.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "http/openai_api.h"
#include "messages/envelope_codec.h"
#include "messages/sampling_params_proto.h"
#include "pipeline/text/chat_template.h"
#include "pipeline/text/tokenizer.h"
#include "tests/pipeline/text/tiny_spec.h"

namespace troupe::fuzz {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "chat_request_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

// Deterministic serialization (map entries sorted), so equal jobs give equal
// bytes.
std::string Canonical(const google::protobuf::Message& m) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&out);
  }
  return bytes;
}

const Tokenizer& TinyTokenizer() {
  static const std::unique_ptr<Tokenizer> tok = Tokenizer::Create(testing::TinySpec()).value();
  return *tok;
}

void CheckRendered(const v1::JobSubmit& job) {
  // No template in the "model": the built-in ChatML one (TinySpec has its markers).
  static const ChatTemplate tmpl = ChatTemplate::Create("", TinyTokenizer()).value();
  std::vector<ChatMessage> chat;
  for (const v1::ChatMessage& m : job.chat()) chat.push_back({m.role(), m.content()});
  Result<std::string> prompt = tmpl.Render(chat, /*add_generation_prompt=*/true);
  Check(prompt.ok(), "an accepted chat renders");
  for (const ChatMessage& m : chat)
    Check(prompt->find(m.content) != std::string::npos, "the prompt holds every message");
  const std::vector<int32_t> ids = TinyTokenizer().Encode(*prompt, false, /*parse_special=*/true);
  for (int32_t id : ids) Check(id >= 0 && id < TinyTokenizer().vocab_size(), "prompt ids are in the vocabulary");
  Check(TinyTokenizer().Decode(ids) == *prompt, "the prompt round-trips through the tokenizer");
}

void CheckAccepted(http::ApiKind kind, const std::string& body, const http::ParsedRequest& r) {
  const v1::JobSubmit& job = r.job;
  Check(job.stream(), "accepted jobs stream");
  Check(r.n >= 1 && r.n <= http::kMaxChoices, "1..kMaxChoices choices");
  Check(!r.include_usage || r.stream, "include_usage only when streaming");
  if (kind == http::ApiKind::kChat) {
    Check(job.chat_size() >= 1 && job.prompt().empty() && job.prompt_tokens_size() == 0, "a chat job is a chat");
    for (const v1::ChatMessage& m : job.chat()) {
      Check(m.role() == "system" || m.role() == "user" || m.role() == "assistant", "roles are known");
    }
    CheckRendered(job);
  } else {
    Check(job.chat_size() == 0, "a completion has no chat");
    Check(!job.prompt().empty() || job.prompt_tokens_size() > 0, "a completion has a prompt");
    for (int32_t id : job.prompt_tokens()) Check(id >= 0, "prompt token ids are not negative");
  }
  WireResult<SamplingParams> params = SamplingParamsFromProto(job.sampling());
  Check(params.ok(), "accepted sampling parameters convert back");
  Check(params->Validate().ok(), "accepted sampling parameters validate");
  Check(params->max_tokens >= 1, "at least one token is asked for");
  Check(r.logprobs == (params->top_logprobs >= 0), "logprobs iff top_logprobs >= 0");
  Check(r.beams == params->beam_search(), "beams iff beam search");
  Check(!job.keep() || !job.session().empty(), "keep only with a session name");

  v1::Envelope e = NewEnvelope(1);
  *e.mutable_job_submit() = job;
  const std::string bytes = EncodeEnvelope(e);
  WireResult<v1::Envelope> decoded = DecodeEnvelope(bytes.data(), bytes.size(), bytes.size());
  Check(decoded.ok(), "an accepted job travels to the head");
  Check(Canonical(decoded->job_submit()) == Canonical(job), "the job arrives unchanged");

  http::ParsedRequest again;
  Check(!http::ParseRequest(kind, body, &again), "parsing is deterministic");
  Check(Canonical(again.job) == Canonical(job) && again.n == r.n && again.stream == r.stream,
        "parsing twice gives the same job");
}

}  // namespace
}  // namespace troupe::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 logs otherwise
    return true;
  }();
  (void)quiet;
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (http::ApiKind kind : {http::ApiKind::kChat, http::ApiKind::kCompletion}) {
    http::ParsedRequest request;
    std::optional<http::ApiError> error = http::ParseRequest(kind, body, &request);
    if (error) {
      fuzz::Check(error->status == 400 && error->type == "invalid_request_error", "refusals are 400s");
      fuzz::Check(!error->message.empty() && !error->code.empty(), "a refusal has a message and a code");
      fuzz::Check(!http::Dump(http::ErrorBody(*error)).empty(), "the error body dumps");
      continue;
    }
    fuzz::CheckAccepted(kind, body, request);
  }
  return 0;
}
