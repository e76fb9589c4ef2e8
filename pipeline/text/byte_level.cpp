#include "pipeline/text/byte_level.h"

#include <array>

namespace troupe::text {
namespace {

// Whether GPT-2 keeps byte `b` as the character with the same code point.
bool IsPrintableByte(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Tables {
  std::array<std::string, 256> byte_to_text;
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<int16_t, 0x144> cp_to_byte{};  // every mapped code point is < U+0144

  Tables() {
    cp_to_byte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      byte_to_cp[b] = IsPrintableByte(b) ? static_cast<uint32_t>(b) : next++;
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
      AppendUtf8(byte_to_cp[b], &byte_to_text[b]);
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

const std::string& ByteToUnicode(uint8_t b) { return GetTables().byte_to_text[b]; }

std::optional<uint8_t> UnicodeToByte(uint32_t cp) {
  const Tables& t = GetTables();
  if (cp >= t.cp_to_byte.size() || t.cp_to_byte[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(t.cp_to_byte[cp]);
}

std::string BytesToUnicode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += ByteToUnicode(c);
  return out;
}

std::string UnicodeToBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t len = 1;
    std::optional<uint32_t> cp = DecodeUtf8(text.substr(i), &len);
    std::optional<uint8_t> b = cp ? UnicodeToByte(*cp) : std::nullopt;
    if (b) {
      out.push_back(static_cast<char>(*b));
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int Utf8SequenceLength(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

std::optional<uint32_t> DecodeUtf8(std::string_view s, size_t* len) {
  *len = 1;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  int n = Utf8SequenceLength(p[0]);
  if (n == 0 || static_cast<size_t>(n) > s.size()) return std::nullopt;
  if (n == 1) return p[0];
  uint32_t cp = p[0] & (0x7F >> n);
  for (int i = 1; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  // Reject overlong forms, surrogates and code points past U+10FFFF.
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return std::nullopt;
  }
  *len = static_cast<size_t>(n);
  return cp;
}

}  // namespace troupe::text
