#include "pipeline/text/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "pipeline/text/jinja/py_string.h"

namespace troupe::jinja {
namespace {

Status TypeError(const std::string& what, const Value& v) {
  return Status::InvalidArgument(what + " cannot take a value of type " + v.TypeName());
}

// The items a value iterates over (a dict: its keys; a string: its characters).
Result<List> Iterate(const std::string& who, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return List{};
    case Value::Kind::kList: return v.as_list();
    case Value::Kind::kDict: {
      List keys;
      for (const auto& [k, unused] : v.as_dict()) keys.push_back(Value::String(k));
      return keys;
    }
    case Value::Kind::kString: {
      List chars;
      const std::string& s = v.as_string();
      std::vector<size_t> starts = py::CodePointStarts(s);
      for (size_t i = 0; i + 1 < starts.size(); ++i) {
        chars.push_back(Value::String(s.substr(starts[i], starts[i + 1] - starts[i])));
      }
      return chars;
    }
    default: return TypeError(who, v);
  }
}

Result<std::string> StringArg(const std::string& who, const Value* v) {
  if (v == nullptr || !v->is_string()) {
    return Status::InvalidArgument(who + " needs a string argument" +
                                   (v == nullptr ? std::string() : ", not " + v->TypeName()));
  }
  return v->as_string();
}

// getattr for attribute= arguments: "a.b" walks dicts; missing is undefined.
Value Attribute(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const Value* next = cur.Find(part);
    if (next == nullptr && cur.is_list() && !part.empty() &&
        part.find_first_not_of("0123456789") == std::string::npos) {
      size_t index = std::stoul(part);
      if (index < cur.as_list().size()) next = &cur.as_list()[index];
    }
    if (next == nullptr) return Value();
    cur = *next;
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

Args Rest(const Args& args, size_t from) {
  Args out;
  for (size_t i = from; i < args.positional.size(); ++i) out.positional.push_back(args.positional[i]);
  out.keyword = args.keyword;
  return out;
}

Result<Value> SelectAttr(const Value& value, const Args& args, bool select, bool by_attribute) {
  const std::string who = std::string(select ? "select" : "reject") + (by_attribute ? "attr" : "");
  if (!value.Truthy()) return Value::MakeList({});  // jinja2: `if value: for item in value: ...`
  TROUPE_ASSIGN_OR_RETURN(List items, Iterate(who, value));
  std::string attr;
  size_t next = 0;
  if (by_attribute) {
    TROUPE_ASSIGN_OR_RETURN(attr, StringArg(who, args.Get(0, "attribute")));
    next = 1;
  }
  std::string test;
  if (next < args.positional.size()) {
    TROUPE_ASSIGN_OR_RETURN(test, StringArg(who, &args.positional[next]));
    if (!IsTest(test)) return Status::Unsupported(who + ": the test '" + test + "' is not supported");
  }
  Args test_args = Rest(args, next + 1);
  test_args.keyword.clear();
  List out;
  for (const Value& item : items) {
    Value subject = by_attribute ? Attribute(item, attr) : item;
    bool pass = subject.Truthy();
    if (!test.empty()) {
      TROUPE_ASSIGN_OR_RETURN(pass, ApplyTest(test, subject, test_args));
    }
    if (pass == select) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

Result<Value> Map(const Value& value, const Args& args) {
  if (!value.Truthy()) return Value::MakeList({});  // as jinja2
  TROUPE_ASSIGN_OR_RETURN(List items, Iterate("map", value));
  List out;
  if (const Value* attr = args.Get(99, "attribute")) {
    if (!attr->is_string()) return Status::InvalidArgument("map: attribute must be a string");
    const Value* def = args.Get(99, "default");
    for (const Value& item : items) {
      Value v = Attribute(item, attr->as_string());
      out.push_back(v.is_undefined() && def ? *def : v);
    }
    return Value::MakeList(std::move(out));
  }
  TROUPE_ASSIGN_OR_RETURN(std::string filter, StringArg("map", args.Get(0, "")));
  if (!IsFilter(filter)) return Status::Unsupported("map: the filter '" + filter + "' is not supported");
  Args rest = Rest(args, 1);
  for (const Value& item : items) {
    TROUPE_ASSIGN_OR_RETURN(Value v, ApplyFilter(filter, item, rest));
    out.push_back(std::move(v));
  }
  return Value::MakeList(std::move(out));
}

Result<Value> Indent(const Value& value, const Args& args) {
  std::string s = value.Str();
  std::string pad(4, ' ');
  if (const Value* width = args.Get(0, "width")) {
    if (width->is_string()) {
      pad = width->as_string();
    } else if (width->kind() == Value::Kind::kInt) {
      pad = std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(width->as_int(), 1024))), ' ');
    }
  }
  const Value* first = args.Get(1, "first");
  const Value* blank = args.Get(2, "blank");
  // jinja2: lines after the first are indented; blank lines only with blank=True.
  std::vector<std::string> lines;
  size_t pos = 0;
  while (true) {
    size_t nl = s.find('\n', pos);
    lines.push_back(s.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    bool indent = i > 0 ? (!lines[i].empty() || (blank && blank->Truthy())) : (first && first->Truthy());
    out += (indent ? pad : "") + lines[i];
  }
  return Value::String(out);
}

Result<Value> ToInt(const Value& v, const Args& args) {
  const Value* def = args.Get(0, "default");
  Value fallback = def ? *def : Value::Int(0);
  switch (v.kind()) {
    case Value::Kind::kInt:
    case Value::Kind::kBool: return Value::Int(v.as_int());
    case Value::Kind::kFloat:
      return std::isfinite(v.as_float()) && std::fabs(v.as_float()) < 9e18
                 ? Value::Int(static_cast<int64_t>(v.as_float()))
                 : fallback;
    case Value::Kind::kString: {
      std::string s = py::Strip(v.as_string(), std::nullopt, true, true);
      char* end = nullptr;
      errno = 0;
      long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && *end == '\0' && errno == 0) return Value::Int(i);
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9e18) {
        return Value::Int(static_cast<int64_t>(d));
      }
      return fallback;
    }
    default: return fallback;
  }
}

