// OpenAI API <-> Troupe jobs: the pure half of the HTTP front end (no sockets,
// no threads). Parses the JSON bodies of POST /v1/completions and
// POST /v1/chat/completions into a v1::JobSubmit (or an OpenAI-style error
// naming the bad field), builds the response objects and stream chunks, maps
// job failures to HTTP statuses, and renders a MetricsSnapshot in the
// Prometheus text exposition format.
//
// Request fields (null = absent):
//   prompt            completions: a string, or a list holding one string
//   messages          chat: [{role: system|developer|user|assistant,
//                     content: string | [{type: "text", text}] }], in order
//   max_tokens        >= 1; default 16 (completions), 1024 (chat);
//                     max_completion_tokens is the chat alias
//   temperature 0..2 (default 1, as OpenAI; 0 = greedy), top_p (0, 1], seed,
//   stop (a string or up to 4), stream, stream_options.include_usage, n (1),
//   and the extras top_k, min_p, repeat_penalty (alias repetition_penalty),
//   min_tokens, and contrastive: true | {"alpha": 0..1, "beta": >= 0}
//   (contrastive decoding against the head's amateur model; either key
//   optional, defaults 0.1 and 0.5). presence/frequency_penalty must be 0; logprobs, echo,
//   best_of > 1, logit_bias, suffix, tools and non-text response formats are
//   refused (400, "unsupported_parameter"). `model` must be a string if
//   given; any name is served by the one model. Unknown fields are ignored.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages/troupe.pb.h"
#include "pipeline/status.h"

namespace troupe::http {

// An OpenAI error: {"error": {"message", "type", "param", "code"}} with an
// HTTP status.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string code;   // "invalid_type", "invalid_value", "unsupported_parameter", ...
  std::string param;  // the offending field; empty = null
};
nlohmann::json ErrorBody(const ApiError& error);

enum class ApiKind { kCompletion, kChat };

// n at most: each choice is a job of its own (they share the prompt's
// prefill through prefix reuse: the others start once the first has its
// first token, copying its cache).
constexpr int kMaxChoices = 16;

struct ParsedRequest {
  v1::JobSubmit job;  // stream is always set: the front end needs the text
  int n = 1;          // choices; choice i > 0 runs `job` with seed + i when a seed is given
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool logprobs = false;          // answer with logprobs (job.sampling.top_logprobs >= 0)
  bool echo = false;              // completions: the prompt (and its logprobs) before the answer
  bool drop_answer = false;       // echo with max_tokens 0: the one token generated is not returned
  bool beams = false;             // beam search: one choice per returned sequence (Token.beam_sequence)
  bool max_tokens_given = false;  // max_tokens (or max_completion_tokens) was in the body, not a default
};

// Parses and validates a request body. Rejects bodies nested deeper than 64
// levels before parsing them.
std::optional<ApiError> ParseRequest(ApiKind kind, const std::string& body, ParsedRequest* out);

// A job's failure (JobClient's Status) as an HTTP error, decided by its
// ErrorCode (WireCodeOf: the head's code it carries, else the one its
// StatusCode maps to; never read from the text): BAD_REQUEST (and local
// invalid arguments) 400 invalid_request_error, code invalid_value or
// context_length_exceeded, the message without its "BAD_REQUEST: " prefix;
// NO_ROUTE, UNAVAILABLE, CACHE_FULL and TIMEOUT (a local DeadlineExceeded
// too) 503 with that code; anything else (CANCELLED, INTERNAL, ...) 500 with
// the code's name. type is server_error but for 400.
ApiError ErrorFromStatus(const Status& status);

// "stop" (eos, stop string) or "length".
const char* FinishReasonName(v1::FinishReason reason);

struct ResponseMeta {
  std::string id;  // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;
  std::string model;
};

// Usage of one answer's choices: prompt_tokens (and cached_tokens) of the
// first, completion_tokens summed over all.
nlohmann::json Usage(const std::vector<v1::Finish>& finishes);
// The `logprobs` of a choice for these tokens (those with Token.logprob), in
// OpenAI's form: chat {content: [{token, logprob, bytes, top_logprobs}]};
// completions {tokens, token_logprobs, top_logprobs, text_offset} (character
// offsets into the concatenated token texts). A token's text is its own bytes, with
// U+FFFD where they are not whole characters.
// With `prompt` (completions' echo) its tokens come first, the first one
// with null logprob and top_logprobs (nothing precedes it).
nlohmann::json LogprobsJson(ApiKind kind, const std::vector<v1::Token>& tokens,
                            const v1::PromptLogprobs* prompt = nullptr);
// The whole answer (stream: false); `logprobs` null unless asked for.
nlohmann::json CompletionResponse(ApiKind kind, const ResponseMeta& meta, const std::string& text,
                                  const v1::Finish& finish, const nlohmann::json& logprobs = nullptr);
struct ChoiceAnswer {
  std::string text;
  v1::Finish finish;
  nlohmann::json logprobs;  // null unless asked for
};
// n choices, index i for answers[i].
nlohmann::json CompletionResponse(ApiKind kind, const ResponseMeta& meta, const std::vector<ChoiceAnswer>& answers);
// One stream chunk: `text` as delta (chat: delta.content; `role_only` sends
// delta {role: assistant} instead), finish_reason null unless `finish`.
nlohmann::json StreamChunk(ApiKind kind, const ResponseMeta& meta, const std::string& text, const v1::Finish* finish,
                           bool role_only = false, const nlohmann::json& logprobs = nullptr, int index = 0);
// The include_usage chunk: choices [] and the usage of every choice's Finish.
nlohmann::json UsageChunk(ApiKind kind, const ResponseMeta& meta, const std::vector<v1::Finish>& finishes);
// "data: <json>\n\n" (invalid UTF-8 replaced).
std::string SseEvent(const nlohmann::json& j);
std::string Dump(const nlohmann::json& j);

// GET /v1/models.
nlohmann::json ModelList(const std::string& model_id, int64_t created);

// Prometheus text format 0.0.4: every "<node>/<name>" counter as
// troupe_<name>_total{node="<node>"} (one # TYPE line per family), every
// gauge as troupe_<name>{node="<node>"}, every histogram as
// troupe_<name>_bucket{node,...,le} (cumulative), _sum and _count; names
// sanitized to [a-zA-Z0-9_:].
std::string PrometheusText(const v1::MetricsSnapshot& snapshot);

}  // namespace troupe::http
