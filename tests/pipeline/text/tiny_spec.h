// A tiny synthetic byte-level BPE vocabulary for tokenizer unit tests.
//
// ids 0..255: one token per byte (GPT-2 byte-unicode form), then the merged
// tokens of kTinyMerges in order, then added tokens. Nothing here comes from a
// real model, so every expected id list can be checked by hand.
#pragma once

#include <string>
#include <vector>

#include "pipeline/text/byte_level.h"
#include "pipeline/tokenizer_spec.h"

namespace troupe::testing {

// Merges in rank order; "Ġ" is the byte-unicode form of a space.
inline const std::vector<std::string> kTinyMerges = {
    "h e",      // 256 he
    "l l",      // 257 ll
    "he ll",    // 258 hell
    "hell o",   // 259 hello
    "Ġ w",      // 260 Ġw
    "o r",      // 261 or
    "Ġw or",    // 262 Ġwor
    "Ġwor l",   // 263 Ġworl
    "Ġworl d",  // 264 Ġworld
    "b c",      // 265 bc   (ranked before "a b": "abc" -> a + bc)
    "a b",      // 266 ab
    "a a",      // 267 aa   ("aaa" -> aa + a, leftmost first)
    "1 2",      // 268 12
    "12 3",     // 269 123
};
constexpr int kIdHe = 256, kIdHello = 259, kIdSpaceWorld = 264, kIdBc = 265, kIdAb = 266, kIdAa = 267, kId12 = 268,
              kId123 = 269;
constexpr int kIdImStart = 270, kIdImEnd = 271, kIdTool = 272, kIdEndOfText = 273;

inline TokenizerSpec TinySpec(const std::string& pre = "gpt2") {
  TokenizerSpec spec;
  spec.model = "gpt2";
  spec.pre = pre;
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(text::ByteToUnicode(static_cast<uint8_t>(b)));
  spec.token_types.assign(256, TokenType::kNormal);
  for (const std::string& merge : kTinyMerges) {
    size_t space = merge.find(' ');
    spec.tokens.push_back(merge.substr(0, space) + merge.substr(space + 1));
    spec.token_types.push_back(TokenType::kNormal);
  }
  spec.merges = kTinyMerges;
  spec.tokens.push_back("<|im_start|>");
  spec.token_types.push_back(TokenType::kControl);
  spec.tokens.push_back("<|im_end|>");
  spec.token_types.push_back(TokenType::kControl);
  spec.tokens.push_back("<tool>");
  spec.token_types.push_back(TokenType::kUserDefined);
  spec.tokens.push_back("<|endoftext|>");
  spec.token_types.push_back(TokenType::kControl);
  spec.bos_id = kIdImStart;
  spec.eos_id = kIdImEnd;
  spec.eot_id = -1;
  return spec;
}

}  // namespace troupe::testing
