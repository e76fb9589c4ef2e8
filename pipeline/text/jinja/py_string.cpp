#include "pipeline/text/jinja/py_string.h"

namespace troupe::jinja::py {
namespace {

size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// The code point at s[pos] and its length in bytes (invalid bytes: one byte, value 0xFFFD).
uint32_t Decode(std::string_view s, size_t pos, size_t* len) {
  const auto lead = static_cast<unsigned char>(s[pos]);
  size_t n = SequenceLength(lead);
  if (n == 1 || pos + n > s.size()) {
    *len = 1;
    return lead < 0x80 ? lead : 0xFFFD;
  }
  uint32_t cp = lead & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[pos + i]);
    if ((c & 0xC0) != 0x80) {
      *len = 1;
      return 0xFFFD;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *len = n;
  return cp;
}

bool IsSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || (cp >= 0x1C && cp <= 0x1F) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char ToUpper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }
char ToLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

struct CodePoint {
  size_t begin, end;
  uint32_t value;
};

std::vector<CodePoint> Decompose(std::string_view s) {
  std::vector<CodePoint> out;
  for (size_t pos = 0; pos < s.size();) {
    size_t len = 0;
    uint32_t cp = Decode(s, pos, &len);
    out.push_back({pos, pos + len, cp});
    pos += len;
  }
  return out;
}

}  // namespace

std::vector<size_t> CodePointStarts(std::string_view s) {
  std::vector<size_t> out;
  for (const CodePoint& c : Decompose(s)) out.push_back(c.begin);
  out.push_back(s.size());
  return out;
}

size_t Length(std::string_view s) { return Decompose(s).size(); }

std::string Strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::vector<CodePoint> cps = Decompose(s);
  std::vector<uint32_t> set;
  if (chars) {
    for (const CodePoint& c : Decompose(*chars)) set.push_back(c.value);
  }
  auto strip = [&](uint32_t cp) {
    if (!chars) return IsSpace(cp);
    for (uint32_t x : set) {
      if (x == cp) return true;
    }
    return false;
  };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip(cps[b].value)) ++b;
  }
  if (right) {
    while (e > b && strip(cps[e - 1].value)) --e;
  }
  if (b == e) return "";
  return std::string(s.substr(cps[b].begin, cps[e - 1].end - cps[b].begin));
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToUpper(c);
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToLower(c);
  return out;
}

std::string Title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (const CodePoint& c : Decompose(s)) {
    if (c.value < 0x80) {
      char ch = static_cast<char>(c.value);
      if (IsAsciiLetter(ch)) {
        out += previous_cased ? ToLower(ch) : ToUpper(ch);
        previous_cased = true;
      } else {
        out += ch;
        previous_cased = false;
      }
    } else {
      out += s.substr(c.begin, c.end - c.begin);
      previous_cased = !IsSpace(c.value);
    }
  }
  return out;
}

std::string Capitalize(std::string_view s) {
  std::string out = Lower(s);
  if (!out.empty()) out[0] = ToUpper(out[0]);
  return out;
}

std::string Replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
  std::string out;
  if (old.empty()) {
    std::vector<CodePoint> cps = Decompose(s);
    int64_t n = 0;
    for (const CodePoint& c : cps) {
      if (count < 0 || n < count) {
        out += with;
        ++n;
      }
      out += s.substr(c.begin, c.end - c.begin);
    }
    if (count < 0 || n < count) out += with;
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t at = s.find(old, pos);
    if (at == std::string_view::npos) break;
    out += s.substr(pos, at - pos);
    out += with;
    pos = at + old.size();
    ++n;
  }
  out += s.substr(pos);
  return out;
}

std::vector<std::string> Split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t at = s.find(*sep, pos);
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, at - pos));
      pos = at + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::vector<CodePoint> cps = Decompose(s);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && IsSpace(cps[i].value)) ++i;
    if (i == cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      // The rest, with trailing whitespace stripped.
      size_t e = cps.size();
      while (e > i && IsSpace(cps[e - 1].value)) --e;
      out.emplace_back(s.substr(cps[i].begin, cps[e - 1].end - cps[i].begin));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !IsSpace(cps[j].value)) ++j;
    out.emplace_back(s.substr(cps[i].begin, cps[j - 1].end - cps[i].begin));
    i = j;
  }
  return out;
}

}  // namespace troupe::jinja::py
