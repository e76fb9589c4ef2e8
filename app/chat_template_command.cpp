// `troupe chat-template`: prints a conversation rendered with a chat template
// — the model's (--model: its own template, else a built-in one chosen by its
// vocabulary, else a fallback format; --show-origin says which on stderr) or a
// template file (--template-file, with --bos-token and --eos-token as the
// texts the template sees). --messages-json FILE holds a JSON array of
// messages; the text is printed as is, without a newline added. With --batch,
// FILE is JSON Lines of {"messages": [...], "add_generation_prompt": bool},
// and each line out is {"text": "..."} or {"error": "..."} (the template
// refused the conversation, say) in the same order.
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "app/commands.h"
#include "pipeline/format/model_source.h"
#include "pipeline/text/chat_template.h"
#include "pipeline/text/tokenizer.h"

namespace troupe::app {
namespace {

struct ChatTemplateFlags {
  std::string model;
  std::string template_file;
  std::string bos_token, eos_token;
  std::string messages_json;
  bool add_generation_prompt = false;
  bool batch = false;
  bool show_origin = false;
};

Result<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<ChatTemplate> Load(const ChatTemplateFlags& f) {
  if (!f.template_file.empty()) {
    TROUPE_ASSIGN_OR_RETURN(std::string source, ReadAll(f.template_file));
    return ChatTemplate::FromSource(source, f.bos_token, f.eos_token);
  }
  TROUPE_ASSIGN_OR_RETURN(auto source, ModelSource::Open(ResolveModelPath(f.model)));
  TROUPE_ASSIGN_OR_RETURN(auto tok, Tokenizer::Create(source->tokenizer_spec()));
  return ChatTemplate::Create(source->tokenizer_spec().chat_template, *tok);
}

void RunChatTemplate(const ChatTemplateFlags& f) {
  auto tmpl = Load(f);
  if (!tmpl.ok()) return Fail(tmpl.status().ToString());
  if (f.show_origin) std::cerr << "troupe: rendering with " << tmpl->origin() << std::endl;
  auto text = ReadAll(f.messages_json);
  if (!text.ok()) return Fail(text.status().ToString());
  if (!f.batch) {
    auto messages = nlohmann::ordered_json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!messages.is_array()) return Fail(f.messages_json + ": not a JSON array of messages");
    auto out = tmpl->RenderJson(messages, f.add_generation_prompt);
    if (!out.ok()) return Fail(out.status().ToString());
    std::cout << *out << std::flush;
    return;
  }
  std::istringstream lines(*text);
  std::string line;
  int64_t n = 0;
  while (std::getline(lines, line)) {
    ++n;
    auto c = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!c.is_object() || !c.contains("messages") || !c["messages"].is_array()) {
      return Fail(f.messages_json + ":" + std::to_string(n) + ": not an object with a \"messages\" array");
    }
    const bool gen = c.value("add_generation_prompt", false);
    auto out = tmpl->RenderJson(c["messages"], gen);
    nlohmann::json result;
    if (out.ok()) {
      result["text"] = *out;
    } else {
      result["error"] = out.status().ToString();
    }
    std::cout << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  std::cout << std::flush;
}

}  // namespace

void RegisterChatTemplate(CLI::App& app) {
  auto flags = std::make_shared<ChatTemplateFlags>();
  CLI::App* cmd = app.add_subcommand("chat-template", "Print a conversation rendered with a chat template");
  auto* model = cmd->add_option("--model", flags->model, "GGUF file or Hugging Face folder");
  auto* file = cmd->add_option("--template-file", flags->template_file, "Jinja chat template file");
  file->excludes(model);
  cmd->add_option("--bos-token", flags->bos_token, "bos_token's text (with --template-file)")->needs(file);
  cmd->add_option("--eos-token", flags->eos_token, "eos_token's text (with --template-file)")->needs(file);
  cmd->add_option("--messages-json", flags->messages_json, "JSON array of messages (JSON Lines with --batch)")
      ->required();
  cmd->add_flag("--add-generation-prompt", flags->add_generation_prompt, "End with the assistant turn's header");
  cmd->add_flag("--batch", flags->batch, "Render each line of --messages-json; one JSON line out per line");
  cmd->add_flag("--show-origin", flags->show_origin, "Say on stderr which template renders");
  cmd->callback([flags] { RunChatTemplate(*flags); });
}

}  // namespace troupe::app
