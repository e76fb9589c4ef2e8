#include "pipeline/text/stream_decoder.h"

#include "pipeline/text/byte_level.h"

namespace troupe {
namespace {

// Whether `second` may follow lead byte `lead` in a valid sequence (the
// ranges that exclude overlong forms, surrogates and code points > U+10FFFF).
bool ValidSecondByte(uint8_t lead, uint8_t second) {
  if ((second & 0xC0) != 0x80) return false;
  switch (lead) {
    case 0xE0: return second >= 0xA0;
    case 0xED: return second <= 0x9F;
    case 0xF0: return second >= 0x90;
    case 0xF4: return second <= 0x8F;
    default: return true;
  }
}

}  // namespace

size_t IncompleteUtf8Suffix(const std::string& bytes) {
  const size_t size = bytes.size();
  // The candidate lead byte is at most 3 bytes from the end.
  for (size_t back = 1; back <= 3 && back <= size; ++back) {
    uint8_t b = static_cast<uint8_t>(bytes[size - back]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    int need = text::Utf8SequenceLength(b);
    if (need <= static_cast<int>(back)) return 0;  // complete, ASCII or invalid lead
    for (size_t k = 1; k < back; ++k) {
      uint8_t c = static_cast<uint8_t>(bytes[size - back + k]);
      bool ok = k == 1 ? ValidSecondByte(b, c) : (c & 0xC0) == 0x80;
      if (!ok) return 0;
    }
    return back;
  }
  return 0;
}

std::string StreamDecoder::Feed(int32_t id) {
  pending_ += tokenizer_.TokenBytes(id);
  size_t hold = IncompleteUtf8Suffix(pending_);
  std::string ready = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return ready;
}

std::string StreamDecoder::Flush() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

}  // namespace troupe
