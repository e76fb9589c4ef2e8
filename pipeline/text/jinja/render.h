// jinja::Render: runs a parsed template (parser.h) over variables and returns
// the text it prints, with jinja2's semantics for the subset: Python
// truthiness and operators, undefined values (printing "", false, failing on
// attribute access), for-loop scoping (a `set` inside a loop body stays in
// it; namespace() carries values out), the `loop` object (index, index0,
// revindex, revindex0, first, last, length, previtem, nextitem, cycle),
// break/continue, macros.
//
// Globals it adds: range, namespace, dict. The caller adds the rest (chat
// templates: raise_exception, strftime_now; see chat_template.h), as
// function values in `variables`.
//
// Bounds: output past kMaxOutputBytes, more than kMaxIterations loop
// iterations in all, or macro calls nested past kMaxCallDepth fail with
// OutOfRange instead of running on.
// Failure: the first error stops the render: InvalidArgument for a type
// error, an undefined value used as an object, or a function that failed
// (raise_exception's message is kept whole); Unsupported for a method outside
// the subset. Messages end with the template position.
// Thread-safety: a Template may be rendered from many threads at once.
#pragma once

#include <string>

#include "pipeline/status.h"
#include "pipeline/text/jinja/ast.h"
#include "pipeline/text/jinja/value.h"

namespace troupe::jinja {

inline constexpr size_t kMaxOutputBytes = 16u << 20;
inline constexpr int64_t kMaxIterations = 1'000'000;
inline constexpr int kMaxCallDepth = 32;

Result<std::string> Render(const Template& tmpl, const Dict& variables);

}  // namespace troupe::jinja
