// The properties every fuzz target checks of a tokenizer read from hostile
// bytes (gguf_fuzz: GGUF metadata; tokenizer_json_fuzz: tokenizer.json).
//
// CheckTokenizerSpec(spec): Tokenizer::Create either refuses the spec with a
// message or gives a Tokenizer for which
//   - Encode of a few sample texts and of some of its own tokens' bytes, with
//     and without special tokens and BOS, gives ids in [0, vocab_size()),
//     BOS first when asked for and the tokenizer has one;
//   - Decode(Encode(s)) == s, where every token's bytes are those its text
//     spells (text::UnicodeToBytes of valid UTF-8: what a merge of two tokens
//     yields) and s keeps only the bytes whose GPT-2 character is a token of
//     that one byte (tokenizer.h: Decode is exact for those);
//   - the chat template spec.chat_template is refused with a message, or
//     renders a conversation (or refuses it with a message) into text that
//     encodes; a hard-coded fallback format holds each message's text.
// A violated property prints what and aborts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/status.h"
#include "pipeline/text/byte_level.h"
#include "pipeline/text/chat_template.h"
#include "pipeline/text/tokenizer.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe::fuzz {

inline void CheckTokenizerProperty(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer property violated: %s\n", what);
    std::abort();
  }
}

inline bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    if (!text::DecodeUtf8(std::string_view(s).substr(i), &len)) return false;
    i += len;
  }
  return true;
}

inline void CheckIds(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) CheckTokenizerProperty(id >= 0 && id < tok.vocab_size(), "encoded ids are in the vocabulary");
}

inline void CheckTokenizer(const Tokenizer& tok, const std::string& chat_template) {
  // Whether Decode is exact (see the top of this file), and which bytes are spelled.
  bool exact = true;
  for (int32_t id = 0; id < tok.vocab_size() && exact; ++id) {
    const std::string& text = tok.TokenText(id);
    exact = ValidUtf8(text) && tok.TokenBytes(id) == text::UnicodeToBytes(text);
  }
  bool spelled[256];
  for (int b = 0; b < 256; ++b) {
    const std::optional<int32_t> id = tok.TokenId(text::ByteToUnicode(static_cast<uint8_t>(b)));
    spelled[b] = id && tok.TokenBytes(*id) == std::string(1, static_cast<char>(b));
  }

  std::vector<std::string> samples = {"Hello world", " hello  world\n\n\tabc 123 45678 don't",
                                      "na\xc3\xafve caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82",
                                      "<|im_start|>user\nhi<|im_end|>\n", "\xff\xfe invalid \xc3"};
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += static_cast<char>(b);
  samples.push_back(all_bytes);
  for (int32_t id = 0; id < tok.vocab_size() && id < 64; ++id) samples.push_back(tok.TokenBytes(id));
  for (int32_t id = tok.vocab_size() - 1; id >= 64 && id >= tok.vocab_size() - 16; --id) {
    samples.push_back(tok.TokenBytes(id));
  }
  for (const std::string& sample : samples) {
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = tok.Encode(sample, /*add_bos=*/false, special);
      CheckIds(tok, ids);
      const std::string decoded = tok.Decode(ids);
      if (exact) {
        std::string kept;
        for (char c : sample) {
          if (spelled[static_cast<uint8_t>(c)]) kept += c;
        }
        if (kept.size() == sample.size()) {
          CheckTokenizerProperty(decoded == sample, "Decode(Encode(s)) == s for spelled bytes");
        } else {
          const std::vector<int32_t> kept_ids = tok.Encode(kept, false, special);
          CheckIds(tok, kept_ids);
          CheckTokenizerProperty(tok.Decode(kept_ids) == kept, "Decode(Encode(s)) == s for spelled bytes");
        }
      }
    }
    const std::vector<int32_t> with_bos = tok.Encode(sample, /*add_bos=*/true);
    CheckIds(tok, with_bos);
    if (tok.bos_id() >= 0) CheckTokenizerProperty(!with_bos.empty() && with_bos[0] == tok.bos_id(), "BOS comes first");
  }

  Result<ChatTemplate> tmpl = ChatTemplate::Create(chat_template, tok);
  if (!tmpl.ok()) {
    CheckTokenizerProperty(!tmpl.status().message().empty(), "a refused chat template names the problem");
    return;
  }
  const std::vector<ChatMessage> chat = {{"user", "What is 2 + 2?"}, {"assistant", "4."}, {"user", "And 3 + 3?"}};
  Result<std::string> prompt = tmpl->Render(chat, /*add_generation_prompt=*/true);
  if (tmpl->format() == ChatFormat::kJinja && !prompt.ok()) {
    // A Jinja template may refuse a conversation (raise_exception) or fail
    // on its own terms; it must say why.
    CheckTokenizerProperty(!prompt.status().message().empty(), "a refused conversation names the problem");
    return;
  }
  CheckTokenizerProperty(prompt.ok(), "a chat with roles renders");
  if (tmpl->format() != ChatFormat::kJinja) {
    for (const ChatMessage& m : chat) {
      CheckTokenizerProperty(prompt->find(m.content) != std::string::npos, "the prompt holds every message");
    }
  }
  CheckIds(tok, tok.Encode(*prompt, !tmpl->RendersBos() && tok.add_bos(), /*parse_special=*/true));
  CheckTokenizerProperty(!tmpl->Render({{"", "x"}}, false).ok(), "a message without a role is refused");
}

// Tokenizer::Create on `spec`, then CheckTokenizer when it is accepted.
inline void CheckTokenizerSpec(const TokenizerSpec& spec) {
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::Create(spec);
  if (!tok.ok()) {
    CheckTokenizerProperty(!tok.status().message().empty(), "a refused tokenizer names the problem");
    return;
  }
  CheckTokenizerProperty((*tok)->vocab_size() == static_cast<int32_t>(spec.tokens.size()), "one id per token");
  CheckTokenizer(**tok, spec.chat_template);
}

}  // namespace troupe::fuzz