Result<Value> Join(const Value& value, const Args& args) {
  TROUPE_ASSIGN_OR_RETURN(List items, Iterate("join", value));
  std::string sep;
  if (const Value* s = args.Get(0, "d")) sep = s->Str();
  const Value* attr = args.Get(1, "attribute");
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += (attr && attr->is_string() ? Attribute(items[i], attr->as_string()) : items[i]).Str();
  }
  return Value::String(out);
}

// jinja2's sort key: strings lowercased unless case_sensitive.
Value SortKey(const Value& v, bool case_sensitive) {
  return v.is_string() && !case_sensitive ? Value::String(py::Lower(v.as_string())) : v;
}

// Stable sort of `items` by `key`, as Python's sorted(); a TypeError when two
// keys do not compare.
Status SortBy(List* items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Status error;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    Result<int> c = reverse ? Value::Compare(keys[b], keys[a]) : Value::Compare(keys[a], keys[b]);
    if (!c.ok()) {
      if (error.ok()) error = c.status();
      return false;
    }
    return *c < 0;
  });
  TROUPE_RETURN_IF_ERROR(error);
  List sorted;
  for (size_t i : order) sorted.push_back((*items)[i]);
  *items = std::move(sorted);
  return Status::Ok();
}

Result<Value> Sort(const Value& value, const Args& args) {
  TROUPE_ASSIGN_OR_RETURN(List items, Iterate("sort", value));
  const Value* reverse = args.Get(0, "reverse");
  const Value* case_sensitive = args.Get(1, "case_sensitive");
  const Value* attr = args.Get(2, "attribute");
  std::vector<Value> keys;
  for (const Value& item : items) {
    Value k = attr && attr->is_string() ? Attribute(item, attr->as_string()) : item;
    keys.push_back(SortKey(k, case_sensitive && case_sensitive->Truthy()));
  }
  TROUPE_RETURN_IF_ERROR(SortBy(&items, keys, reverse && reverse->Truthy()));
  return Value::MakeList(std::move(items));
}

Result<Value> DictSort(const Value& value, const Args& args) {
  if (!value.is_mapping()) return TypeError("the filter 'dictsort'", value);
  const Value* case_sensitive = args.Get(0, "case_sensitive");
  const Value* by = args.Get(1, "by");
  const Value* reverse = args.Get(2, "reverse");
  const bool by_value = by && by->is_string() && by->as_string() == "value";
  if (by && !(by->is_string() && (by->as_string() == "key" || by->as_string() == "value"))) {
    return Status::InvalidArgument("dictsort: 'by' must be \"key\" or \"value\"");
  }
  List items;
  std::vector<Value> keys;
  for (const auto& [k, v] : value.as_dict()) {
    items.push_back(Value::MakeTuple({Value::String(k), v}));
    keys.push_back(SortKey(by_value ? v : Value::String(k), case_sensitive && case_sensitive->Truthy()));
  }
  TROUPE_RETURN_IF_ERROR(SortBy(&items, keys, reverse && reverse->Truthy()));
  return Value::MakeList(std::move(items));
}

