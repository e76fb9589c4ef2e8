// `troupe score`: teacher-forced scoring of --text. Prints
// {"tokens": [...], "argmax": [...], "logprobs": [...]} where argmax[i] is the
// most likely token after tokens[0..i] and logprobs[i] = log p(tokens[i+1] | tokens[0..i]).
#include <nlohmann/json.hpp>

#include <iostream>

#include "app/commands.h"
#include "app/output.h"

namespace troupe::app {
namespace {

struct ScoreFlags {
  std::string text;
  std::string model;
  ModelOptions options;
};

void RunScore(const ScoreFlags& f) {
  auto engine = LoadEngineWithProgress(ResolveModelPath(f.model), f.options);
  if (!engine.ok()) return Fail(engine.status().ToString());
  const Tokenizer& tok = (*engine)->tokenizer();
  auto result = (*engine)->Score(tok.Encode(f.text, tok.add_bos()));
  if (!result.ok()) return Fail(result.status().ToString());
  nlohmann::json j = {{"tokens", result->tokens}, {"argmax", result->argmax}, {"logprobs", result->logprobs}};
  std::cout << j.dump() << std::endl;
}

}  // namespace

void RegisterScore(CLI::App& app) {
  auto flags = std::make_shared<ScoreFlags>();
  CLI::App* cmd = app.add_subcommand("score", "Score a text: per-position argmax and log-probabilities");
  cmd->add_option("--text", flags->text, "Text to score")->required();
  cmd->add_option("--model", flags->model, "GGUF file or Hugging Face folder");
  AddModelOptionFlags(cmd, &flags->options);
  cmd->callback([flags] { RunScore(*flags); });
}

}  // namespace troupe::app
