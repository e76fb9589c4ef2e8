// `troupe generate`: the whole model in this process, streaming the answer.
// Output contract (fixed): plain text as it is produced, or with --json one
// line per token {"token": ID, "text": "..."} then one summary line
// {"done": true, "prompt_tokens": N, "generated_tokens": M,
//  "prefill_tokens_per_s": X, "decode_tokens_per_s": Y, "peak_rss_mb": Z,
//  "finish_reason": ...}.
// Beam search (--num-beams N > 1) has no token lines (a beam's tokens are
// final only at the end): after the run, one line per returned sequence, best
// first, {"sequence": I, "tokens": [...], "text": "...", "score": S,
// "finish_reason": "eos" | "length"} (app/output.h), then the summary line
// (generated_tokens and finish_reason of the best sequence, plus
// "beam_cache_copies"); plain text prints the sequences apart by a blank line.
#include <nlohmann/json.hpp>

#include <iostream>

#include "app/commands.h"
#include "app/engine_commands.h"
#include "app/load_engine.h"
#include "app/output.h"
#include "pipeline/model/engine.h"
#include "pipeline/text/prompt.h"

namespace troupe::app {
namespace {

struct GenerateFlags {
  PromptRequest prompt;
  SamplingParams params;
  std::string model;
  std::string amateur_model;  // contrastive decoding's amateur; implies params.contrastive
  ModelOptions options;
  bool json = false;
};

void RunGenerate(const GenerateFlags& f) {
  if (Status valid = f.params.Validate(); !valid.ok()) return Fail(valid.ToString());  // before the model loads
  auto engine = LoadEngineWithProgress(ResolveModelPath(f.model), f.options);
  if (!engine.ok()) return Fail(engine.status().ToString());
  if (!f.amateur_model.empty()) {
    Status s = (*engine)->LoadAmateur(f.amateur_model, f.options);
    if (!s.ok()) return Fail(s.ToString());
  }
  auto ids = PromptTokens((*engine)->tokenizer(), (*engine)->source().tokenizer_spec(), f.prompt);
  if (!ids.ok()) return Fail(ids.status().ToString());
  if (f.params.beam_search()) {
    auto result = (*engine)->GenerateBeams(ids.value(), f.params);
    if (!result.ok()) return Fail(result.status().ToString());
    std::vector<std::string> texts;
    for (const BeamHypothesis& seq : result->sequences)
      texts.push_back(DecodeAnswer((*engine)->tokenizer(), seq.tokens));
    PrintBeamSequences(f.json, result->sequences, texts);
    TokenPrinter(f.json).Done(result->stats, {{"beam_cache_copies", static_cast<double>(result->cache_copies)}});
    return;
  }
  TokenPrinter printer(f.json);
  auto stats = (*engine)->Generate(ids.value(), f.params, [&](const TokenEvent& ev) { printer.Token(ev); });
  if (!stats.ok()) return Fail(stats.status().ToString());
  printer.Done(stats.value());
}

}  // namespace

void RegisterGenerate(CLI::App& app) {
  auto flags = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand("generate", std::string(EngineCommandDescription("generate")));
  cmd->add_option("--prompt", flags->prompt.prompt, "Prompt text")->required();
  cmd->add_flag("--chat", flags->prompt.chat, "Apply the model's chat template");
  cmd->add_option("--system", flags->prompt.system, "System message (with --chat)");
  AddSamplingFlags(cmd, &flags->params);
  cmd->add_option("--model", flags->model,
                  "GGUF file or Hugging Face folder (default: $TROUPE_MODEL, else the installed model)");
  cmd->add_option_function<std::string>(
      "--amateur-model",
      [flags](const std::string& path) {
        flags->amateur_model = path;
        flags->params.contrastive = true;
      },
      "Contrastive decoding: the amateur model (same vocabulary as --model; implies --contrastive)");
  AddModelOptionFlags(cmd, &flags->options);
  cmd->add_flag("--json", flags->json, "One JSON line per token, then a summary line");
  cmd->callback([flags] { RunGenerate(*flags); });
}

}  // namespace troupe::app
