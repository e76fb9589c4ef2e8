// LoadTokenizerJson: reads the tokenizer of a Hugging Face model folder
// (`tokenizer.json`, plus `tokenizer_config.json` and `chat_template.jinja`
// when present) into a TokenizerSpec.
//
// Accepted: model.type "BPE" with a byte-level pre-tokenizer and decoder.
// The pre-tokenizer configuration is mapped to a family:
//   ByteLevel(use_regex)                                      -> "gpt2"
//   Sequence[Digits(individual_digits), ByteLevel(use_regex)] -> "smollm"
//   Sequence[Split(Llama-3 regex), ByteLevel(no regex)]       -> "llama-bpe"
//   Sequence[Split(Qwen2 regex), ByteLevel(no regex)]         -> "qwen2"
// Vocabulary from model.vocab, merges as "a b" strings or ["a", "b"] pairs,
// added_tokens: `special` -> TokenType::kControl, else kUserDefined. BOS/EOS
// from tokenizer_config.json (strings or {"content": ...} objects; failing the
// file, config.json's bos/eos_token_id); add_bos from add_bos_token or, when
// absent, from a TemplateProcessing post-processor that starts with BOS; the
// end-of-turn id from a known end-of-turn token ("<|eot_id|>", "<|im_end|>",
// "<|end|>", "<end_of_turn>") other than EOS. chat_template may be a string
// or a list of named templates ("default" is taken).
//
// Known gap: a NFC normalizer (Qwen2) is accepted but not applied; text that
// is not already NFC may tokenize differently from Hugging Face.
//
// Failure: NotFound when `dir`/tokenizer.json is missing; Corrupt for invalid
// JSON, fields of the wrong shape, or a token id of 2^24 or more or more than
// 65536 past the number of tokens the file lists (ids may leave holes, but the
// vocabulary is as long as its largest id); Unsupported for another model
// type or pre-tokenizer; InvalidArgument when a named special token is not in
// the vocabulary. Every message names the file. Thread-safety: a pure function.
#pragma once

#include <string>

#include "pipeline/status.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe {

Result<TokenizerSpec> LoadTokenizerJson(const std::string& dir);

}  // namespace troupe
