// StreamDecoder: turns generated token ids, fed one at a time, into text that
// is always valid UTF-8 — whole characters only.
//
// A character whose bytes are split across tokens (an emoji is often two or
// three byte tokens) is held back until its last byte arrives. Bytes that can
// never become a valid character (a stray continuation byte, an impossible
// lead byte, a sequence broken off by another character, an overlong form or
// a surrogate) come out as U+FFFD REPLACEMENT CHARACTER, one per maximal
// invalid subpart — the rule of Unicode §3.9 that Python's
// `bytes.decode("utf-8", "replace")` and Rust's `String::from_utf8_lossy`
// (hence Hugging Face's decoders) follow. So the concatenated output of a
// stream equals the lossy decoding of all its bytes, and every piece can go
// into a Protobuf `string` field or a JSON string as it is. Flush() ends the
// stream: a character still incomplete then becomes one U+FFFD.
//
// Ownership: borrows the Tokenizer, which must outlive the decoder.
// Thread-safety: one decoder per stream; not safe for concurrent use.
// Failure: none; out-of-range ids contribute nothing (as in Tokenizer::Decode).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipeline/text/tokenizer.h"

namespace troupe {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // Adds one token; returns the text that became printable (maybe empty).
  std::string Feed(int32_t id);
  // Returns what is still held back (as U+FFFD) and empties the decoder.
  std::string Flush();
  // Number of bytes held back, waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

// Appends `bytes` to `out` as valid UTF-8, each maximal invalid subpart
// replaced by U+FFFD. When `at_end` is false, a last character that further
// bytes could still complete is left out; returns how many bytes were
// consumed (bytes.size() minus that held-back suffix, 0..3 bytes).
size_t AppendUtf8Lossy(std::string_view bytes, bool at_end, std::string* out);

// Whether `bytes` is valid UTF-8 (what Protobuf demands of `string` fields).
bool IsValidUtf8(std::string_view bytes);

}  // namespace troupe
