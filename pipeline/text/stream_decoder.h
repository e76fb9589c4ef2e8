// StreamDecoder: turns generated token ids, fed one at a time, into text that
// is safe to print — whole UTF-8 characters only.
//
// A character whose bytes are split across tokens (an emoji is often two or
// three byte tokens) is held back until its last byte arrives. Bytes that can
// never become a valid character (a stray continuation byte, an impossible
// lead byte, a sequence broken off by another character) are passed through
// as they are rather than held. Flush() returns whatever is still held, e.g.
// when generation stops in the middle of a character.
//
// Ownership: borrows the Tokenizer, which must outlive the decoder.
// Thread-safety: one decoder per stream; not safe for concurrent use.
// Failure: none; out-of-range ids contribute nothing (as in Tokenizer::Decode).
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/text/tokenizer.h"

namespace troupe {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // Adds one token; returns the text that became printable (maybe empty).
  std::string Feed(int32_t id);
  // Returns everything still held back and empties the decoder.
  std::string Flush();
  // Number of bytes held back, waiting for the rest of a character.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

// How many bytes at the end of `bytes` are the start of a UTF-8 character
// that further bytes could still complete (0..3). Exposed for tests.
size_t IncompleteUtf8Suffix(const std::string& bytes);

}  // namespace troupe
