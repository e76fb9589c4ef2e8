// SpmModel: the vocabulary and scores of a SentencePiece BPE tokenizer (GGUF
// tokenizer.ggml.model = "llama": Llama 1/2, Mistral v0.x, Gemma), and the
// merge loop that turns one stretch of plain text into token ids — the
// algorithm of llama.cpp's llm_tokenizer_spm.
//
// EncodeFragment, on one stretch of text between added tokens:
//   1. with `prefix_space`, a space is put in front (the "dummy prefix");
//   2. every ASCII space becomes "▁" (U+2581); no other normalization;
//   3. the text is cut into UTF-8 characters (the length of each taken from
//      its lead byte alone, as llama.cpp does, so invalid UTF-8 still gives
//      whole bytes);
//   4. adjacent symbols whose concatenation is a vocabulary token (of any
//      type) are merged, the pair whose token has the highest score first and
//      the leftmost first among equal scores, until no pair is a token;
//   5. each symbol becomes its token; a symbol that is no token (a character
//      outside the vocabulary) becomes one token per byte: "<0xXX>", else the
//      byte's own one-character token, else the unknown token; a byte with
//      none of these is dropped.
//
// Thread-safety: immutable after Create; EncodeFragment may run on many
// threads at once.
// Failure: Create returns InvalidArgument when `scores` is empty, not one per
// token, or holds a NaN.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeline/status.h"

namespace troupe::text {

class SpmModel {
 public:
  // `tokens[id]` is the token text as stored ("▁the"); `unk_id` is -1 when
  // the vocabulary has no unknown token. When two ids share a text the lower
  // id wins.
  static Result<std::unique_ptr<SpmModel>> Create(const std::vector<std::string>& tokens,
                                                  const std::vector<float>& scores, int32_t unk_id);

  // Appends the ids for one stretch of raw text (no added tokens in it) to
  // `out`. An empty stretch gives nothing, even with `prefix_space`.
  void EncodeFragment(std::string_view text, bool prefix_space, std::vector<int32_t>* out) const;

  // The id of a token given its stored text, if any.
  std::optional<int32_t> Find(std::string_view text) const;

 private:
  SpmModel() = default;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<float> scores_;
  int32_t byte_ids_[256];  // the token(s) for a byte outside any symbol token, -1 = dropped
};

}  // namespace troupe::text