Result<Value> Unique(const Value& value) {
  TROUPE_ASSIGN_OR_RETURN(List items, Iterate("unique", value));
  List out;
  for (const Value& v : items) {
    bool seen = false;
    for (const Value& o : out) seen = seen || o.Equals(v);
    if (!seen) out.push_back(v);
  }
  return Value::MakeList(std::move(out));
}

}  // namespace

bool IsFilter(const std::string& name) {
  static const std::set<std::string> kFilters = {
      "abs",        "capitalize", "count",   "d",       "default", "first",  "float",      "indent",
      "int",        "items",      "join",    "last",    "length",  "list",   "lower",      "map",
      "rejectattr", "reject",     "replace", "reverse", "safe",    "select", "selectattr", "sort",
      "dictsort",   "string",     "title",   "tojson",  "trim",    "unique", "upper"};
  return kFilters.count(name) > 0;
}

bool IsTest(const std::string& name) {
  static const std::set<std::string> kTests = {
      "boolean",  "callable", "defined",  "divisibleby", "eq", "equalto", "even", "false", "float",  "ge",  "gt",
      "in",       "integer",  "iterable", "le",          "lt", "mapping", "ne",   "none",  "number", "odd", "sameas",
      "sequence", "string",   "true",     "undefined",   "==", "!=",      "<",    "<=",    ">",      ">="};
  return kTests.count(name) > 0;
}

