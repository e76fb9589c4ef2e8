#include "pipeline/text/tokenizer_json.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "pipeline/text/end_of_turn.h"
#include "pipeline/text/pre_tokenizer.h"

namespace troupe {
namespace {

using nlohmann::json;

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open (missing or unreadable)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": read failed");
  return buffer.str();
}

bool FileExists(const std::string& path) { return std::ifstream(path).good(); }

Result<json> ReadJson(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Corrupt(path + ": not valid JSON");
  if (!doc.is_object()) return Status::Corrupt(path + ": top level is not a JSON object");
  return doc;
}

bool BoolOr(const json& obj, const char* key, bool fallback) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string TypeOf(const json& obj) {
  auto it = obj.find("type");
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool IsByteLevel(const json& step, bool use_regex) {
  return step.is_object() && TypeOf(step) == "ByteLevel" && !BoolOr(step, "add_prefix_space", false) &&
         BoolOr(step, "use_regex", true) == use_regex;
}

bool IsSplitWith(const json& step, const char* pattern) {
  if (!step.is_object() || TypeOf(step) != "Split" || BoolOr(step, "invert", false)) return false;
  auto behavior = step.find("behavior");
  if (behavior != step.end() && (!behavior->is_string() || *behavior != "Isolated")) return false;
  auto pat = step.find("pattern");
  if (pat == step.end() || !pat->is_object()) return false;
  auto regex = pat->find("Regex");
  return regex != pat->end() && regex->is_string() && regex->get<std::string>() == pattern;
}

// Maps the pre_tokenizer object to a PreTokenizer family.
Result<std::string> DetectFamily(const json& pre, const std::string& path) {
  if (IsByteLevel(pre, true)) return std::string("gpt2");
  if (pre.is_object() && TypeOf(pre) == "Sequence") {
    auto steps_it = pre.find("pretokenizers");
    if (steps_it != pre.end() && steps_it->is_array()) {
      const json& steps = *steps_it;
      if (steps.size() == 1 && IsByteLevel(steps[0], true)) return std::string("gpt2");
      if (steps.size() == 2) {
        // Digits isolated one by one, spelled either as Digits(individual) or
        // as an isolating Split on \p{N}, then GPT-2 ByteLevel.
        const bool digits = (TypeOf(steps[0]) == "Digits" && BoolOr(steps[0], "individual_digits", false)) ||
                            IsSplitWith(steps[0], "\\p{N}");
        if (digits && IsByteLevel(steps[1], true)) {
          return std::string("smollm");
        }
        if (IsByteLevel(steps[1], false)) {
          if (IsSplitWith(steps[0], text::kLlama3Pattern)) return std::string("llama-bpe");
          if (IsSplitWith(steps[0], text::kQwen2Pattern)) return std::string("qwen2");
        }
      }
    }
  }
  return Status::Unsupported(path +
                             ": pre_tokenizer is not one Troupe knows (GPT-2 ByteLevel, "
                             "SmolLM digits + ByteLevel, Llama-3 or Qwen2 split + ByteLevel): " +
                             pre.dump().substr(0, 300));
}

bool HasByteLevel(const json& node) {
  if (!node.is_object()) return false;
  if (TypeOf(node) == "ByteLevel") return true;
  for (const char* key : {"decoders", "pretokenizers"}) {
    auto it = node.find(key);
    if (it == node.end() || !it->is_array()) continue;
    for (const json& child : *it) {
      if (HasByteLevel(child)) return true;
    }
  }
  return false;
}

// A special token setting: "text", {"content": "text"} or null.
std::optional<std::string> TokenSetting(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return std::nullopt;
}

// Whether a TemplateProcessing post-processor (possibly inside a Sequence)
// puts `bos` before the single sequence.
bool PostProcessorAddsBos(const json& node, const std::string& bos) {
  if (!node.is_object() || bos.empty()) return false;
  if (TypeOf(node) == "Sequence") {
    auto it = node.find("processors");
    if (it == node.end() || !it->is_array()) return false;
    for (const json& child : *it) {
      if (PostProcessorAddsBos(child, bos)) return true;
    }
    return false;
  }
  if (TypeOf(node) != "TemplateProcessing") return false;
  auto single = node.find("single");
  if (single == node.end() || !single->is_array() || single->empty()) return false;
  const json& first = (*single)[0];
  auto special = first.find("SpecialToken");
  if (special == first.end() || !special->is_object()) return false;
  auto id = special->find("id");
  return id != special->end() && id->is_string() && id->get<std::string>() == bos;
}

// Ids may leave holes, but only this many past the tokens a file lists: the
// vocabulary is as long as the largest id, so an id far past them would make
// a few bytes of JSON cost gigabytes.
constexpr size_t kMaxIdHoles = 65536;

// How many tokens a tokenizer.json lists (model.vocab and added_tokens).
size_t ListedTokens(const json& doc) {
  size_t listed = 0;
  auto model = doc.find("model");
  if (model != doc.end() && model->is_object()) {
    auto vocab = model->find("vocab");
    if (vocab != model->end() && vocab->is_object()) listed += vocab->size();
  }
  auto added = doc.find("added_tokens");
  if (added != doc.end() && added->is_array()) listed += added->size();
  return listed;
}

// Corrupt naming `what` unless `id` is below both 2^24 and the listed tokens
// plus kMaxIdHoles.
Status CheckIdLimit(const json& doc, const json& id, const std::string& what, const std::string& path) {
  const size_t listed = ListedTokens(doc);
  if (id.get<uint64_t>() < std::min<size_t>(listed + kMaxIdHoles, size_t{1} << 24)) return Status::Ok();
  return Status::Corrupt(path + ": " + what + " has id " + id.dump() + ", more than " + std::to_string(kMaxIdHoles) +
                         " past the " + std::to_string(listed) + " tokens the file lists (or 2^24 or more)");
}

Status ReadModel(const json& doc, const std::string& path, TokenizerSpec* spec) {
  auto model_it = doc.find("model");
  if (model_it == doc.end() || !model_it->is_object()) return Status::Corrupt(path + ": no 'model' object");
  const json& model = *model_it;
  if (TypeOf(model) != "BPE") {
    return Status::Unsupported(path + ": model type '" + TypeOf(model) + "' is not supported (only byte-level BPE)");
  }
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) return Status::Corrupt(path + ": model.vocab is not an object");
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0) {
      return Status::Corrupt(path + ": model.vocab['" + it.key() + "'] is not a valid id");
    }
    TROUPE_RETURN_IF_ERROR(CheckIdLimit(doc, it.value(), "model.vocab['" + it.key() + "']", path));
    size_t id = it.value().get<size_t>();
    if (id >= spec->tokens.size()) spec->tokens.resize(id + 1);
    spec->tokens[id] = it.key();
  }
  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) return Status::Corrupt(path + ": model.merges is not an array");
  spec->merges.reserve(merges->size());
  for (const json& merge : *merges) {
    if (merge.is_string()) {
      spec->merges.push_back(merge.get<std::string>());
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      spec->merges.push_back(merge[0].get<std::string>() + " " + merge[1].get<std::string>());
    } else {
      return Status::Corrupt(path + ": model.merges entry " + std::to_string(spec->merges.size()) +
                             " is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  spec->token_types.assign(spec->tokens.size(), TokenType::kNormal);
  for (size_t id = 0; id < spec->tokens.size(); ++id) {
    if (spec->tokens[id].empty()) spec->token_types[id] = TokenType::kUnused;  // a hole in the ids
  }
  return Status::Ok();
}

Status ReadAddedTokens(const json& doc, const std::string& path, TokenizerSpec* spec) {
  auto added = doc.find("added_tokens");
  if (added == doc.end() || added->is_null()) return Status::Ok();
  if (!added->is_array()) return Status::Corrupt(path + ": added_tokens is not an array");
  for (const json& token : *added) {
    auto id = token.find("id");
    auto content = token.find("content");
    if (!token.is_object() || id == token.end() || !id->is_number_integer() || id->get<int64_t>() < 0 ||
        content == token.end() || !content->is_string()) {
      return Status::Corrupt(path + ": added_tokens entry without a valid id and content");
    }
    TROUPE_RETURN_IF_ERROR(CheckIdLimit(doc, *id, "added token '" + content->get<std::string>() + "'", path));
    size_t index = id->get<size_t>();
    if (index >= spec->tokens.size()) {
      spec->tokens.resize(index + 1);
      spec->token_types.resize(index + 1, TokenType::kUnused);
    }
    spec->tokens[index] = content->get<std::string>();
    spec->token_types[index] = BoolOr(token, "special", false) ? TokenType::kControl : TokenType::kUserDefined;
  }
  return Status::Ok();
}

Result<int32_t> RequireToken(const TokenizerSpec& spec, const std::string& text, const char* what,
                             const std::string& path) {
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    if (spec.tokens[id] == text) return static_cast<int32_t>(id);
  }
  return Status::InvalidArgument(path + ": " + what + " '" + text + "' is not in the vocabulary");
}

// BOS/EOS ids from config.json, for folders without tokenizer_config.json.
void ReadModelConfigIds(const std::string& dir, TokenizerSpec* spec) {
  auto config = ReadJson(dir + "/config.json");
  if (!config.ok()) return;
  auto id_of = [&](const char* key) -> int32_t {
    auto it = config->find(key);
    if (it == config->end()) return -1;
    const json& v = it->is_array() && !it->empty() ? (*it)[0] : *it;
    if (!v.is_number_integer()) return -1;
    int64_t id = v.get<int64_t>();
    return id >= 0 && id < static_cast<int64_t>(spec->tokens.size()) ? static_cast<int32_t>(id) : -1;
  };
  spec->bos_id = id_of("bos_token_id");
  spec->eos_id = id_of("eos_token_id");
}

Status ReadTokenizerConfig(const std::string& dir, const json& tokenizer_doc, TokenizerSpec* spec) {
  const std::string path = dir + "/tokenizer_config.json";
  std::string bos_text;
  bool add_bos_known = false;
  if (!FileExists(path)) {
    ReadModelConfigIds(dir, spec);
    if (spec->bos_id >= 0) bos_text = spec->tokens[spec->bos_id];
  } else {
    TROUPE_ASSIGN_OR_RETURN(json config, ReadJson(path));
    if (auto bos = TokenSetting(config, "bos_token")) {
      TROUPE_ASSIGN_OR_RETURN(spec->bos_id, RequireToken(*spec, *bos, "bos_token", path));
      bos_text = *bos;
    }
    if (auto eos = TokenSetting(config, "eos_token")) {
      TROUPE_ASSIGN_OR_RETURN(spec->eos_id, RequireToken(*spec, *eos, "eos_token", path));
    }
    if (auto pad = TokenSetting(config, "pad_token")) {
      auto pad_id = RequireToken(*spec, *pad, "pad_token", path);
      if (pad_id.ok()) spec->pad_id = *pad_id;
    }
    auto add_bos = config.find("add_bos_token");
    if (add_bos != config.end() && add_bos->is_boolean()) {
      spec->add_bos = add_bos->get<bool>() && spec->bos_id >= 0;
      add_bos_known = true;
    }
    auto tmpl = config.find("chat_template");
    if (tmpl != config.end() && tmpl->is_string()) {
      spec->chat_template = tmpl->get<std::string>();
    } else if (tmpl != config.end() && tmpl->is_array()) {
      for (const json& named : *tmpl) {
        if (named.is_object() && named.contains("name") && named["name"] == "default" && named.contains("template") &&
            named["template"].is_string()) {
          spec->chat_template = named["template"].get<std::string>();
        }
      }
    }
  }
  if (!add_bos_known) {
    auto post = tokenizer_doc.find("post_processor");
    spec->add_bos = post != tokenizer_doc.end() && PostProcessorAddsBos(*post, bos_text);
  }
  if (spec->chat_template.empty() && FileExists(dir + "/chat_template.jinja")) {
    TROUPE_ASSIGN_OR_RETURN(spec->chat_template, ReadFile(dir + "/chat_template.jinja"));
  }
  spec->eot_id = FindEndOfTurn(*spec);
  return Status::Ok();
}

Result<TokenizerSpec> Load(const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  TROUPE_ASSIGN_OR_RETURN(json doc, ReadJson(path));
  TokenizerSpec spec;
  spec.model = "gpt2";
  TROUPE_RETURN_IF_ERROR(ReadModel(doc, path, &spec));
  TROUPE_RETURN_IF_ERROR(ReadAddedTokens(doc, path, &spec));

  auto pre = doc.find("pre_tokenizer");
  if (pre == doc.end()) return Status::Unsupported(path + ": no pre_tokenizer (byte-level BPE needs one)");
  TROUPE_ASSIGN_OR_RETURN(spec.pre, DetectFamily(*pre, path));
  auto decoder = doc.find("decoder");
  if (decoder == doc.end() || !HasByteLevel(*decoder)) {
    return Status::Unsupported(path + ": decoder is not ByteLevel");
  }
  auto normalizer = doc.find("normalizer");
  if (normalizer != doc.end() && !normalizer->is_null() && TypeOf(*normalizer) != "NFC") {
    return Status::Unsupported(path + ": normalizer '" + TypeOf(*normalizer) + "' is not supported");
  }
  TROUPE_RETURN_IF_ERROR(ReadTokenizerConfig(dir, doc, &spec));
  return spec;
}

}  // namespace

Result<TokenizerSpec> LoadTokenizerJson(const std::string& dir) {
  try {
    return Load(dir);
  } catch (const std::exception& e) {  // nlohmann::json type errors on odd shapes
    return Status::Corrupt(dir + "/tokenizer.json: unexpected structure: " + e.what());
  }
}

}  // namespace troupe
