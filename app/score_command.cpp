// `troupe score`: teacher-forced scoring of --text. Prints
// {"tokens": [...], "argmax": [...], "logprobs": [...]} where argmax[i] is the
// most likely token after tokens[0..i] and logprobs[i] = log p(tokens[i+1] | tokens[0..i]).
// `--batch FILE` reads JSON Lines, one JSON string per line, and prints one
// such object per line in the same order (the model loads once).
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

#include "app/commands.h"
#include "app/engine_commands.h"
#include "app/load_engine.h"
#include "app/output.h"

namespace troupe::app {
namespace {

struct ScoreFlags {
  std::string text;
  std::string batch;
  std::string model;
  ModelOptions options;
};

void RunScore(const ScoreFlags& f) {
  std::vector<std::string> texts;
  if (f.batch.empty()) {
    texts.push_back(f.text);
  } else {
    std::ifstream in(f.batch);
    if (!in) return Fail(f.batch + ": cannot open");
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_string()) return Fail(f.batch + ":" + std::to_string(texts.size() + 1) + ": not a JSON string");
      texts.push_back(j.get<std::string>());
    }
  }
  auto engine = LoadEngineWithProgress(ResolveModelPath(f.model), f.options);
  if (!engine.ok()) return Fail(engine.status().ToString());
  const Tokenizer& tok = (*engine)->tokenizer();
  for (const std::string& text : texts) {
    auto result = (*engine)->Score(tok.Encode(text, tok.add_bos()));
    if (!result.ok()) return Fail(result.status().ToString());
    nlohmann::json j = {{"tokens", result->tokens}, {"argmax", result->argmax}, {"logprobs", result->logprobs}};
    std::cout << j.dump() << "\n";
  }
  std::cout << std::flush;
}

}  // namespace

void RegisterScore(CLI::App& app) {
  auto flags = std::make_shared<ScoreFlags>();
  CLI::App* cmd = app.add_subcommand("score", std::string(EngineCommandDescription("score")));
  auto* text = cmd->add_option("--text", flags->text, "Text to score");
  auto* batch = cmd->add_option("--batch", flags->batch, "JSON Lines file of strings; one result per line out");
  text->excludes(batch);
  cmd->add_option("--model", flags->model, "GGUF file or Hugging Face folder");
  AddModelOptionFlags(cmd, &flags->options);
  cmd->callback([flags] {
    if (flags->text.empty() && flags->batch.empty()) return Fail("troupe score: give --text TEXT or --batch FILE");
    RunScore(*flags);
  });
}

}  // namespace troupe::app