Result<bool> ApplyTest(const std::string& name, const Value& v, const Args& args) {
  using K = Value::Kind;
  const Value* arg = args.Get(0, "");
  auto need_arg = [&]() -> Status {
    return arg ? Status::Ok() : Status::InvalidArgument("the test '" + name + "' needs an argument");
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.kind() == K::kInt || v.kind() == K::kFloat || v.kind() == K::kBool;
  if (name == "integer") return v.kind() == K::kInt;
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.as_bool();
  if (name == "false") return v.kind() == K::kBool && !v.as_bool();
  if (name == "mapping") return v.kind() == K::kDict;
  if (name == "callable") return v.is_function();
  if (name == "iterable") return v.is_list() || v.is_string() || v.kind() == K::kDict || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_string() || v.kind() == K::kDict;
  if (name == "odd" || name == "even") {
    if (v.kind() != K::kInt && v.kind() != K::kBool) return TypeError("the test '" + name + "'", v);
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    TROUPE_RETURN_IF_ERROR(need_arg());
    if (v.kind() != K::kInt || arg->kind() != K::kInt || arg->as_int() == 0) return TypeError("divisibleby", v);
    return v.as_int() % arg->as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") {
    TROUPE_RETURN_IF_ERROR(need_arg());
    return v.Equals(*arg);
  }
  if (name == "ne" || name == "!=") {
    TROUPE_RETURN_IF_ERROR(need_arg());
    return !v.Equals(*arg);
  }
  if (name == "sameas") {
    TROUPE_RETURN_IF_ERROR(need_arg());
    if (v.kind() != arg->kind()) return false;
    return v.is_none() || v.is_undefined() || (v.kind() == K::kBool && v.Equals(*arg));
  }
  if (name == "lt" || name == "le" || name == "gt" || name == "ge" || name == "<" || name == "<=" || name == ">" ||
      name == ">=") {
    TROUPE_RETURN_IF_ERROR(need_arg());
    TROUPE_ASSIGN_OR_RETURN(int c, Value::Compare(v, *arg));
    if (name == "lt" || name == "<") return c < 0;
    if (name == "le" || name == "<=") return c <= 0;
    if (name == "gt" || name == ">") return c > 0;
    return c >= 0;
  }
  if (name == "in") {
    TROUPE_RETURN_IF_ERROR(need_arg());
    if (arg->is_string() && v.is_string()) return arg->as_string().find(v.as_string()) != std::string::npos;
    if (arg->is_mapping()) return v.is_string() && arg->Find(v.as_string()) != nullptr;
    if (arg->is_list()) {
      for (const Value& e : arg->as_list()) {
        if (e.Equals(v)) return true;
      }
      return false;
    }
    return TypeError("the test 'in'", *arg);
  }
  return Status::Unsupported("the test '" + name + "' is not supported");
}

Result<Value> ApplyFilter(const std::string& name, const Value& v, const Args& args) {
  using K = Value::Kind;
  if (name == "safe") return v;
  if (name == "string") return v.is_string() ? v : Value::String(v.Str());
  if (name == "default" || name == "d") {
    const Value* def = args.Get(0, "default_value");
    const Value* boolean = args.Get(1, "boolean");
    bool use_default = v.is_undefined() || (boolean && boolean->Truthy() && !v.Truthy());
    if (!use_default) return v;
    return def ? *def : Value::String("");
  }
  if (name == "length" || name == "count") {
    if (v.is_string()) return Value::Int(static_cast<int64_t>(py::Length(v.as_string())));
    if (v.is_list()) return Value::Int(static_cast<int64_t>(v.as_list().size()));
    if (v.is_mapping()) return Value::Int(static_cast<int64_t>(v.as_dict().size()));
    if (v.is_undefined()) return Value::Int(0);
    return TypeError("the filter 'length'", v);
  }
  if (name == "trim") {
    if (v.is_undefined()) return Value::String("");
    std::optional<std::string> chars;
    if (const Value* c = args.Get(0, "chars"); c && !c->is_none()) chars = c->Str();
    return Value::String(py::Strip(v.Str(), chars, true, true));
  }
  if (name == "upper") return Value::String(py::Upper(v.Str()));
  if (name == "lower") return Value::String(py::Lower(v.Str()));
  if (name == "capitalize") return Value::String(py::Capitalize(v.Str()));
  if (name == "title") return Value::String(py::Title(v.Str()));
  if (name == "replace") {
    TROUPE_ASSIGN_OR_RETURN(std::string old, StringArg("replace", args.Get(0, "old")));
    TROUPE_ASSIGN_OR_RETURN(std::string with, StringArg("replace", args.Get(1, "new")));
    const Value* count = args.Get(2, "count");
    return Value::String(py::Replace(v.Str(), old, with, count && count->kind() == K::kInt ? count->as_int() : -1));
  }
  if (name == "join") return Join(v, args);
  if (name == "first" || name == "last") {
    TROUPE_ASSIGN_OR_RETURN(List items, Iterate("the filter '" + name + "'", v));
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") {
    TROUPE_ASSIGN_OR_RETURN(List items, Iterate("the filter 'list'", v));
    return Value::MakeList(std::move(items));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      TROUPE_ASSIGN_OR_RETURN(List chars, Iterate("reverse", v));
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
      return Value::String(out);
    }
    TROUPE_ASSIGN_OR_RETURN(List items, Iterate("the filter 'reverse'", v));
    return Value::MakeList(List(items.rbegin(), items.rend()));
  }
  if (name == "unique") return Unique(v);
  if (name == "sort") return Sort(v, args);
  if (name == "dictsort") return DictSort(v, args);
  if (name == "items") {
    if (v.is_undefined()) return Value::MakeList({});
    if (!v.is_mapping()) return TypeError("the filter 'items'", v);
    List out;
    for (const auto& [k, e] : v.as_dict()) out.push_back(Value::MakeTuple({Value::String(k), e}));
    return Value::MakeList(std::move(out));
  }
  if (name == "tojson") {
    const Value* indent = args.Get(0, "indent");
    int width = indent && indent->kind() == K::kInt ? static_cast<int>(std::min<int64_t>(indent->as_int(), 64)) : -1;
    TROUPE_ASSIGN_OR_RETURN(std::string json, v.ToJson(width));
    return Value::String(json);
  }
  if (name == "int") return ToInt(v, args);
  if (name == "float") {
    if (v.is_number()) return Value::Float(v.as_float());
    if (v.is_string()) {
      char* end = nullptr;
      std::string s = py::Strip(v.as_string(), std::nullopt, true, true);
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && *end == '\0') return Value::Float(d);
    }
    const Value* def = args.Get(0, "default");
    return def ? *def : Value::Float(0);
  }
  if (name == "abs") {
    if (v.kind() == K::kInt || v.kind() == K::kBool) return Value::Int(std::llabs(v.as_int()));
    if (v.kind() == K::kFloat) return Value::Float(std::fabs(v.as_float()));
    return TypeError("the filter 'abs'", v);
  }
  if (name == "indent") return Indent(v, args);
  if (name == "selectattr") return SelectAttr(v, args, true, true);
  if (name == "rejectattr") return SelectAttr(v, args, false, true);
  if (name == "select") return SelectAttr(v, args, true, false);
  if (name == "reject") return SelectAttr(v, args, false, false);
  if (name == "map") return Map(v, args);
  return Status::Unsupported("the filter '" + name + "' is not supported");
}

