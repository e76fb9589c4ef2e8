#include "pipeline/text/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace troupe::text {

const char kGpt2Pattern[] = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char kLlama3Pattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char kQwen2Pattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

const char kDigitPattern[] = R"(\p{N})";

// PCRE2's \s also matches U+180E (MONGOLIAN VOWEL SEPARATOR), which Unicode
// no longer counts as white space and Hugging Face's regex engine does not
// match. Rewrites \s and \S to the Unicode White_Space property spelled out:
// U+0009..U+000D, U+0085 and the separators \p{Z}.
std::string WithUnicodeWhiteSpace(const char* pattern) {
  static const char kSpace[] = R"(\t-\r\x{85}\p{Z})";
  std::string out;
  bool in_class = false;
  for (const char* p = pattern; *p != '\0'; ++p) {
    if (*p == '\\' && p[1] != '\0') {
      if (p[1] == 's') {
        out += in_class ? std::string(kSpace) : "[" + std::string(kSpace) + "]";
      } else if (p[1] == 'S' && !in_class) {
        out += "[^" + std::string(kSpace) + "]";
      } else {
        out.append(p, 2);
      }
      ++p;
      continue;
    }
    if (*p == '[') in_class = true;
    if (*p == ']') in_class = false;
    out.push_back(*p);
  }
  return out;
}

}  // namespace

// One compiled pattern. Matching allocates its own match data, so a single
// compiled object serves any number of threads.
class Pcre2Regex {
 public:
  static Result<std::unique_ptr<Pcre2Regex>> Compile(const std::string& pattern) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      return Status::Internal("pre-tokenizer regex does not compile at offset " + std::to_string(offset) + ": " +
                              reinterpret_cast<const char*>(message));
    }
    auto regex = std::unique_ptr<Pcre2Regex>(new Pcre2Regex(code));
    // JIT is an optimisation: without it (or if it fails) the interpreter runs.
    regex->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return regex;
  }

  ~Pcre2Regex() { pcre2_code_free(code_); }

  // Splits `text` into matches and the gaps between them ("isolated").
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t pos = 0;   // start of the next match attempt
    size_t done = 0;  // bytes already emitted
    while (pos < text.size()) {
      int rc = Match(subject, text.size(), pos, md);
      if (rc < 0) break;  // no further match (or a matcher failure): the rest is one gap
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      size_t start = ov[0], end = ov[1];
      if (end == start) {  // our patterns never match empty; guard anyway
        pos = start + 1;
        continue;
      }
      if (start > done) pieces->push_back(text.substr(done, start - done));
      pieces->push_back(text.substr(start, end - start));
      done = pos = end;
    }
    if (done < text.size()) pieces->push_back(text.substr(done));
    pcre2_match_data_free(md);
  }

 private:
  explicit Pcre2Regex(pcre2_code* code) : code_(code) {}

  int Match(PCRE2_SPTR subject, size_t size, size_t pos, pcre2_match_data* md) const {
    if (jit_) {
      int rc = pcre2_jit_match(code_, subject, size, pos, 0, md, nullptr);
      // Very long runs can exhaust the JIT stack; the interpreter uses the heap.
      if (rc != PCRE2_ERROR_JIT_STACKLIMIT) return rc;
    }
    return pcre2_match(code_, subject, size, pos, PCRE2_NO_JIT, md, nullptr);
  }

  pcre2_code* code_;
  bool jit_ = false;
};

PreTokenizer::~PreTokenizer() = default;

std::vector<std::string> KnownPreTokenizerFamilies() {
  return {"default", "gpt2", "smollm", "llama-bpe", "llama3", "llama-v3", "qwen2", "deepseek-r1-qwen"};
}

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(const std::string& family) {
  std::vector<const char*> patterns;
  bool ignore_merges = false;
  if (family == "gpt2" || family == "default") {
    patterns = {kGpt2Pattern};
  } else if (family == "smollm") {
    patterns = {kDigitPattern, kGpt2Pattern};
  } else if (family == "llama-bpe" || family == "llama3" || family == "llama-v3") {
    patterns = {kLlama3Pattern};
    ignore_merges = true;
  } else if (family == "qwen2" || family == "deepseek-r1-qwen") {
    patterns = {kQwen2Pattern};
  } else {
    std::string known;
    for (const std::string& f : KnownPreTokenizerFamilies()) known += (known.empty() ? "" : ", ") + f;
    return Status::Unsupported("unknown pre-tokenizer family '" + family + "' (known: " + known + ")");
  }
  auto pre = std::unique_ptr<PreTokenizer>(new PreTokenizer());
  pre->ignore_merges_ = ignore_merges;
  for (const char* pattern : patterns) {
    TROUPE_ASSIGN_OR_RETURN(auto regex, Pcre2Regex::Compile(WithUnicodeWhiteSpace(pattern)));
    pre->stages_.push_back(std::move(regex));
  }
  return pre;
}

void PreTokenizer::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (text.empty()) return;
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (size_t s = 0; s < stages_.size(); ++s) {
    next.clear();
    for (std::string_view piece : current) stages_[s]->Split(piece, &next);
    current.swap(next);
  }
  pieces->insert(pieces->end(), current.begin(), current.end());
}

}  // namespace troupe::text
