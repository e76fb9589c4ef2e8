#include "http/openai_api.h"

#include "pipeline/text/stream_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "messages/sampling_params_proto.h"
#include "messages/wire_error.h"
#include "pipeline/sampling/sampling_params.h"

namespace troupe::http {
namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;
constexpr size_t kMaxStops = 4;
constexpr int kDefaultCompletionTokens = 16;
constexpr int kDefaultChatTokens = 1024;

ApiError Invalid(const std::string& param, const std::string& message, const std::string& code = "invalid_value") {
  ApiError e;
  e.status = 400;
  e.message = param.empty() ? message : param + ": " + message;
  e.code = code;
  e.param = param;
  return e;
}

ApiError WrongType(const std::string& param, const char* expected, const json& got) {
  return Invalid(param, std::string("expected ") + expected + ", got " + got.type_name(), "invalid_type");
}

ApiError Unsupported(const std::string& param, const std::string& why) {
  return Invalid(param, why, "unsupported_parameter");
}

// Deeper than kMaxDepth brackets outside strings: refused before parsing.
bool TooDeep(const std::string& body) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// The field, or nullptr when absent or null.
const json* Field(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<ApiError> ReadNumber(const json& body, const char* key, double lo, double hi,
                                   std::optional<double>* out) {
  const json* v = Field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return WrongType(key, "a number", *v);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    return Invalid(key, "must be between " + json(lo).dump() + " and " + json(hi).dump() + ", got " + v->dump());
  }
  *out = x;
  return std::nullopt;
}

// For a float where an integer belongs (JSON has one number type, and an
// integer past 64 bits parses as a float): `range` when the value is whole
// but outside [lo, hi], else "expected an integer"; both name the value.
ApiError NotAnInteger(const std::string& key, const json& v, double lo, double hi, const std::string& range) {
  const double d = v.get<double>();
  if (std::isfinite(d) && d == std::floor(d) && (d < lo || d > hi)) return Invalid(key, range + ", got " + v.dump());
  return Invalid(key, "expected an integer, got " + v.dump(), "invalid_type");
}

std::optional<ApiError> ReadInt(const json& body, const char* key, int64_t lo, int64_t hi,
                                std::optional<int64_t>* out) {
  const json* v = Field(body, key);
  if (!v) return std::nullopt;
  if (v->is_number_float()) {
    return NotAnInteger(key, *v, static_cast<double>(lo), static_cast<double>(hi),
                        "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  if (!v->is_number_integer()) return WrongType(key, "an integer", *v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return Invalid(key, "must be at most " + std::to_string(hi) + ", got " + v->dump());
  }
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) {
    return Invalid(key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + v->dump());
  }
  *out = x;
  return std::nullopt;
}

std::optional<ApiError> ReadBool(const json& body, const char* key, bool* out) {
  const json* v = Field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return WrongType(key, "a boolean", *v);
  *out = v->get<bool>();
  return std::nullopt;
}

// Troupe's extra `contrastive`: true (default alpha and beta), false, or
// {"alpha": 0..1, "beta": >= 0} with either key optional.
std::optional<ApiError> ReadContrastive(const json& body, SamplingParams* params) {
  const json* v = Field(body, "contrastive");
  if (!v) return std::nullopt;
  if (v->is_boolean()) {
    params->contrastive = v->get<bool>();
    return std::nullopt;
  }
  if (!v->is_object()) return WrongType("contrastive", "an object {\"alpha\", \"beta\"} or a boolean", *v);
  for (const auto& item : v->items()) {
    if (item.key() != "alpha" && item.key() != "beta") {
      return Invalid("contrastive." + item.key(), "unknown field (contrastive takes alpha and beta)");
    }
  }
  params->contrastive = true;
  for (const char* key : {"alpha", "beta"}) {
    std::optional<double> x;
    if (auto e = ReadNumber(*v, key, 0, key[0] == 'a' ? 1 : 1e6, &x)) {
      e->param = std::string("contrastive.") + key;
      e->message = "contrastive." + e->message;
      return e;
    }
    if (x) (key[0] == 'a' ? params->contrastive_alpha : params->contrastive_beta) = static_cast<float>(*x);
  }
  return std::nullopt;
}

// A string content, or a list of {type: "text", text} parts joined.
std::optional<ApiError> ReadContent(const json& v, const std::string& param, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return WrongType(param, "a string or a list of text parts", v);
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const json& part = v[i];
    const std::string pp = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) return WrongType(pp, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) return Invalid(pp + ".type", "missing or not a string");
    if (*type != "text") return Unsupported(pp + ".type", "only \"text\" parts are supported, got " + type->dump());
    auto text = part.find("text");
    if (text == part.end() || !text->is_string()) return Invalid(pp + ".text", "missing or not a string");
    *out += text->get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> ParseMessages(const json& body, v1::JobSubmit* job) {
  const json* v = Field(body, "messages");
  if (!v) return Invalid("messages", "is required", "missing_required_parameter");
  if (!v->is_array()) return WrongType("messages", "a list of messages", *v);
  if (v->empty()) return Invalid("messages", "must hold at least one message");
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return WrongType(param, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || role->is_null())
      return Invalid(param + ".role", "is required", "missing_required_parameter");
    if (!role->is_string()) return WrongType(param + ".role", "a string", *role);
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant") {
      return Unsupported(param + ".role", "unsupported role " + role->dump() + " (system, developer, user, assistant)");
    }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null() && !m["tool_calls"].empty()) {
      return Unsupported(param + ".tool_calls", "tool calls are not supported");
    }
    // As OpenAI: only an assistant turn may have no content (or null).
    std::string content;
    auto c = m.find("content");
    if (c == m.end() || c->is_null()) {
      if (r != "assistant") {
        return Invalid(param + ".content", c == m.end() ? "is required" : "must not be null for role '" + r + "'",
                       "missing_required_parameter");
      }
    } else if (auto err = ReadContent(*c, param + ".content", &content)) {
      return err;
    }
    v1::ChatMessage* out = job->add_chat();
    out->set_role(r);
    out->set_content(content);
  }
  return std::nullopt;
}

