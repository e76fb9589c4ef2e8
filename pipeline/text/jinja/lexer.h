// jinja::Lex: splits Jinja template source into tokens — text, and the
// tokens of each {{ expression }} and {% statement %} — applying Jinja's
// whitespace rules as transformers configures them: trim_blocks (drop the
// first newline after a block or comment tag), lstrip_blocks (drop spaces and
// tabs before a block or comment tag at the start of a line), '-' in a tag
// (strip all whitespace on that side), '+' (keep it), newlines normalised to
// "\n" and one trailing newline of the source dropped. Comments vanish.
//
// Failure: InvalidArgument for an unclosed tag, comment or string and for a
// character no token starts with, naming the line and column.
// Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipeline/status.h"

namespace troupe::jinja {

struct Token {
  enum class Kind {
    kText,        // literal output
    kExprBegin,   // {{
    kExprEnd,     // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,        // identifiers and keywords
    kString,      // unescaped content
    kInt,
    kFloat,
    kOperator,  // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
    kEof,
  };
  Kind kind;
  std::string text;
  size_t offset;  // in the normalised source
};

struct Lexed {
  std::string source;         // normalised: what offsets refer to
  std::vector<Token> tokens;  // ends with kEof
};

Result<Lexed> Lex(std::string_view source);

// "line 3, column 7" for a byte offset into `source`.
std::string Position(std::string_view source, size_t offset);

}  // namespace troupe::jinja
