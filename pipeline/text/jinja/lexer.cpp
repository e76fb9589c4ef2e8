#include "pipeline/text/jinja/lexer.h"

#include <cctype>

#include "pipeline/text/jinja/py_string.h"

namespace troupe::jinja {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Normalise(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's unicode-escape of a string literal's body.
void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string Unescape(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    char e = body[++i];
    auto hex = [&](size_t n) -> bool {
      uint32_t cp = 0;
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= body.size() || !std::isxdigit(static_cast<unsigned char>(body[i + k]))) return false;
        char h = body[i + k];
        cp = cp * 16 + (IsDigit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      if (cp > 0x10FFFF) return false;
      AppendUtf8(cp, &out);
      i += n;
      return true;
    };
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\':
      case '\'':
      case '"': out += e; break;
      case '\n': break;  // line continuation
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case 'x':
        if (!hex(2)) out += "\\x";
        break;
      case 'u':
        if (!hex(4)) out += "\\u";
        break;
      case 'U':
        if (!hex(8)) out += "\\U";
        break;
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = e - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k) {
            cp = cp * 8 + (body[++i] - '0');
          }
          AppendUtf8(cp, &out);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

bool OnlyWhitespace(std::string_view s) { return !s.empty() && py::Strip(s, std::nullopt, true, true).empty(); }

class Lexer {
 public:
  explicit Lexer(std::string source) { out_.source = std::move(source); }

  Result<Lexed> Run() {
    const std::string& src = out_.source;
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src.size()) {
      size_t open = FindOpen(pos);
      std::string text = src.substr(pos, (open == std::string::npos ? src.size() : open) - pos);
      if (open == std::string::npos) {
        Emit(Token::Kind::kText, std::move(text), pos);
        break;
      }
      const char kind = src[open + 1];
      const char sign = open + 2 < src.size() ? src[open + 2] : '\0';
      if (sign == '-') {
        text = py::Strip(text, std::nullopt, false, true);
      } else if (sign != '+' && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting) && OnlyWhitespace(std::string_view(text).substr(l_pos))) {
          text.resize(l_pos);
        }
      }
      if (!text.empty()) Emit(Token::Kind::kText, std::move(text), pos);
      size_t body = open + 2 + (sign == '-' || sign == '+' ? 1 : 0);
      Result<size_t> end = kind == '#' ? Comment(open, body) : Tag(kind, open, body);
      if (!end.ok()) return end.status();
      pos = *end;
      line_starting = pos > 0 && src[pos - 1] == '\n' && pos > open;
    }
    Emit(Token::Kind::kEof, "", src.size());
    return std::move(out_);
  }

 private:
  size_t FindOpen(size_t from) const {
    const std::string& src = out_.source;
    for (size_t at = src.find('{', from); at != std::string::npos; at = src.find('{', at + 1)) {
      if (at + 1 < src.size() && (src[at + 1] == '{' || src[at + 1] == '%' || src[at + 1] == '#')) return at;
    }
    return std::string::npos;
  }

  void Emit(Token::Kind kind, std::string text, size_t offset) {
    out_.tokens.push_back({kind, std::move(text), offset});
  }

  // After a tag's close at `pos`: '-' strips all whitespace, trim_blocks one newline.
  size_t AfterClose(size_t pos, bool minus, bool block) const {
    const std::string& src = out_.source;
    if (minus) {
      std::string_view rest = std::string_view(src).substr(pos);
      return src.size() - py::Strip(rest, std::nullopt, true, false).size();
    }
    if (block && pos < src.size() && src[pos] == '\n') return pos + 1;
    return pos;
  }

  Result<size_t> Comment(size_t open, size_t body) {
    const std::string& src = out_.source;
    size_t close = src.find("#}", body);
    if (close == std::string::npos) {
      return Status::InvalidArgument("unclosed comment opened at " + Position(src, open));
    }
    bool minus = close > body && src[close - 1] == '-';
    return AfterClose(close + 2, minus, true);
  }

  Result<size_t> Tag(char kind, size_t open, size_t pos) {
    const std::string& src = out_.source;
    const bool block = kind == '%';
    Emit(block ? Token::Kind::kBlockBegin : Token::Kind::kExprBegin, "", open);
    const std::string close = block ? "%}" : "}}";
    int depth = 0;  // open brackets: a "}}" inside {{ {'a': {}} }} does not close
    while (true) {
      while (pos < src.size() && std::isspace(static_cast<unsigned char>(src[pos]))) ++pos;
      if (pos >= src.size()) {
        return Status::InvalidArgument(std::string("unclosed ") + (block ? "{%" : "{{") + " opened at " +
                                       Position(src, open));
      }
      if (src.compare(pos, 1 + close.size(), "-" + close) == 0) {
        Emit(block ? Token::Kind::kBlockEnd : Token::Kind::kExprEnd, "", pos);
        return AfterClose(pos + 3, true, block);
      }
      if (src.compare(pos, close.size(), close) == 0 && (depth == 0 || block)) {
        Emit(block ? Token::Kind::kBlockEnd : Token::Kind::kExprEnd, "", pos);
        return AfterClose(pos + 2, false, block);
      }
      char c = src[pos];
      size_t start = pos;
      if (IsNameStart(c)) {
        while (pos < src.size() && IsNameChar(src[pos])) ++pos;
        Emit(Token::Kind::kName, src.substr(start, pos - start), start);
      } else if (IsDigit(c)) {
        bool is_float = false;
        while (pos < src.size() && (IsDigit(src[pos]) || src[pos] == '_')) ++pos;
        if (pos + 1 < src.size() && src[pos] == '.' && IsDigit(src[pos + 1])) {
          is_float = true;
          ++pos;
          while (pos < src.size() && (IsDigit(src[pos]) || src[pos] == '_')) ++pos;
        }
        if (pos < src.size() && (src[pos] == 'e' || src[pos] == 'E')) {
          size_t e = pos + 1;
          if (e < src.size() && (src[e] == '+' || src[e] == '-')) ++e;
          if (e < src.size() && IsDigit(src[e])) {
            is_float = true;
            pos = e;
            while (pos < src.size() && IsDigit(src[pos])) ++pos;
          }
        }
        std::string digits;
        for (size_t i = start; i < pos; ++i) {
          if (src[i] != '_') digits += src[i];
        }
        Emit(is_float ? Token::Kind::kFloat : Token::Kind::kInt, digits, start);
      } else if (c == '\'' || c == '"') {
        ++pos;
        while (pos < src.size() && src[pos] != c) pos += src[pos] == '\\' ? 2 : 1;
        if (pos >= src.size()) return Status::InvalidArgument("unclosed string at " + Position(src, start));
        Emit(Token::Kind::kString, Unescape(std::string_view(src).substr(start + 1, pos - start - 1)), start);
        ++pos;
      } else {
        static const char* const kOperators[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                                 ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|", ";"};
        bool found = false;
        for (const char* op : kOperators) {
          std::string_view o(op);
          if (src.compare(pos, o.size(), o) == 0) {
            Emit(Token::Kind::kOperator, std::string(o), pos);
            pos += o.size();
            if (o == "(" || o == "[" || o == "{") ++depth;
            if ((o == ")" || o == "]" || o == "}") && depth > 0) --depth;
            found = true;
            break;
          }
        }
        if (!found) {
          return Status::InvalidArgument(std::string("unexpected character '") + c + "' at " + Position(src, pos));
        }
      }
    }
  }

  Lexed out_;
};

}  // namespace

std::string Position(std::string_view source, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

Result<Lexed> Lex(std::string_view source) { return Lexer(Normalise(source)).Run(); }

}  // namespace troupe::jinja