Value BoundMethod(const Value& object, const std::string& name) {
  if (object.is_string()) {
    const std::string& s = object.as_string();  // lambdas below capture a copy
    auto str_fn = [&](auto fn) { return Value::MakeFunction("str." + name, fn); };
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const bool left = name != "rstrip", right = name != "lstrip";
      return str_fn([s, left, right](const Args& a) -> Result<Value> {
        std::optional<std::string> chars;
        if (const Value* c = a.Get(0, "chars"); c && !c->is_none()) chars = c->Str();
        return Value::String(py::Strip(s, chars, left, right));
      });
    }
    if (name == "startswith" || name == "endswith") {
      const bool starts = name == "startswith";
      return str_fn([s, starts, name](const Args& a) -> Result<Value> {
        const Value* p = a.Get(0, "");
        if (p == nullptr) return Status::InvalidArgument("str." + name + " needs an argument");
        List options = p->is_list() ? p->as_list() : List{*p};
        for (const Value& o : options) {
          if (!o.is_string()) return TypeError("str." + name, o);
          const std::string& x = o.as_string();
          if (x.size() <= s.size() &&
              (starts ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0)) {
            return Value::Bool(true);
          }
        }
        return Value::Bool(false);
      });
    }
    if (name == "split" || name == "rsplit") {
      return str_fn([s, name](const Args& a) -> Result<Value> {
        std::optional<std::string> sep;
        if (const Value* p = a.Get(0, "sep"); p && !p->is_none()) {
          if (!p->is_string() || p->as_string().empty())
            return Status::InvalidArgument("str.split: empty or non-string separator");
          sep = p->as_string();
        }
        const Value* maxsplit = a.Get(1, "maxsplit");
        int64_t limit = maxsplit && maxsplit->kind() == Value::Kind::kInt ? maxsplit->as_int() : -1;
        if (name == "rsplit" && limit >= 0) return Status::Unsupported("str.rsplit with maxsplit is not supported");
        List out;
        for (std::string& part : py::Split(s, sep, limit)) out.push_back(Value::String(std::move(part)));
        return Value::MakeList(std::move(out));
      });
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
      return str_fn([s, name](const Args&) -> Result<Value> { return ApplyFilter(name, Value::String(s), Args{}); });
    }
    if (name == "replace") {
      return str_fn([s](const Args& a) -> Result<Value> {
        const Value* old = a.Get(0, "old");
        const Value* with = a.Get(1, "new");
        if (!old || !with || !old->is_string() || !with->is_string()) {
          return Status::InvalidArgument("str.replace needs two strings");
        }
        const Value* count = a.Get(2, "count");
        return Value::String(py::Replace(s, old->as_string(), with->as_string(),
                                         count && count->kind() == Value::Kind::kInt ? count->as_int() : -1));
      });
    }
    if (name == "join") {
      return str_fn([s](const Args& a) -> Result<Value> {
        const Value* items = a.Get(0, "");
        if (!items) return Status::InvalidArgument("str.join needs an argument");
        TROUPE_ASSIGN_OR_RETURN(List parts, Iterate("str.join", *items));
        std::string out;
        for (size_t i = 0; i < parts.size(); ++i) {
          if (!parts[i].is_string()) return TypeError("str.join", parts[i]);
          out += (i ? s : "") + parts[i].as_string();
        }
        return Value::String(out);
      });
    }
    return Value();
  }
  if (object.kind() == Value::Kind::kDict) {
    const Value& self = object;  // lambdas below capture a copy
    auto dict_fn = [&](auto fn) { return Value::MakeFunction("dict." + name, fn); };
    if (name == "items") return dict_fn([self](const Args&) { return ApplyFilter("items", self, Args{}); });
    if (name == "keys") return dict_fn([self](const Args&) { return ApplyFilter("list", self, Args{}); });
    if (name == "values") {
      return dict_fn([self](const Args&) -> Result<Value> {
        List out;
        for (const auto& [k, v] : self.as_dict()) out.push_back(v);
        return Value::MakeList(std::move(out));
      });
    }
    if (name == "get") {
      return dict_fn([self](const Args& a) -> Result<Value> {
        const Value* key = a.Get(0, "key");
        if (!key) return Status::InvalidArgument("dict.get needs a key");
        const Value* def = a.Get(1, "default");
        const Value* found = key->is_string() ? self.Find(key->as_string()) : nullptr;
        return found ? *found : def ? *def : Value::None();
      });
    }
  }
  return Value();
}

}  // namespace troupe::jinja
