// jinja::Value: a value of the Jinja subset chat templates use, with Python's
// semantics where a template can see them (truthiness, equality, ordering,
// str(), repr()).
//
// Kinds: undefined (a missing variable, key or attribute: prints as "", is
// false, iterates as empty, fails on any other use), none, bool, int (int64),
// float, string (UTF-8), list, dict (string keys, insertion order),
// namespace (a dict whose attributes `set ns.x = ...` may change), and
// function (a global such as raise_exception, a macro, a bound method).
//
// Ownership: lists, dicts and functions are shared, as in Python: copying a
// Value copies a reference. Only namespaces are ever changed after creation
// (the sandbox forbids mutating anything else). Thread-safety: a Value is
// confined to the render that made it; values from FromJson are fresh.
// Failure: operations that Python would raise on return a non-ok Status with a
// message naming the types (the caller adds the template position).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/status.h"

namespace troupe::jinja {

class Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // insertion order, unique keys

// Positional and keyword arguments of a call.
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* Get(size_t index, const std::string& name) const;  // nullptr when not given
};
using Function = std::function<Result<Value>(const Args&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kFunction };

  Value() = default;  // undefined
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value MakeList(List items);
  // A list that prints as a Python tuple: "(1, 2)", "('a',)".
  static Value MakeTuple(List items);
  static Value MakeDict(Dict items);
  static Value MakeNamespace(Dict items);
  static Value MakeFunction(std::string name, Function fn);
  // JSON objects become dicts (key order kept as nlohmann gives it), arrays lists.
  static Value FromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_mapping() const { return kind_ == Kind::kDict || kind_ == Kind::kNamespace; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& as_string() const { return *s_; }
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  Dict& mutable_dict() const { return *dict_; }  // namespaces only
  const std::string& function_name() const { return *s_; }
  Result<Value> Call(const Args& args) const { return (*fn_)(args); }

  // A dict's value for `key`, or nullptr.
  const Value* Find(const std::string& key) const;

  bool Truthy() const;
  // Python's type name: "str", "int", "list", "dict", "NoneType", "undefined", ...
  std::string TypeName() const;
  // str(value) as Jinja prints it: None -> "None", True -> "True", undefined -> "".
  std::string Str() const;
  // repr(value): strings quoted as Python quotes them.
  std::string Repr() const;
  // transformers' tojson: json.dumps(value, ensure_ascii=False, indent=indent,
  // sort_keys=False). indent < 0: one line with ", " and ": ".
  Result<std::string> ToJson(int indent = -1) const;

  bool Equals(const Value& other) const;
  // <0, 0, >0 for numbers with numbers, strings with strings, lists
  // element-wise; InvalidArgument otherwise (Python's TypeError).
  static Result<int> Compare(const Value& a, const Value& b);

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool tuple_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;  // string, or function name
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Function> fn_;
};

// Python's float repr ("1.0", "0.1", "1e+16").
std::string FloatRepr(double f);

}  // namespace troupe::jinja
