// The filters, tests and methods of the Jinja subset (what jinja2 and
// transformers' apply_chat_template give chat templates), with jinja2's
// behaviour for the arguments chat templates pass:
//   filters  abs capitalize count d default dictsort first float indent int
//            items join last length list lower map reject rejectattr replace
//            reverse safe select selectattr sort string title tojson trim
//            unique upper
//   tests    boolean callable defined divisibleby eq equalto even false float
//            ge gt in integer iterable le lt mapping ne none number odd
//            sameas sequence string true undefined (and == != < <= > >=)
//   methods  str: strip lstrip rstrip startswith endswith split rsplit (no
//            maxsplit) upper lower title capitalize replace join;
//            dict: items keys values get
// Each returns InvalidArgument, naming the filter, test or method, when given
// values it cannot take (Python's TypeError), and Unsupported for one outside
// the lists. Stateless; thread-safe.
#pragma once

#include <string>

#include "pipeline/status.h"
#include "pipeline/text/jinja/value.h"

namespace troupe::jinja {

bool IsFilter(const std::string& name);
bool IsTest(const std::string& name);

// Tests run by name, e.g. for selectattr("role", "equalto", "user").
Result<bool> ApplyTest(const std::string& name, const Value& value, const Args& args);
Result<Value> ApplyFilter(const std::string& name, const Value& value, const Args& args);
// `object.name` when `name` is a method of the object's type: a bound method
// (a function value); undefined when it is not.
Value BoundMethod(const Value& object, const std::string& name);

}  // namespace troupe::jinja
