// `troupe generate`: the whole model in this process, streaming the answer.
// Output contract (fixed): plain text as it is produced, or with --json one
// line per token {"token": ID, "text": "..."} then one summary line
// {"done": true, "prompt_tokens": N, "generated_tokens": M,
//  "prefill_tokens_per_s": X, "decode_tokens_per_s": Y, "peak_rss_mb": Z}.
#include <nlohmann/json.hpp>

#include <iostream>

#include "app/commands.h"
#include "app/output.h"
#include "pipeline/model/engine.h"
#include "pipeline/model/prompt.h"

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
  auto engine = LoadEngineWithProgress(ResolveModelPath(f.model), f.options);
  if (!engine.ok()) return Fail(engine.status().ToString());
  if (!f.amateur_model.empty()) {
    Status s = (*engine)->LoadAmateur(f.amateur_model, f.options);
    if (!s.ok()) return Fail(s.ToString());
  }
  auto ids = PromptTokens((*engine)->tokenizer(), (*engine)->source().tokenizer_spec(), f.prompt);
  if (!ids.ok()) return Fail(ids.status().ToString());
  TokenPrinter printer(f.json);
  auto stats = (*engine)->Generate(ids.value(), f.params, [&](const TokenEvent& ev) { printer.Token(ev); });
  if (!stats.ok()) return Fail(stats.status().ToString());
  printer.Done(stats.value());
}

}  // namespace

void RegisterGenerate(CLI::App& app) {
  auto flags = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text with the whole model in this process");
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
  cmd->add_option("--threads", flags->options.threads, "Worker threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--device", flags->options.device, "cpu")->capture_default_str();
  cmd->add_flag("--json", flags->json, "One JSON line per token, then a summary line");
  cmd->callback([flags] { RunGenerate(*flags); });
}

}  // namespace troupe::app
