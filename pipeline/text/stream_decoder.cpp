#include "pipeline/text/stream_decoder.h"

#include "pipeline/text/byte_level.h"

namespace troupe {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// The range the second byte after lead `lead` must fall in (the ranges that
// exclude overlong forms, surrogates and code points > U+10FFFF).
bool ValidSecondByte(uint8_t lead, uint8_t second) {
  switch (lead) {
    case 0xE0: return second >= 0xA0 && second <= 0xBF;
    case 0xED: return second >= 0x80 && second <= 0x9F;
    case 0xF0: return second >= 0x90 && second <= 0xBF;
    case 0xF4: return second >= 0x80 && second <= 0x8F;
    default: return (second & 0xC0) == 0x80;
  }
}

}  // namespace

size_t AppendUtf8Lossy(std::string_view bytes, bool at_end, std::string* out) {
  size_t i = 0;
  while (i < bytes.size()) {
    const uint8_t lead = static_cast<uint8_t>(bytes[i]);
    const int need = text::Utf8SequenceLength(lead);  // 0: can never start a character
    if (need == 1) {
      out->push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    if (need == 0) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    // Length of the valid prefix of this sequence: lead + fitting continuations.
    size_t k = 1;
    while (k < static_cast<size_t>(need) && i + k < bytes.size()) {
      const uint8_t c = static_cast<uint8_t>(bytes[i + k]);
      const bool fits = k == 1 ? ValidSecondByte(lead, c) : (c & 0xC0) == 0x80;
      if (!fits) break;
      ++k;
    }
    if (k == static_cast<size_t>(need)) {
      out->append(bytes.substr(i, k));
    } else if (i + k == bytes.size() && !at_end) {
      return i;  // a character further bytes may still complete: hold it
    } else {
      out->append(kReplacement);  // the maximal subpart [i, i+k) is invalid
    }
    i += k;
  }
  return i;
}

bool IsValidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  AppendUtf8Lossy(bytes, true, &out);
  return out == bytes;  // any replacement changes the bytes
}

std::string StreamDecoder::Feed(int32_t id) {
  pending_ += tokenizer_.TokenBytes(id);
  std::string ready;
  pending_.erase(0, AppendUtf8Lossy(pending_, false, &ready));
  return ready;
}

std::string StreamDecoder::Flush() {
  std::string rest;
  AppendUtf8Lossy(pending_, true, &rest);
  pending_.clear();
  return rest;
}

}  // namespace troupe
