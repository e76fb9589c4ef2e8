// Byte-level helpers shared by the tokenizer: the GPT-2 byte <-> unicode
// mapping and small UTF-8 utilities.
//
// GPT-2 style vocabularies store every token as printable text: each raw byte
// b is replaced by one Unicode character ByteToUnicode(b) (printable Latin-1
// bytes map to themselves, the other 68 bytes to U+0100..U+0143). A token text
// in that form converts back to raw bytes with UnicodeToBytes.
//
// Pure functions over static tables; thread-safe; never fail.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::text {

// The UTF-8 encoding of the character that stands for raw byte `b`.
const std::string& ByteToUnicode(uint8_t b);

// The raw byte represented by code point `cp`, or nullopt when `cp` is not one
// of the 256 mapped characters.
std::optional<uint8_t> UnicodeToByte(uint32_t cp);

// Raw bytes -> token text in byte-unicode form.
std::string BytesToUnicode(std::string_view bytes);

// Token text in byte-unicode form -> raw bytes. Characters outside the mapping
// (and invalid UTF-8) are copied through unchanged, as their own bytes.
std::string UnicodeToBytes(std::string_view text);

// Appends the UTF-8 encoding of code point `cp` to `out`.
void AppendUtf8(uint32_t cp, std::string* out);

// Decodes one UTF-8 character at the start of `s`. Returns the code point and
// sets *len to its length in bytes; an invalid or truncated sequence yields
// nullopt with *len = 1. `s` must not be empty.
std::optional<uint32_t> DecodeUtf8(std::string_view s, size_t* len);

// Length of the UTF-8 sequence introduced by lead byte `b`: 1..4, or 0 when
// `b` is a continuation byte or can never start a sequence.
int Utf8SequenceLength(uint8_t b);

}  // namespace troupe::text