std::optional<ApiError> ParsePrompt(const json& body, v1::JobSubmit* job) {
  const json* v = Field(body, "prompt");
  if (!v) return Invalid("prompt", "is required", "missing_required_parameter");
  if (v->is_string()) {
    job->set_prompt(v->get<std::string>());
  } else if (v->is_array() && !v->empty() && (*v)[0].is_number_integer()) {
    // Token ids, as OpenAI's API takes them (the head checks the vocabulary).
    for (const json& id : *v) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
        return Invalid("prompt", "a list of token ids holds only non-negative integers");
      }
      job->add_prompt_tokens(static_cast<int32_t>(id.get<int64_t>()));
    }
    return std::nullopt;
  } else if (v->is_array()) {
    if (v->size() != 1 || !(*v)[0].is_string()) {
      return Unsupported("prompt",
                         "a list is accepted only when it holds exactly one string or only token ids "
                         "(batches are not supported); got a list of " +
                             std::to_string(v->size()) +
                             (v->empty() ? "" : std::string(" starting with a ") + (*v)[0].type_name()));
    }
    job->set_prompt((*v)[0].get<std::string>());
  } else {
    return WrongType("prompt", "a string or a list of token ids", *v);
  }
  if (job->prompt().empty()) return Invalid("prompt", "must not be empty");
  return std::nullopt;
}

