// jinja::Parse: builds the syntax tree (ast.h) of a Jinja template from its
// source, for the subset chat templates use:
//   statements  if/elif/else, for (with `if` filter and else), set (names,
//               namespace attributes, unpacking, block set), macro, break,
//               continue, generation (rendered as its body);
//   expressions literals, lists, tuples, dicts, names, .attr, [index],
//               [slices], calls with keyword arguments, | filters, is tests,
//               arithmetic, ~, comparisons, in / not in, and/or/not, x if c else y.
// Filters and tests are checked against what builtins.h implements.
//
// Failure: Unsupported for a statement, filter or test outside the subset
// (extends, include, import, call, filter blocks, raw, recursive loops, ...),
// InvalidArgument for a syntax error; both name the construct and its line
// and column. Nesting deeper than kMaxDepth fails instead of recursing further.
// Stateless; thread-safe.
#pragma once

#include <string_view>

#include "pipeline/status.h"
#include "pipeline/text/jinja/ast.h"

namespace troupe::jinja {

inline constexpr int kMaxDepth = 64;

Result<Template> Parse(std::string_view source);

}  // namespace troupe::jinja
