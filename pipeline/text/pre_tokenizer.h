// PreTokenizer: splits text into the pieces that byte-level BPE encodes one
// at a time, using the regular expressions of a named pre-tokenizer family.
//
// Families (the GGUF `tokenizer.ggml.pre` names):
//   "gpt2", "default"          GPT-2 regex
//   "smollm"                   every \p{N} character isolated, then GPT-2 regex
//   "llama-bpe", "llama3",
//   "llama-v3"                 Llama-3 regex (case-insensitive contractions,
//                              numbers in groups of up to three digits)
//   "qwen2", "deepseek-r1-qwen" Qwen2 regex (Llama-3 with single digits)
// Stages apply in order; each later stage only sees one piece of the stage
// before (lookaheads stop at the piece's end), as in Hugging Face `tokenizers`.
// Text between regex matches is kept as a piece of its own, so the pieces
// always cover the input exactly. Input need not be valid UTF-8: invalid bytes
// never match a pattern character and end up in their own pieces.
//
// Regexes are PCRE2 with UTF + UCP (Unicode properties for \p{..}), JIT
// compiled when PCRE2 supports it; \s is rewritten to the Unicode White_Space
// property (PCRE2's own \s also takes U+180E, Hugging Face's does not). Thread-safety: immutable after Create;
// Split may be called from many threads at once.
// Failure: Create returns Unsupported for an unknown family and Internal if a
// pattern fails to compile.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/status.h"

namespace troupe::text {

class Pcre2Regex;

class PreTokenizer {
 public:
  static Result<std::unique_ptr<PreTokenizer>> Create(const std::string& family);
  ~PreTokenizer();

  // Appends the pieces of `text`, in order, to `pieces`. The pieces view
  // `text`'s bytes and concatenate back to `text`.
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;

  // Whether BPE should emit a piece that is itself in the vocabulary as one
  // token without applying merges (Hugging Face `ignore_merges`, Llama-3).
  bool ignore_merges() const { return ignore_merges_; }

 private:
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Pcre2Regex>> stages_;
  bool ignore_merges_ = false;
};

// The known family names, for error messages and tests.
std::vector<std::string> KnownPreTokenizerFamilies();

// Canonical pattern texts, shared with tokenizer.json family detection.
extern const char kGpt2Pattern[];
extern const char kLlama3Pattern[];
extern const char kQwen2Pattern[];

}  // namespace troupe::text