// Fields that would change the answer in ways we do not implement.
std::optional<ApiError> RefuseUnsupported(ApiKind kind, const json& body) {
  if (const json* v = Field(body, "best_of")) {
    if (!v->is_number_integer()) return WrongType("best_of", "an integer", *v);
    if (v->get<int64_t>() != 1) return Unsupported("best_of", "only 1 is supported");
  }
  if (const json* v = Field(body, "suffix")) {
    if (!v->is_string()) return WrongType("suffix", "a string", *v);
    if (!v->get<std::string>().empty()) return Unsupported("suffix", "suffix is not supported");
  }
  for (const char* key : {"tools", "functions"}) {
    if (const json* v = Field(body, key)) {
      if (!v->is_array()) return WrongType(key, "a list", *v);
      if (!v->empty()) return Unsupported(key, "tool calling is not supported");
    }
  }
  if (const json* v = Field(body, "response_format")) {
    if (!v->is_object()) return WrongType("response_format", "an object", *v);
    auto t = v->find("type");
    if (t != v->end() && *t != "text") return Unsupported("response_format", "only {\"type\": \"text\"} is supported");
  }
  return std::nullopt;
}

}  // namespace

json ErrorBody(const ApiError& e) {
  return json{{"error",
               {{"message", e.message},
                {"type", e.type},
                {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

std::optional<ApiError> ParseRequest(ApiKind kind, const std::string& body, ParsedRequest* out) {
  if (TooDeep(body)) return Invalid("", "the JSON body is nested deeper than " + std::to_string(kMaxDepth) + " levels");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    return Invalid("", std::string("the body is not valid JSON: ") + e.what(), "invalid_json");
  }
  if (!j.is_object())
    return Invalid("", std::string("the body must be a JSON object, got ") + j.type_name(), "invalid_json");
  *out = ParsedRequest();
  v1::JobSubmit& job = out->job;

  if (const json* v = Field(j, "model"); v && !v->is_string()) return WrongType("model", "a string", *v);
  if (auto e = kind == ApiKind::kChat ? ParseMessages(j, &job) : ParsePrompt(j, &job)) return e;
  if (auto e = RefuseUnsupported(kind, j)) return e;

  std::optional<int64_t> n;
  if (auto e = ReadInt(j, "n", 1, kMaxChoices, &n)) return e;
  out->n = static_cast<int>(n.value_or(1));

  SamplingParams params;
  params.temperature = 1.0f;  // OpenAI's default
  params.max_tokens = kind == ApiKind::kChat ? kDefaultChatTokens : kDefaultCompletionTokens;
  // echo (completions): the prompt before the answer, with its logprobs when
  // logprobs is asked for; max_tokens may then be 0 (scoring only: one token
  // is generated and dropped).
  if (auto e = ReadBool(j, "echo", &out->echo)) return e;
  if (out->echo && kind == ApiKind::kChat) return Invalid("echo", "is a completions field");
  if (out->echo && out->n > 1) return Unsupported("echo", "echo with n > 1 is not supported");
  std::optional<int64_t> max_tokens;
  if (auto e = ReadInt(j, "max_tokens", out->echo ? 0 : 1, 1 << 30, &max_tokens)) return e;
  if (max_tokens && *max_tokens == 0) {
    out->drop_answer = true;
    max_tokens = 1;
  }
  if (kind == ApiKind::kChat && !max_tokens) {
    if (auto e = ReadInt(j, "max_completion_tokens", 1, 1 << 30, &max_tokens)) return e;
  }
  if (max_tokens) params.max_tokens = static_cast<int32_t>(*max_tokens);
  out->max_tokens_given = max_tokens.has_value();
  std::optional<double> x;
  if (auto e = ReadNumber(j, "temperature", 0, 2, &x)) return e;
  if (x) params.temperature = static_cast<float>(*x);
  x.reset();
  if (auto e = ReadNumber(j, "top_p", 0, 1, &x)) return e;
  if (x) {
    if (*x <= 0) return Invalid("top_p", "must be greater than 0");
    params.top_p = static_cast<float>(*x);
  }
  x.reset();
  if (auto e = ReadNumber(j, "min_p", 0, 1, &x)) return e;
  if (x) params.min_p = static_cast<float>(*x);
  x.reset();
  if (auto e = ReadNumber(j, "top_a", 0, 1e6, &x)) return e;
  if (x) params.top_a = static_cast<float>(*x);
  for (const char* key : {"repeat_penalty", "repetition_penalty"}) {
    x.reset();
    if (auto e = ReadNumber(j, key, 0, 1e6, &x)) return e;
    if (x) {
      if (*x <= 0) return Invalid(key, "must be greater than 0");
      params.repeat_penalty = static_cast<float>(*x);
    }
  }
  std::optional<int64_t> i;
  if (auto e = ReadInt(j, "top_k", 0, 1 << 30, &i)) return e;
  if (i) params.top_k = static_cast<int32_t>(*i);
  i.reset();
  if (auto e = ReadInt(j, "min_tokens", 0, 1 << 30, &i)) return e;
  if (i) params.min_tokens = static_cast<int32_t>(*i);
  bool has_seed = false;
  if (const json* v = Field(j, "seed")) {
    if (v->is_number_float())
      return NotAnInteger("seed", *v, -0x1p63, std::nextafter(0x1p64, 0.0), "must fit in 64 bits");
    if (!v->is_number_integer()) return WrongType("seed", "an integer", *v);
    params.seed = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
    has_seed = true;
  }
  if (const json* v = Field(j, "stop")) {
    std::vector<std::string> stops;
    if (v->is_string()) {
      stops.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > kMaxStops) {
        return Invalid("stop",
                       "at most " + std::to_string(kMaxStops) + " stop strings, got " + std::to_string(v->size()));
      }
      for (const json& s : *v) {
        if (!s.is_string()) return WrongType("stop", "a string or a list of strings", s);
        stops.push_back(s.get<std::string>());
      }
    } else {
      return WrongType("stop", "a string or a list of strings", *v);
    }
    for (const std::string& s : stops) {
      if (s.empty()) return Invalid("stop", "stop strings must not be empty");
    }
    params.stop = std::move(stops);
  }
  if (auto e = ReadBool(j, "stream", &out->stream)) return e;
  if (const json* v = Field(j, "stream_options")) {
    if (!v->is_object()) return WrongType("stream_options", "an object", *v);
    if (!out->stream) return Invalid("stream_options", "is only allowed with stream: true");
    if (auto e = ReadBool(*v, "include_usage", &out->include_usage)) {
      e->param = "stream_options.include_usage";
      e->message = "stream_options." + e->message;
      return e;
    }
  }
  // OpenAI's penalties and bias, and Hugging Face's no_repeat_ngram_size.
  std::optional<double> presence, frequency;
  if (auto e = ReadNumber(j, "presence_penalty", -2, 2, &presence)) return e;
  if (auto e = ReadNumber(j, "frequency_penalty", -2, 2, &frequency)) return e;
  if (presence) params.presence_penalty = static_cast<float>(*presence);
  if (frequency) params.frequency_penalty = static_cast<float>(*frequency);
  std::optional<int64_t> ngram;
  if (auto e = ReadInt(j, "no_repeat_ngram_size", 0, 1 << 20, &ngram)) return e;
  if (ngram) params.no_repeat_ngram_size = static_cast<int32_t>(*ngram);
  if (const json* v = Field(j, "logit_bias")) {
    if (!v->is_object()) return WrongType("logit_bias", "an object of token id: bias", *v);
    if (v->size() > 300) return Invalid("logit_bias", "at most 300 tokens, got " + std::to_string(v->size()));
    for (const auto& [key, bias] : v->items()) {
      char* end = nullptr;
      const long id = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || id > (1L << 30)) {
        return Invalid("logit_bias", "keys must be token ids, got \"" + key + "\"");
      }
      if (!bias.is_number() || !(bias.get<double>() >= -100 && bias.get<double>() <= 100)) {
        return Invalid("logit_bias", "biases must be numbers in [-100, 100], got " + bias.dump() + " for " + key);
      }
      params.logit_bias.emplace_back(static_cast<int32_t>(id), bias.get<float>());
    }
    std::sort(params.logit_bias.begin(), params.logit_bias.end());
  }
  // Logprobs as OpenAI asks for them: chat `logprobs: true` with
  // `top_logprobs` alternatives (0..20); completions `logprobs: N` (0..5).
  if (kind == ApiKind::kChat) {
    bool want = false;
    if (auto e = ReadBool(j, "logprobs", &want)) return e;
    std::optional<int64_t> top;
    if (auto e = ReadInt(j, "top_logprobs", 0, 20, &top)) return e;
    if (top && !want) return Invalid("top_logprobs", "is only allowed with logprobs: true");
    if (want) params.top_logprobs = static_cast<int32_t>(top.value_or(0));
  } else {
    std::optional<int64_t> n;
    if (auto e = ReadInt(j, "logprobs", 0, 5, &n)) return e;
    if (Field(j, "top_logprobs")) return Invalid("top_logprobs", "is a chat field; completions take logprobs: N");
    if (n) params.top_logprobs = static_cast<int32_t>(*n);
  }
  out->logprobs = params.top_logprobs >= 0;
  // Beam search (extras, Hugging Face's names): num_return_sequences choices
  // from one job, best first; greedy unless a temperature is given (which
  // beam search then refuses, naming it).
  std::optional<int64_t> beams, sequences;
  if (auto e = ReadInt(j, "num_beams", 1, SamplingParams::kMaxBeams, &beams)) return e;
  if (auto e = ReadInt(j, "num_return_sequences", 1, SamplingParams::kMaxBeams, &sequences)) return e;
  std::optional<double> length_penalty;
  if (auto e = ReadNumber(j, "length_penalty", -1e6, 1e6, &length_penalty)) return e;
  if (const json* v = Field(j, "early_stopping")) {
    std::string mode;
    if (v->is_boolean()) {
      mode = v->get<bool>() ? "true" : "false";
    } else if (v->is_string()) {
      mode = v->get<std::string>();
    } else {
      return WrongType("early_stopping", "true, false or \"never\"", *v);
    }
    Result<EarlyStopping> parsed = ParseEarlyStopping(mode);
    if (!parsed.ok()) return Invalid("early_stopping", parsed.status().message());
    params.early_stopping = *parsed;
  }
  if (beams) params.num_beams = static_cast<int32_t>(*beams);
  if (sequences) params.num_return_sequences = static_cast<int32_t>(*sequences);
  if (length_penalty) params.length_penalty = static_cast<float>(*length_penalty);
  if (params.beam_search()) {
    if (!Field(j, "temperature")) params.temperature = 0.0f;
    if (out->stream) return Unsupported("num_beams", "beam search with stream: true is not supported");
    if (out->n > 1) return Invalid("n", "with num_beams, ask for num_return_sequences instead of n");
    if (out->echo) return Unsupported("echo", "echo with beam search is not supported");
    out->beams = true;
  }
  if (out->echo) {
    if (out->stream) return Unsupported("echo", "echo with stream: true is not supported");
    // The prompt's tokens come back with the answer (their text too, for a token-id prompt).
    params.prompt_logprobs = std::max(0, params.top_logprobs);
  }
  if (auto e = ReadContrastive(j, &params)) return e;
  // Extras: a kept session (the job protocol's session / keep / max_length);
  // a continuing chat sends only its new messages.
  if (const json* v = Field(j, "session")) {
    if (!v->is_string()) return WrongType("session", "a string (the kept session's name)", *v);
    job.set_session(v->get<std::string>());
  }
  bool keep = false;
  if (auto e = ReadBool(j, "keep", &keep)) return e;
  if (keep && job.session().empty()) return Invalid("keep", "needs a session name (session)");
  job.set_keep(keep);
  std::optional<int64_t> max_length;
  if (auto e = ReadInt(j, "max_length", 1, 1 << 30, &max_length)) return e;
  if (max_length && !keep) return Invalid("max_length", "is chosen when a kept session opens (keep: true)");
  if (max_length) job.set_max_length(static_cast<uint32_t>(*max_length));
  if (out->n > 1 && !job.session().empty()) return Invalid("n", "a kept session runs one job at a time: n must be 1");
  if (Status st = params.Validate(); !st.ok()) return Invalid("", st.message());
  *job.mutable_sampling() = SamplingParamsToProto(params);
  if (!has_seed) job.mutable_sampling()->clear_seed();  // the head derives one per session
  job.set_stream(true);
  return std::nullopt;
}

ApiError ErrorFromStatus(const Status& status) {
  const v1::ErrorCode code = WireCodeOf(status);
  const std::string name = ErrorCodeName(code);
  ApiError e;
  e.message = status.message();
  e.type = "server_error";
  e.code = name;
  // A client's mistake: an error from the head starts with its code name;
  // the client needs the problem only.
  auto invalid = [&](int http_status) {
    e.status = http_status;
    e.type = "invalid_request_error";
    const std::string prefix = name + ": ";
    if (e.message.compare(0, prefix.size(), prefix) == 0) e.message.erase(0, prefix.size());
  };
  switch (code) {
    case v1::BAD_REQUEST:
      invalid(400);
      e.code = "invalid_value";
      if (e.message.find("context") != std::string::npos) e.code = "context_length_exceeded";
      break;
    case v1::UNKNOWN_SESSION:
    case v1::SESSION_EXISTS:
      invalid(400);
      e.param = "session";
      break;
    case v1::UNKNOWN_JOB:
      invalid(404);
      e.code = "unknown_job";
      break;
    case v1::SESSION_BUSY:  // retry once its running job has ended
      invalid(409);
      e.param = "session";
      break;
    case v1::BUSY:  // OpenAI's answer when it is overloaded
      e.status = 429;
      e.type = "rate_limit_error";
      e.code = "queue_full";
      break;
    case v1::SESSION_FULL:
      invalid(400);
      e.param = "session";
      e.code = "context_length_exceeded";
      break;
    case v1::NO_ROUTE:
    case v1::UNAVAILABLE:
    case v1::CACHE_FULL:
    case v1::TIMEOUT: e.status = 503; break;
    default: e.status = 500; break;
  }
  return e;
}

const char* FinishReasonName(v1::FinishReason reason) { return reason == v1::FINISH_LENGTH ? "length" : "stop"; }

json Usage(const std::vector<v1::Finish>& finishes) {
  // The choices share one prompt: counted once, as OpenAI does.
  const v1::Finish& f = finishes.front();
  uint64_t completion = 0;
  for (const v1::Finish& c : finishes) completion += c.generated_tokens();
  return json{{"prompt_tokens", f.prompt_tokens()},
              {"completion_tokens", completion},
              {"total_tokens", f.prompt_tokens() + completion},
              {"prompt_tokens_details", {{"cached_tokens", f.cached_tokens()}}}};
}

namespace {

json Envelope(ApiKind kind, const ResponseMeta& meta, bool chunk) {
  const char* object =
      kind == ApiKind::kChat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return json{{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

}  // namespace

namespace {

// A token's own text for logprobs: its bytes, U+FFFD where they are no whole character.
std::string TokenText(const std::string& bytes) {
  std::string out;
  AppendUtf8Lossy(bytes, true, &out);
  return out;
}

json ByteList(const std::string& bytes) {
  json out = json::array();
  for (unsigned char c : bytes) out.push_back(static_cast<int>(c));
  return out;
}

}  // namespace

json LogprobsJson(ApiKind kind, const std::vector<v1::Token>& tokens, const v1::PromptLogprobs* prompt) {
  if (kind == ApiKind::kChat) {
    json content = json::array();
    for (const v1::Token& t : tokens) {
      json top = json::array();
      for (const v1::TokenLogprob& a : t.top_logprobs()) {
        top.push_back(
            {{"token", TokenText(a.token_bytes())}, {"logprob", a.logprob()}, {"bytes", ByteList(a.token_bytes())}});
      }
      content.push_back({{"token", TokenText(t.token_bytes())},
                         {"logprob", t.logprob()},
                         {"bytes", ByteList(t.token_bytes())},
                         {"top_logprobs", std::move(top)}});
    }
    return json{{"content", std::move(content)}};
  }
  json texts = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  auto advance = [&](const std::string& text) {
    for (unsigned char c : text) offset += (c & 0xC0) != 0x80;  // characters, as OpenAI counts them
  };
  if (prompt) {  // echo: the prompt's tokens first, the first one without a logprob
    for (const v1::PromptToken& t : prompt->tokens()) {
      const std::string text = TokenText(t.token_bytes());
      texts.push_back(text);
      logprobs.push_back(t.has_logprob() ? json(t.logprob()) : json(nullptr));
      json top = t.has_logprob() ? json::object() : json(nullptr);
      for (const v1::TokenLogprob& a : t.top_logprobs()) top[TokenText(a.token_bytes())] = a.logprob();
      tops.push_back(std::move(top));
      offsets.push_back(offset);
      advance(text);
    }
  }
  for (const v1::Token& t : tokens) {
    const std::string text = TokenText(t.token_bytes());
    texts.push_back(text);
    logprobs.push_back(t.logprob());
    json top = json::object();
    for (const v1::TokenLogprob& a : t.top_logprobs()) top[TokenText(a.token_bytes())] = a.logprob();
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    advance(text);
  }
  return json{{"tokens", std::move(texts)},
              {"token_logprobs", std::move(logprobs)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

json CompletionResponse(ApiKind kind, const ResponseMeta& meta, const std::string& text, const v1::Finish& finish,
                        const json& logprobs) {
  return CompletionResponse(kind, meta, {ChoiceAnswer{text, finish, logprobs}});
}

json CompletionResponse(ApiKind kind, const ResponseMeta& meta, const std::vector<ChoiceAnswer>& answers) {
  json r = Envelope(kind, meta, false);
  r["choices"] = json::array();
  for (size_t i = 0; i < answers.size(); ++i) {
    const ChoiceAnswer& a = answers[i];
    json choice = {{"index", i}, {"logprobs", a.logprobs}, {"finish_reason", FinishReasonName(a.finish.reason())}};
    if (kind == ApiKind::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", a.text}};
    } else {
      choice["text"] = a.text;
    }
    r["choices"].push_back(std::move(choice));
  }
  std::vector<v1::Finish> finishes;
  finishes.reserve(answers.size());
  for (const ChoiceAnswer& a : answers) finishes.push_back(a.finish);
  r["usage"] = Usage(finishes);
  return r;
}

json StreamChunk(ApiKind kind, const ResponseMeta& meta, const std::string& text, const v1::Finish* finish,
                 bool role_only, const json& logprobs, int index) {
  json r = Envelope(kind, meta, true);
  json choice = {{"index", index},
                 {"logprobs", logprobs},
                 {"finish_reason", finish ? json(FinishReasonName(finish->reason())) : json(nullptr)}};
  if (kind == ApiKind::kChat) {
    if (role_only) {
      choice["delta"] = {{"role", "assistant"}, {"content", ""}};
    } else if (finish && text.empty()) {
      choice["delta"] = json::object();
    } else {
      choice["delta"] = {{"content", text}};
    }
  } else {
    choice["text"] = text;
  }
  r["choices"] = json::array({choice});
  return r;
}

json UsageChunk(ApiKind kind, const ResponseMeta& meta, const std::vector<v1::Finish>& finishes) {
  json r = Envelope(kind, meta, true);
  r["choices"] = json::array();
  r["usage"] = Usage(finishes);
  return r;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string SseEvent(const json& j) { return "data: " + Dump(j) + "\n\n"; }

json ModelList(const std::string& model_id, int64_t created) {
  return json{
      {"object", "list"},
      {"data",
       json::array({json{{"id", model_id}, {"object", "model"}, {"created", created}, {"owned_by", "troupe"}}})}};
}

namespace {

std::string MetricName(const std::string& name) {
  std::string out = "troupe_";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
    out += ok ? c : '_';
  }
  return out;
}

std::string LabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return json(v).dump();
}

}  // namespace

std::string PrometheusText(const v1::MetricsSnapshot& snapshot) {
  struct Family {
    bool counter = false;
    std::vector<std::pair<std::string, std::string>> samples;  // labels, value
  };
  std::map<std::string, Family> families;
  // "<node>/<name>" or "<node>/<name>{k=\"v\",...}" (labels already escaped,
  // actors/refusals.h) -> the metric's name and its labels, node first.
  auto split = [](const std::string& key, std::string* labels, std::string* name) {
    const size_t slash = key.find('/');
    const std::string node = slash == std::string::npos ? "" : key.substr(0, slash);
    *name = slash == std::string::npos ? key : key.substr(slash + 1);
    *labels = "node=\"" + LabelValue(node) + "\"";
    const size_t brace = name->find('{');
    if (brace != std::string::npos && name->back() == '}') {
      const std::string more = name->substr(brace + 1, name->size() - brace - 2);
      if (!more.empty()) *labels += "," + more;
      name->resize(brace);
    }
  };
  for (const auto& [key, value] : snapshot.counters()) {
    std::string labels, name;
    split(key, &labels, &name);
    std::string metric = MetricName(name);
    if (metric.size() < 6 || metric.compare(metric.size() - 6, 6, "_total") != 0) metric += "_total";
    Family& f = families[metric];
    f.counter = true;
    f.samples.emplace_back(labels, std::to_string(value));
  }
  for (const auto& [key, value] : snapshot.gauges()) {
    std::string labels, name;
    split(key, &labels, &name);
    std::string metric = MetricName(name);
    if (families.count(metric) && families[metric].counter) metric += "_gauge";  // never mix types in a family
    families[metric].samples.emplace_back(labels, Number(value));
  }
  std::string out;
  for (auto& [metric, f] : families) {
    std::sort(f.samples.begin(), f.samples.end());
    out += "# TYPE " + metric + (f.counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, value] : f.samples) out += metric + "{" + labels + "} " + value + "\n";
  }
  // Histograms: cumulative _bucket{le} lines, then _sum and _count, per labels.
  std::map<std::string, std::vector<std::pair<std::string, const v1::Histogram*>>> histograms;
  for (const auto& [key, h] : snapshot.histograms()) {
    std::string labels, name;
    split(key, &labels, &name);
    histograms[MetricName(name)].emplace_back(labels, &h);
  }
  for (auto& [metric, series] : histograms) {
    if (families.count(metric)) continue;  // never two types under one name
    std::sort(series.begin(), series.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out += "# TYPE " + metric + " histogram\n";
    for (const auto& [labels, h] : series) {
      uint64_t cumulative = 0;
      for (int i = 0; i < h->counts_size(); ++i) {
        cumulative += h->counts(i);
        const std::string le = i < h->bounds_size() ? Number(h->bounds(i)) : "+Inf";
        out += metric + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
      }
      out += metric + "_sum{" + labels + "} " + Number(h->sum()) + "\n";
      out += metric + "_count{" + labels + "} " + std::to_string(h->count()) + "\n";
    }
  }
  return out;
}

}  // namespace troupe::http
