// Python's str methods over UTF-8 text, as Jinja templates call them: lengths,
// indices and slices count code points; strip() with no argument strips what
// Python calls whitespace (ASCII whitespace, \x1c-\x1f, \x85, \xa0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000).
//
// Case mapping (upper, lower, title, capitalize) changes ASCII letters only;
// other characters pass through unchanged (and count as letters for title()).
// Invalid UTF-8 bytes count as one code point each. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::jinja::py {

// Byte offsets of each code point's start, plus s.size() at the end.
std::vector<size_t> CodePointStarts(std::string_view s);
size_t Length(std::string_view s);

// chars: strip those code points; nullopt: strip whitespace.
std::string Strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
std::string Upper(std::string_view s);
std::string Lower(std::string_view s);
std::string Title(std::string_view s);
std::string Capitalize(std::string_view s);
// count < 0: all. An empty `old` inserts `with` between code points (as Python).
std::string Replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);
// sep nullopt: runs of whitespace, no empty parts. maxsplit < 0: no limit.
std::vector<std::string> Split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);

}  // namespace troupe::jinja::py
