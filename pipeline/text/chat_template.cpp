#include "pipeline/text/chat_template.h"

#include <ctime>
#include <mutex>
#include <optional>
#include <set>

#include "pipeline/log.h"
#include "pipeline/text/builtin_chat_templates.h"
#include "pipeline/text/jinja/parser.h"
#include "pipeline/text/jinja/render.h"

namespace troupe {
namespace {

// ----- A minimal view of Jinja source: text, {{ expressions }}, {% statements %}.

struct Tag {
  enum Kind { kText, kExpression, kStatement } kind;
  std::string_view body;  // without the delimiters and whitespace-control marks
};

std::string_view Trim(std::string_view s, std::string_view chars = " \t\n\r\f\v") {
  size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(chars);
  return s.substr(b, e - b + 1);
}

// Position just past the string literal starting at `pos` (a quote).
size_t SkipLiteral(std::string_view s, size_t pos) {
  char quote = s[pos++];
  while (pos < s.size() && s[pos] != quote) pos += s[pos] == '\\' ? 2 : 1;
  return std::min(pos + 1, s.size());
}

std::vector<Tag> SplitJinja(std::string_view src) {
  std::vector<Tag> tags;
  size_t pos = 0;
  while (pos < src.size()) {
    size_t open = src.find('{', pos);
    while (open != std::string_view::npos && open + 1 < src.size() && src[open + 1] != '{' && src[open + 1] != '%' &&
           src[open + 1] != '#') {
      open = src.find('{', open + 1);
    }
    if (open == std::string_view::npos || open + 1 >= src.size()) {
      tags.push_back({Tag::kText, src.substr(pos)});
      break;
    }
    if (open > pos) tags.push_back({Tag::kText, src.substr(pos, open - pos)});
    char kind = src[open + 1];
    char close = kind == '{' ? '}' : kind;
    size_t i = open + 2;
    while (i + 1 < src.size() && !(src[i] == close && src[i + 1] == '}')) {
      i = (src[i] == '\'' || src[i] == '"') && kind != '#' ? SkipLiteral(src, i) : i + 1;
    }
    std::string_view body = src.substr(open + 2, std::min(i, src.size()) - open - 2);
    body = Trim(Trim(body, "-+"), " \t\n\r");  // whitespace-control marks sit next to the delimiters
    if (kind != '#') tags.push_back({kind == '{' ? Tag::kExpression : Tag::kStatement, body});
    pos = std::min(i + 2, src.size());
  }
  return tags;
}

std::string_view Keyword(const Tag& tag) {
  if (tag.kind != Tag::kStatement) return {};
  size_t end = tag.body.find_first_of(" \t\n\r");
  return tag.body.substr(0, end);
}

// The string literals of a Jinja expression, unescaped, and whether the
// expression is nothing but literals joined by '+' or '~'.
std::vector<std::string> Literals(std::string_view expr, bool* pure) {
  std::vector<std::string> out;
  *pure = true;
  size_t i = 0;
  while (i < expr.size()) {
    char c = expr[i];
    if (c == '\'' || c == '"') {
      std::string lit;
      size_t end = SkipLiteral(expr, i);
      size_t content_end = end - 1 > i && expr[end - 1] == c ? end - 1 : end;
      for (size_t k = i + 1; k < content_end; ++k) {
        if (expr[k] == '\\' && k + 1 < content_end) {
          char e = expr[++k];
          lit += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        } else {
          lit += expr[k];
        }
      }
      out.push_back(std::move(lit));
      i = end;
    } else {
      if (c != '+' && c != '~' && c != ' ' && c != '\t' && c != '\n' && c != '\r') *pure = false;
      ++i;
    }
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Strips a system header/footer in a known format; returns nullopt unless
// plain text remains. Whitespace around the whole is layout (Jinja's
// whitespace control strips it), not part of the message.
std::optional<std::string> PlainSystemText(std::string_view text) {
  text = Trim(text);
  for (std::string_view head : {"<|im_start|>system\n", "<|start_header_id|>system<|end_header_id|>\n\n"}) {
    if (StartsWith(text, head)) text.remove_prefix(head.size());
  }
  for (std::string_view tail : {"<|im_end|>\n", "<|im_end|>", "<|eot_id|>"}) {
    if (EndsWith(text, tail)) {
      text.remove_suffix(tail.size());
      break;
    }
  }
  if (Trim(text).empty() || text.find("<|") != std::string_view::npos) return std::nullopt;
  return std::string(text);
}

// The output of tags[begin, end) when it is only constant text, else nullopt.
std::optional<std::string> ConstantOutput(const std::vector<Tag>& tags, size_t begin, size_t end) {
  std::string text;
  for (size_t i = begin; i < end; ++i) {
    const Tag& tag = tags[i];
    if (tag.kind == Tag::kText) {
      text += tag.body;
    } else if (tag.kind == Tag::kExpression) {
      bool pure = false;
      for (const std::string& lit : Literals(tag.body, &pure)) text += lit;
      if (!pure) return std::nullopt;
    } else {
      return std::nullopt;  // nested logic: not a fixed message
    }
  }
  return text;
}

// Whether an `if` condition tests that the first message is (==) or is not
// (!=) a system message. Sets *negated for "!=".
bool TestsFirstRoleIsSystem(std::string_view cond, bool* negated) {
  if (cond.find("messages[0]") == std::string_view::npos || cond.find("role") == std::string_view::npos ||
      (cond.find("'system'") == std::string_view::npos && cond.find("\"system\"") == std::string_view::npos)) {
    return false;
  }
  *negated = cond.find("!=") != std::string_view::npos;
  return *negated || cond.find("==") != std::string_view::npos;
}

}  // namespace

std::string FindDefaultSystemMessage(std::string_view jinja_source) {
  std::vector<Tag> tags = SplitJinja(jinja_source);
  for (size_t i = 0; i < tags.size(); ++i) {
    std::string_view kw = Keyword(tags[i]);
    bool negated = false;
    if ((kw != "if" && kw != "elif") || !TestsFirstRoleIsSystem(tags[i].body, &negated)) continue;
    // The branch ends at the first else/elif/endif at this nesting depth.
    size_t else_at = 0, end_at = 0;
    int depth = 0;
    for (size_t j = i + 1; j < tags.size() && end_at == 0; ++j) {
      std::string_view k = Keyword(tags[j]);
      if (k == "if") {
        ++depth;
      } else if (k == "endif") {
        if (depth-- == 0) end_at = j;
      } else if ((k == "else" || k == "elif") && depth == 0 && else_at == 0) {
        else_at = j;
      }
    }
    if (end_at == 0) continue;
    std::optional<std::string> text;
    if (negated) {
      text = ConstantOutput(tags, i + 1, else_at ? else_at : end_at);
    } else if (else_at != 0 && Keyword(tags[else_at]) == "else") {
      text = ConstantOutput(tags, else_at + 1, end_at);
    }
    if (text) {
      if (auto plain = PlainSystemText(*text)) return *plain;
    }
  }
  // {% set default_system_message = '...' %}
  for (const Tag& tag : tags) {
    if (Keyword(tag) != "set") continue;
    size_t eq = tag.body.find('=');
    if (eq == std::string_view::npos || tag.body.substr(0, eq).find("system") == std::string_view::npos) continue;
    bool pure = false;
    std::vector<std::string> lits = Literals(tag.body.substr(eq + 1), &pure);
    if (pure && lits.size() == 1) {
      if (auto plain = PlainSystemText(lits[0])) return *plain;
    }
  }
  return "";
}

namespace {

// A warning once per distinct message: Create runs for every chat request.
void WarnOnce(const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.size() < 64 && said.insert(message).second) logging::Warn(message);
}

jinja::Value StrftimeNow() {
  return jinja::Value::MakeFunction("strftime_now", [](const jinja::Args& a) -> Result<jinja::Value> {
    const jinja::Value* fmt = a.Get(0, "format");
    if (fmt == nullptr || !fmt->is_string()) return Status::InvalidArgument("strftime_now needs a format string");
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[256];
    size_t n = std::strftime(buf, sizeof buf, fmt->as_string().c_str(), &local);
    if (n == 0 && !fmt->as_string().empty()) return Status::InvalidArgument("strftime_now: format too long");
    return jinja::Value::String(std::string(buf, n));
  });
}

jinja::Value RaiseException() {
  return jinja::Value::MakeFunction("raise_exception", [](const jinja::Args& a) -> Result<jinja::Value> {
    const jinja::Value* msg = a.Get(0, "message");
    return Status::InvalidArgument("the chat template refuses this conversation: " + (msg ? msg->Str() : ""));
  });
}

}  // namespace

Status ChatTemplate::ChooseFallback(std::string_view jinja_source, const Tokenizer& tokenizer) {
  size_t chatml_at = jinja_source.find("<|im_start|>");
  size_t llama3_at = jinja_source.find("<|start_header_id|>");
  if (llama3_at != std::string_view::npos && llama3_at < chatml_at) {
    fallback_ = ChatFormat::kLlama3;
  } else if (chatml_at != std::string_view::npos || tokenizer.TokenId("<|im_start|>")) {
    fallback_ = ChatFormat::kChatMl;
  } else {
    return Status::Unsupported(
        "no fallback format: the template is not ChatML or Llama-3 and the vocabulary has no "
        "<|im_start|> to fall back on ChatML");
  }
  const bool chatml = fallback_ == ChatFormat::kChatMl;
  for (const char* marker : chatml
                                ? std::vector<const char*>{"<|im_start|>", "<|im_end|>"}
                                : std::vector<const char*>{"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}) {
    if (!tokenizer.TokenId(marker)) {
      return Status::Unsupported(std::string("the fallback format needs token ") + marker +
                                 ", which the vocabulary lacks");
    }
  }
  has_fallback_ = true;
  const std::string& bos = tokenizer.TokenText(tokenizer.bos_id());
  if (chatml) {
    renders_bos_ = bos == "<|im_start|>";
  } else {
    bool wants_bos = !bos.empty() && (jinja_source.find("bos_token") != std::string_view::npos ||
                                      jinja_source.find(bos) != std::string_view::npos);
    if (wants_bos) bos_text_ = bos;
    renders_bos_ = wants_bos;
    trim_content_ = jinja_source.find("trim") != std::string_view::npos;
  }
  return Status::Ok();
}

Result<ChatTemplate> ChatTemplate::Create(std::string_view jinja_source, const Tokenizer& tokenizer) {
  ChatTemplate t;
  t.bos_token_ = tokenizer.TokenText(tokenizer.bos_id());
  t.eos_token_ = tokenizer.TokenText(tokenizer.eos_id());
  t.default_system_ = FindDefaultSystemMessage(jinja_source);
  Status fallback = t.ChooseFallback(jinja_source, tokenizer);

  std::string_view source = jinja_source;
  std::string origin = "the model's chat template";
  if (source.empty()) {
    std::optional<BuiltinChatTemplate> builtin = FindBuiltinChatTemplate(tokenizer);
    if (!builtin) {
      return Status::Unsupported(
          "the model has no chat template, and its vocabulary has none of the markers of a built-in one "
          "(<|im_start|>, <start_of_turn>, <|start_header_id|>)");
    }
    source = builtin->source;
    origin = "the built-in " + std::string(builtin->name) + " chat template (the model has none)";
  }
  Result<jinja::Template> parsed = jinja::Parse(source);
  if (parsed.ok()) {
    t.format_ = ChatFormat::kJinja;
    t.origin_ = origin;
    t.jinja_ = std::make_shared<const jinja::Template>(std::move(parsed).value());
    // Does a plain conversation begin with BOS? (Templates that refuse one
    // user turn get a system turn first.)
    const std::string& bos = t.bos_token_;
    for (const auto& probe :
         {std::vector<ChatMessage>{{"user", "x"}}, std::vector<ChatMessage>{{"system", "x"}, {"user", "x"}}}) {
      Result<std::string> text = t.Render(probe, true);
      if (!text.ok()) continue;
      t.renders_bos_ = !bos.empty() && text->compare(0, bos.size(), bos) == 0;
      break;
    }
    return t;
  }
  if (!fallback.ok()) {
    return Status(parsed.status().code(), "chat template: " + parsed.status().message() + "; " + fallback.message());
  }
  t.format_ = t.fallback_;
  t.origin_ = std::string(t.format_ == ChatFormat::kChatMl ? "ChatML" : "Llama-3") + " fallback (" +
              parsed.status().message() + ")";
  WarnOnce("chat template: " + parsed.status().message() + "; rendering the hard-coded " +
           (t.format_ == ChatFormat::kChatMl ? "ChatML" : "Llama-3") + " format instead");
  return t;
}

Result<ChatTemplate> ChatTemplate::FromSource(std::string_view jinja_source, std::string bos_text,
                                              std::string eos_text) {
  TROUPE_ASSIGN_OR_RETURN(jinja::Template parsed, jinja::Parse(jinja_source));
  ChatTemplate t;
  t.format_ = ChatFormat::kJinja;
  t.origin_ = "a given template";
  t.jinja_ = std::make_shared<const jinja::Template>(std::move(parsed));
  t.bos_token_ = std::move(bos_text);
  t.eos_token_ = std::move(eos_text);
  t.default_system_ = FindDefaultSystemMessage(jinja_source);
  return t;
}

Result<std::string> ChatTemplate::Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role.empty()) {
      return Status::InvalidArgument("chat message " + std::to_string(i) + " has an empty role");
    }
  }
  if (format_ != ChatFormat::kJinja) return RenderFallback(messages, add_generation_prompt);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  Result<std::string> text = RenderJson(list, add_generation_prompt);
  if (!text.ok() && text.status().code() == StatusCode::kUnsupported && has_fallback_) {
    WarnOnce("chat template: " + text.status().message() + "; rendering the hard-coded " +
             (fallback_ == ChatFormat::kChatMl ? "ChatML" : "Llama-3") + " format instead");
    return RenderFallback(messages, add_generation_prompt);
  }
  return text;
}

