// TokenizerSpec: everything needed to build a Tokenizer — byte-level BPE
// ("gpt2") or SentencePiece BPE ("llama") — read from either GGUF metadata
// (tokenizer.ggml.*) or a Hugging Face tokenizer.json (+ tokenizer_config.json).
// Plain data; the Tokenizer copies what it needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

// GGUF tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct TokenizerSpec {
  std::string model = "gpt2";          // tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
  std::string pre = "default";         // pre-tokenizer family: "smollm", "gpt2", "llama-bpe", ... (BPE only)
  std::vector<std::string> tokens;     // id -> token text: GPT-2 byte->unicode form (BPE), "▁" for space (SPM)
  std::vector<TokenType> token_types;  // same length as tokens (kNormal when absent)
  std::vector<std::string> merges;     // "a b", rank = index (BPE only)
  std::vector<float> scores;           // id -> merge score, higher merges first (SPM only; same length as tokens)
  bool add_space_prefix = false;       // SPM: put a space in front of each stretch of plain text
  int32_t unk_id = -1;                 // unknown token, -1 if none
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;  // end-of-turn (Llama-3 <|eot_id|>), -1 if none
  int32_t pad_id = -1;
  bool add_bos = false;       // prepend BOS when encoding a prompt
  std::string chat_template;  // Jinja source from the model, may be empty
};

}  // namespace troupe
