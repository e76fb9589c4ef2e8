#include "app/output.h"

#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <iostream>

#include "pipeline/text/stream_decoder.h"

namespace troupe::app {
namespace {

std::string Dump(const nlohmann::ordered_json& j) {
  // Token text can end in a partial UTF-8 sequence at the very end of a reply.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

double PeakRssMb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void TokenPrinter::Token(const TokenEvent& ev) {
  if (!json_) {
    std::cout << ev.text << std::flush;
    return;
  }
  if (ev.eos && ev.text.empty()) return;  // the end marker itself is not part of the answer
  nlohmann::ordered_json line{{"token", ev.id}, {"text", ev.text}};
  if (ev.logprobs) {
    line["logprob"] = ev.logprobs->logprob;
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (const TokenLogprob& alt : ev.logprobs->top) top.push_back({{"token", alt.id}, {"logprob", alt.logprob}});
    line["top_logprobs"] = std::move(top);
  }
  std::cout << Dump(line) << "\n" << std::flush;
}

void TokenPrinter::Done(const GenerateStats& s, const std::vector<std::pair<std::string, double>>& extra) {
  if (!json_) {
    std::cout << std::endl;
    return;
  }
  const double decode_steps = static_cast<double>(s.decode_steps);
  nlohmann::ordered_json j = {
      {"done", true},
      {"prompt_tokens", s.prompt_tokens},
      {"generated_tokens", s.generated_tokens},
      {"prefill_tokens_per_s",
       s.prefill_seconds > 0 ? static_cast<double>(s.prompt_tokens - s.cached_tokens) / s.prefill_seconds : 0.0},
      {"decode_tokens_per_s", s.decode_seconds > 0 ? decode_steps / s.decode_seconds : 0.0},
      {"peak_rss_mb", PeakRssMb()},
      {"finish_reason", finish_reason_name(s.finish)},
      {"cached_tokens", s.cached_tokens},
  };
  for (const auto& [key, value] : extra) j[key] = value;
  if (job_id_ != 0) j["job_id"] = job_id_;
  std::cout << Dump(j) << "\n" << std::flush;
}

std::string DecodeAnswer(const Tokenizer& tokenizer, const std::vector<int32_t>& tokens) {
  StreamDecoder decoder(tokenizer);
  std::string text;
  for (int32_t id : tokens) text += decoder.Feed(id);
  return text + decoder.Flush();
}

void PrintBeamSequences(bool json, const std::vector<BeamHypothesis>& sequences,
                        const std::vector<std::string>& texts) {
  for (size_t i = 0; i < sequences.size(); ++i) {
    const BeamHypothesis& seq = sequences[i];
    const std::string& text = texts[i];
    if (!json) {
      std::cout << (i > 0 ? "\n\n" : "") << text;
      continue;
    }
    nlohmann::ordered_json line{{"sequence", i},
                                {"tokens", seq.tokens},
                                {"text", text},
                                {"score", seq.score},
                                {"finish_reason", seq.eos ? "eos" : "length"}};
    std::cout << Dump(line) << "\n";
  }
  std::cout << std::flush;
}

}  // namespace troupe::app