Result<std::string> ChatTemplate::RenderJson(const nlohmann::ordered_json& messages, bool add_generation_prompt) const {
  if (!jinja_) {
    return Status::Unsupported("this chat template is a hard-coded fallback (" + origin_ +
                               "): it renders role/content messages only");
  }
  jinja::Dict vars = {
      {"messages", jinja::Value::FromJson(messages)},
      {"add_generation_prompt", jinja::Value::Bool(add_generation_prompt)},
      {"bos_token", jinja::Value::String(bos_token_)},
      {"eos_token", jinja::Value::String(eos_token_)},
      {"tools", jinja::Value::None()},
      {"documents", jinja::Value::None()},
      {"raise_exception", RaiseException()},
      {"strftime_now", StrftimeNow()},
  };
  return jinja::Render(*jinja_, vars);
}

Result<std::string> ChatTemplate::RenderFallback(const std::vector<ChatMessage>& messages,
                                                 bool add_generation_prompt) const {
  std::vector<ChatMessage> all;
  if (!default_system_.empty() && !messages.empty() && messages[0].role != "system") {
    all.push_back({"system", default_system_});
  }
  all.insert(all.end(), messages.begin(), messages.end());

  std::string out;
  const ChatFormat format = format_ == ChatFormat::kJinja ? fallback_ : format_;
  if (format == ChatFormat::kChatMl) {
    for (const ChatMessage& m : all) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
  } else {
    out += bos_text_;
    for (const ChatMessage& m : all) {
      out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
      out += trim_content_ ? Trim(m.content) : std::string_view(m.content);
      out += "<|eot_id|>";
    }
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  }
  return out;
}

}  // namespace troupe
