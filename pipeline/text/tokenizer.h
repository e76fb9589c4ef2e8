// Tokenizer: byte-level BPE (spec.model "gpt2": GPT-2 / Hugging Face
// `tokenizers` semantics) or SentencePiece BPE ("llama": llama.cpp's
// llm_tokenizer_spm semantics), built from a TokenizerSpec. Text -> token ids
// and back, exactly.
//
// Encode, in order:
//   1. added tokens are split out of the text first, leftmost then longest
//      match: user-defined tokens always, control and unknown-type tokens
//      only when `parse_special` is true (as llama.cpp and HF both do; the
//      two differ only where added tokens overlap, which llama.cpp resolves
//      longest token first);
//   2. BPE: every other stretch is cut by the family's pre-tokenizer regex
//      (see pre_tokenizer.h) and each piece is byte-level BPE encoded by
//      merge rank (see bpe_model.h);
//      SentencePiece: every other stretch, with a space in front when
//      spec.add_space_prefix, spaces as "▁", is merged by token score (see
//      spm_model.h); spec.pre and spec.merges are not used.
// Decode is exact: normal tokens give back their bytes (BPE: GPT-2 byte
// mapping reversed; SentencePiece: "▁" as a space), "<0xXX>" byte tokens their
// byte, added tokens their text, so Decode(Encode(s, false, false)) == s for
// any byte string s, valid UTF-8 or not, as long as the vocabulary has a
// token for every byte in s. A byte without any token (SmolLM2 lacks 21, all
// control characters or bytes that never occur in valid UTF-8) is dropped, as
// Hugging Face and llama.cpp do. SentencePiece exceptions, as in llama.cpp: a
// "▁" in s comes back as a space, and with add_space_prefix each stretch of
// plain text comes back with the space Encode put in front of it.
//
// Ownership: the Tokenizer copies what it needs from the spec.
// Thread-safety: all methods are const and safe to call concurrently (the
// BPE piece cache has its own lock).
// Failure: Create returns Unsupported for a model other than "gpt2" or
// "llama", or (BPE) an unknown pre-tokenizer family; InvalidArgument for an
// empty vocabulary, token_types of the wrong length, special ids out of range,
// add_bos without a BOS token, (BPE) merges that are malformed or name tokens
// outside the vocabulary, or (SentencePiece) scores missing, not one per
// token or NaN. Encode and Decode never fail (see Decode).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeline/status.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe {

namespace text {
class BpeModel;
class PreTokenizer;
class SpmModel;
}  // namespace text

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> Create(const TokenizerSpec& spec);
  ~Tokenizer();

  // Token ids for `text`, BOS first when `add_bos` (and the vocabulary has
  // one). `parse_special` = false treats control-token text as plain text.
  std::vector<int32_t> Encode(std::string_view text, bool add_bos, bool parse_special = true) const;

  // The bytes of the tokens, concatenated. Special tokens are rendered as their
  // text. Ids outside [0, vocab_size()) are skipped (they contribute nothing).
  std::string Decode(const std::vector<int32_t>& ids) const;

  // The bytes one token decodes to; empty for an out-of-range id.
  const std::string& TokenBytes(int32_t id) const;
  // The token's text as stored in the vocabulary (byte-unicode form for normal
  // BPE tokens, "▁" for spaces in SentencePiece ones); empty for an
  // out-of-range id.
  const std::string& TokenText(int32_t id) const;
  // The id whose stored text is `token_text` ("<|im_start|>", "Ġthe").
  std::optional<int32_t> TokenId(std::string_view token_text) const;
  TokenType token_type(int32_t id) const;

  int32_t bos_id() const { return bos_id_; }  // -1 when the model has none
  int32_t eos_id() const { return eos_id_; }  // -1 when the model has none
  int32_t eot_id() const { return eot_id_; }  // -1 when the model has none
  bool add_bos() const { return add_bos_; }
  int32_t vocab_size() const { return static_cast<int32_t>(texts_.size()); }
  // True for the ids that end a reply: EOS and end-of-turn.
  bool IsEos(int32_t id) const { return id >= 0 && (id == eos_id_ || id == eot_id_); }

 private:
  Tokenizer();
  struct AddedToken {
    std::string text;
    int32_t id;
    bool special;  // control/unknown: split only when parse_special
  };
  void EncodeText(std::string_view text, std::vector<int32_t>* out) const;
  // The longest added token starting at `text[pos]`, or nullptr.
  const AddedToken* MatchAdded(std::string_view text, size_t pos, bool parse_special) const;

  std::vector<std::string> texts_;  // id -> stored text
  std::vector<std::string> bytes_;  // id -> decoded bytes
  std::vector<TokenType> types_;
  // Added tokens by first byte, longest first.
  std::unordered_map<unsigned char, std::vector<AddedToken>> added_;
  std::unique_ptr<text::PreTokenizer> pre_;
  std::unique_ptr<text::BpeModel> bpe_;  // byte-level BPE, or
  std::unique_ptr<text::SpmModel> spm_;  // SentencePiece
  bool add_space_prefix_ = false;        // SentencePiece dummy prefix
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  int32_t eot_id_ = -1;
  bool add_bos_ = false;
};

}  // namespace troupe
