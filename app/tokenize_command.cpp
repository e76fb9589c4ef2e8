// `troupe tokenize`: prints the token ids of --text as a JSON array (BOS only
// when the model's metadata asks for it). `--batch FILE` reads JSON Lines, one
// JSON string per line, and prints one JSON array per line in the same order.
// With --chat, --text is a user turn rendered with the chat template (as
// `generate --chat` renders it, --system too); --continuation renders it as a
// kept session's next turn (`submit --session NAME`), which the head appends
// to the conversation so far (dropping a leading end-of-turn token the
// previous answer already ended with).
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

#include "app/commands.h"
#include "pipeline/format/model_source.h"
#include "pipeline/text/prompt.h"
#include "pipeline/text/tokenizer.h"

namespace troupe::app {
namespace {

struct TokenizeFlags {
  std::string text;
  std::string batch;
  std::string model;
  PromptRequest prompt;
};

void RunTokenize(const TokenizeFlags& f) {
  auto source = ModelSource::Open(ResolveModelPath(f.model));
  if (!source.ok()) return Fail(source.status().ToString());
  auto tok = Tokenizer::Create((*source)->tokenizer_spec());
  if (!tok.ok()) return Fail(tok.status().ToString());
  auto encode = [&](const std::string& s) { return nlohmann::json((*tok)->Encode(s, (*tok)->add_bos())).dump(); };
  if (f.batch.empty() && (f.prompt.chat || f.prompt.continuation)) {
    PromptRequest request = f.prompt;
    request.prompt = f.text;
    auto ids = PromptTokens(**tok, (*source)->tokenizer_spec(), request);
    if (!ids.ok()) return Fail(ids.status().ToString());
    std::cout << nlohmann::json(*ids).dump() << std::endl;
    return;
  }
  if (f.batch.empty()) {
    std::cout << encode(f.text) << std::endl;
    return;
  }
  std::ifstream in(f.batch);
  if (!in) return Fail(f.batch + ": cannot open");
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_string()) return Fail(f.batch + ":" + std::to_string(n) + ": not a JSON string");
    std::cout << encode(j.get<std::string>()) << "\n";
  }
  std::cout << std::flush;
}

}  // namespace

void RegisterTokenize(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  auto* text = cmd->add_option("--text", flags->text, "Text to tokenize");
  auto* batch = cmd->add_option("--batch", flags->batch, "JSON Lines file of strings; one array per line out");
  text->excludes(batch);
  cmd->add_option("--model", flags->model, "GGUF file or Hugging Face folder");
  cmd->add_flag("--chat", flags->prompt.chat, "Render --text as a user turn with the chat template")->excludes(batch);
  cmd->add_option("--system", flags->prompt.system, "System message (with --chat)");
  cmd->add_flag("--continuation", flags->prompt.continuation,
                "Render --text as a kept session's next turn (no BOS; with --chat, closing the previous answer)")
      ->excludes(batch);
  cmd->callback([flags, text, batch] {
    if (text->count() == 0 && batch->count() == 0) return Fail("tokenize needs --text or --batch");
    RunTokenize(*flags);
  });
}

}  // namespace troupe::app
