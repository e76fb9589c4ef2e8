#include "pipeline/text/jinja/render.h"

#include <cmath>
#include <unordered_map>

#include "pipeline/text/jinja/builtins.h"
#include "pipeline/text/jinja/lexer.h"
#include "pipeline/text/jinja/py_string.h"

namespace troupe::jinja {
namespace {

using Frame = std::unordered_map<std::string, Value>;
enum class Flow { kNormal, kBreak, kContinue };

Value Global(const std::string& name, Function fn) { return Value::MakeFunction(name, std::move(fn)); }

Result<Value> Range(const Args& a) {
  int64_t v[3] = {0, 0, 1};
  const size_t n = a.positional.size();
  if (n < 1 || n > 3 || !a.keyword.empty()) return Status::InvalidArgument("range takes 1 to 3 integers");
  for (size_t i = 0; i < n; ++i) {
    const Value& x = a.positional[i];
    if (x.kind() != Value::Kind::kInt && x.kind() != Value::Kind::kBool) {
      return Status::InvalidArgument("range needs integers, not " + x.TypeName());
    }
  }
  if (n == 1) {
    v[1] = a.positional[0].as_int();
  } else {
    v[0] = a.positional[0].as_int();
    v[1] = a.positional[1].as_int();
    if (n == 3) v[2] = a.positional[2].as_int();
  }
  if (v[2] == 0) return Status::InvalidArgument("range: step must not be zero");
  List out;
  for (int64_t i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2]) {
    if (static_cast<int64_t>(out.size()) >= kMaxIterations) {
      return Status::OutOfRange("range of more than " + std::to_string(kMaxIterations) + " items");
    }
    out.push_back(Value::Int(i));
  }
  return Value::MakeList(std::move(out));
}

Result<Value> MakeDictFromKeywords(const Args& a, bool is_namespace) {
  Dict items;
  for (const Value& p : a.positional) {
    if (!p.is_mapping()) return Status::InvalidArgument("namespace/dict takes a mapping or keywords");
    for (const auto& kv : p.as_dict()) items.push_back(kv);
  }
  for (const auto& [k, v] : a.keyword) {
    bool replaced = false;
    for (auto& kv : items) {
      if (kv.first == k) {
        kv.second = v;
        replaced = true;
      }
    }
    if (!replaced) items.emplace_back(k, v);
  }
  return is_namespace ? Value::MakeNamespace(std::move(items)) : Value::MakeDict(std::move(items));
}

// Python's slice indices for a sequence of `len` items.
Result<std::vector<size_t>> SliceIndices(int64_t len, const Value& start, const Value& stop, const Value& step) {
  auto as_int = [](const Value& v, int64_t* out) -> bool {
    if (v.is_none() || v.is_undefined()) return false;
    *out = v.as_int();
    return true;
  };
  for (const Value* v : {&start, &stop, &step}) {
    if (!v->is_none() && !v->is_undefined() && v->kind() != Value::Kind::kInt && v->kind() != Value::Kind::kBool) {
      return Status::InvalidArgument("slice indices must be integers or none, not " + v->TypeName());
    }
  }
  int64_t st = 1;
  as_int(step, &st);
  if (st == 0) return Status::InvalidArgument("slice step cannot be zero");
  int64_t b, e;
  const bool has_b = as_int(start, &b), has_e = as_int(stop, &e);
  auto clamp = [&](int64_t x, bool forward) {
    if (x < 0) x += len;
    if (forward) return std::max<int64_t>(0, std::min(x, len));
    return std::max<int64_t>(-1, std::min(x, len - 1));
  };
  std::vector<size_t> out;
  if (st > 0) {
    b = has_b ? clamp(b, true) : 0;
    e = has_e ? clamp(e, true) : len;
    for (int64_t i = b; i < e; i += st) out.push_back(static_cast<size_t>(i));
  } else {
    b = has_b ? clamp(b, false) : len - 1;
    e = has_e ? clamp(e, false) : -1;
    for (int64_t i = b; i > e; i += st) out.push_back(static_cast<size_t>(i));
  }
  return out;
}

bool CheckedAdd(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
bool CheckedSub(int64_t a, int64_t b, int64_t* out) { return !__builtin_sub_overflow(a, b, out); }
bool CheckedMul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

class Renderer {
 public:
  Renderer(const Template& t, const Dict& variables) : tmpl_(t) {
    Frame globals;
    globals["range"] = Global("range", Range);
    globals["namespace"] = Global("namespace", [](const Args& a) { return MakeDictFromKeywords(a, true); });
    globals["dict"] = Global("dict", [](const Args& a) { return MakeDictFromKeywords(a, false); });
    for (const auto& [k, v] : variables) globals[k] = v;
    frames_.push_back(std::move(globals));
  }

  Result<std::string> Run() {
    Flow flow = Flow::kNormal;
    TROUPE_RETURN_IF_ERROR(RenderBody(tmpl_.body, &out_, &flow));
    return std::move(out_);
  }

 private:
  std::string Where(size_t offset) const { return " (at " + Position(tmpl_.source, offset) + ")"; }
  Status At(const Status& s, size_t offset) const {
    if (s.ok() || s.message().find(" (at line ") != std::string::npos) return s;
    return Status(s.code(), s.message() + Where(offset));
  }
  Status Fail(const std::string& message, size_t offset) const {
    return Status::InvalidArgument(message + Where(offset));
  }

  const Value* Lookup(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }

  Status Append(std::string* out, const std::string& s, size_t offset) {
    if (out->size() + s.size() > kMaxOutputBytes) {
      return Status::OutOfRange("template output exceeds " + std::to_string(kMaxOutputBytes) + " bytes" +
                                Where(offset));
    }
    *out += s;
    return Status::Ok();
  }

  // ----- Statements

  Status RenderBody(const Body& body, std::string* out, Flow* flow) {
    for (const NodePtr& node : body) {
      TROUPE_RETURN_IF_ERROR(RenderNode(*node, out, flow));
      if (*flow != Flow::kNormal) return Status::Ok();
    }
    return Status::Ok();
  }

  Status RenderNode(const Node& n, std::string* out, Flow* flow) {
    switch (n.kind) {
      case Node::Kind::kText: return Append(out, n.text, n.offset);
      case Node::Kind::kOutput: {
        TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*n.exprs[0]));
        return Append(out, v.Str(), n.offset);
      }
      case Node::Kind::kIf: {
        for (size_t i = 0; i < n.bodies.size(); ++i) {
          bool take = true;
          if (i < n.exprs.size()) {
            TROUPE_ASSIGN_OR_RETURN(Value cond, Eval(*n.exprs[i]));
            take = cond.Truthy();
          }
          if (take) return RenderBody(n.bodies[i], out, flow);
        }
        return Status::Ok();
      }
      case Node::Kind::kFor: return RenderFor(n, out);
      case Node::Kind::kSet: {
        TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*n.exprs[0]));
        return Assign(n, std::move(v));
      }
      case Node::Kind::kSetBlock: {
        std::string captured;
        Flow inner = Flow::kNormal;
        TROUPE_RETURN_IF_ERROR(RenderBody(n.bodies[0], &captured, &inner));
        frames_.back()[n.names[0]] = Value::String(std::move(captured));
        return Status::Ok();
      }
      case Node::Kind::kMacro: frames_.back()[n.text] = MakeMacro(n); return Status::Ok();
      case Node::Kind::kBreak:
      case Node::Kind::kContinue:
        if (loop_depth_ == 0) return Fail("'break' or 'continue' outside a loop", n.offset);
        *flow = n.kind == Node::Kind::kBreak ? Flow::kBreak : Flow::kContinue;
        return Status::Ok();
    }
    return Status::Ok();
  }

  Status Assign(const Node& n, Value v) {
    if (!n.attr.empty()) {
      const Value* ns = Lookup(n.names[0]);
      if (ns == nullptr || ns->kind() != Value::Kind::kNamespace) {
        return Fail("cannot set an attribute of '" + n.names[0] + "': it is not a namespace()", n.offset);
      }
      Dict& d = ns->mutable_dict();
      for (auto& kv : d) {
        if (kv.first == n.attr) {
          kv.second = std::move(v);
          return Status::Ok();
        }
      }
      d.emplace_back(n.attr, std::move(v));
      return Status::Ok();
    }
    if (n.names.size() == 1) {
      frames_.back()[n.names[0]] = std::move(v);
      return Status::Ok();
    }
    return Unpack(n.names, v, n.offset, &frames_.back());
  }

  Status Unpack(const std::vector<std::string>& names, const Value& v, size_t offset, Frame* frame) {
    if (!v.is_list() || v.as_list().size() != names.size()) {
      return Fail("cannot unpack " + v.TypeName() + " into " + std::to_string(names.size()) + " names", offset);
    }
    for (size_t i = 0; i < names.size(); ++i) (*frame)[names[i]] = v.as_list()[i];
    return Status::Ok();
  }

  Result<List> Items(const Value& v, size_t offset) {
    switch (v.kind()) {
      case Value::Kind::kUndefined: return List{};
      case Value::Kind::kList: return v.as_list();
      case Value::Kind::kDict:
      case Value::Kind::kString: return ApplyFilter("list", v, Args{}).value().as_list();
      default: return Fail("'" + v.TypeName() + "' object is not iterable", offset);
    }
  }

  Status RenderFor(const Node& n, std::string* out) {
    TROUPE_ASSIGN_OR_RETURN(Value seq, Eval(*n.exprs[0]));
    TROUPE_ASSIGN_OR_RETURN(List all, Items(seq, n.exprs[0]->offset));
    List items;
    if (n.exprs.size() > 1) {
      for (const Value& item : all) {
        Frame frame;
        TROUPE_RETURN_IF_ERROR(Bind(n, item, &frame));
        frames_.push_back(std::move(frame));
        Result<Value> keep = Eval(*n.exprs[1]);
        frames_.pop_back();
        if (!keep.ok()) return keep.status();
        if (keep->Truthy()) items.push_back(item);
      }
    } else {
      items = std::move(all);
    }
    if (items.empty()) {
      if (n.bodies.size() > 1) {
        Flow flow = Flow::kNormal;
        return RenderBody(n.bodies[1], out, &flow);
      }
      return Status::Ok();
    }
    ++loop_depth_;
    const auto length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      if (++iterations_ > kMaxIterations) {
        return Status::OutOfRange("template ran more than " + std::to_string(kMaxIterations) + " loop iterations" +
                                  Where(n.offset));
      }
      Frame frame;
      TROUPE_RETURN_IF_ERROR(Bind(n, items[i], &frame));
      List cycle_items;
      Dict loop = {
          {"index0", Value::Int(i)},
          {"index", Value::Int(i + 1)},
          {"revindex0", Value::Int(length - i - 1)},
          {"revindex", Value::Int(length - i)},
          {"first", Value::Bool(i == 0)},
          {"last", Value::Bool(i == length - 1)},
          {"length", Value::Int(length)},
          {"previtem", i > 0 ? items[i - 1] : Value()},
          {"nextitem", i + 1 < length ? items[i + 1] : Value()},
          {"cycle", Value::MakeFunction("loop.cycle",
                                        [i](const Args& a) -> Result<Value> {
                                          if (a.positional.empty()) {
                                            return Status::InvalidArgument("loop.cycle needs an argument");
                                          }
                                          return a.positional[static_cast<size_t>(i) % a.positional.size()];
                                        })},
      };
      frame["loop"] = Value::MakeDict(std::move(loop));
      frames_.push_back(std::move(frame));
      Flow flow = Flow::kNormal;
      Status s = RenderBody(n.bodies[0], out, &flow);
      frames_.pop_back();
      TROUPE_RETURN_IF_ERROR(s);
      if (flow == Flow::kBreak) break;
    }
    --loop_depth_;
    return Status::Ok();
  }

  Status Bind(const Node& n, const Value& item, Frame* frame) {
    if (n.names.size() == 1) {
      (*frame)[n.names[0]] = item;
      return Status::Ok();
    }
    return Unpack(n.names, item, n.offset, frame);
  }

  Value MakeMacro(const Node& n) {
    const Node* node = &n;
    return Value::MakeFunction(n.text, [this, node](const Args& a) -> Result<Value> {
      if (call_depth_ >= kMaxCallDepth) {
        return Status::OutOfRange("macro calls nested deeper than " + std::to_string(kMaxCallDepth));
      }
      if (a.positional.size() > node->names.size()) {
        return Status::InvalidArgument("macro '" + node->text + "' takes " + std::to_string(node->names.size()) +
                                       " arguments");
      }
      Frame frame;
      for (size_t i = 0; i < node->names.size(); ++i) {
        const Value* given = a.Get(i, node->names[i]);
        if (given) {
          frame[node->names[i]] = *given;
        } else if (node->exprs[i]) {
          TROUPE_ASSIGN_OR_RETURN(frame[node->names[i]], Eval(*node->exprs[i]));
        } else {
          frame[node->names[i]] = Value();
        }
      }
      ++call_depth_;
      frames_.push_back(std::move(frame));
      const int saved_loops = loop_depth_;
      loop_depth_ = 0;
      std::string text;
      Flow flow = Flow::kNormal;
      Status s = RenderBody(node->bodies[0], &text, &flow);
      loop_depth_ = saved_loops;
      frames_.pop_back();
      --call_depth_;
      TROUPE_RETURN_IF_ERROR(s);
      return Value::String(std::move(text));
    });
  }

  // ----- Expressions

  Result<Args> EvalArgs(const Expr& e) {
    Args args;
    for (size_t i = 1; i < e.children.size(); ++i) {
      TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*e.children[i]));
      const std::string& name = e.arg_names[i - 1];
      if (name.empty()) {
        if (!args.keyword.empty()) return Fail("positional argument after keyword argument", e.children[i]->offset);
        args.positional.push_back(std::move(v));
      } else {
        args.keyword.emplace_back(name, std::move(v));
      }
    }
    return args;
  }

  Result<Value> Eval(const Expr& e) {
    Result<Value> v = EvalInner(e);
    if (!v.ok()) return At(v.status(), e.offset);
    return v;
  }

  Result<Value> EvalInner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: {
        const Value* v = Lookup(e.name);
        return v ? *v : Value();
      }
      case Expr::Kind::kList: {
        List items;
        for (const ExprPtr& c : e.children) {
          TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*c));
          items.push_back(std::move(v));
        }
        return e.name == "tuple" ? Value::MakeTuple(std::move(items)) : Value::MakeList(std::move(items));
      }
      case Expr::Kind::kDict: {
        Dict items;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          TROUPE_ASSIGN_OR_RETURN(Value k, Eval(*e.children[i]));
          TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*e.children[i + 1]));
          if (!k.is_string()) return Status::Unsupported("dict keys other than strings");
          bool replaced = false;
          for (auto& kv : items) {
            if (kv.first == k.as_string()) {
              kv.second = v;
              replaced = true;
            }
          }
          if (!replaced) items.emplace_back(k.as_string(), std::move(v));
        }
        return Value::MakeDict(std::move(items));
      }
      case Expr::Kind::kAttr: {
        TROUPE_ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0]));
        return GetAttr(obj, e.name);
      }
      case Expr::Kind::kItem: {
        TROUPE_ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0]));
        TROUPE_ASSIGN_OR_RETURN(Value key, Eval(*e.children[1]));
        return GetItem(obj, key);
      }
      case Expr::Kind::kSlice: return EvalSlice(e);
      case Expr::Kind::kCall: {
        TROUPE_ASSIGN_OR_RETURN(Value fn, Eval(*e.children[0]));
        TROUPE_ASSIGN_OR_RETURN(Args args, EvalArgs(e));
        if (!fn.is_function()) {
          if (fn.is_undefined()) {
            const Expr& callee = *e.children[0];
            const std::string name = callee.kind == Expr::Kind::kAttr || callee.kind == Expr::Kind::kName
                                         ? "'" + callee.name + "'"
                                         : "a value";
            return Status::Unsupported("calling " + name +
                                       ", which is undefined (a function or method outside the subset)");
          }
          return Status::InvalidArgument("'" + fn.TypeName() + "' object is not callable");
        }
        return fn.Call(args);
      }
      case Expr::Kind::kFilter: {
        TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*e.children[0]));
        TROUPE_ASSIGN_OR_RETURN(Args args, EvalArgs(e));
        return ApplyFilter(e.name, v, args);
      }
      case Expr::Kind::kTest: {
        TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*e.children[0]));
        TROUPE_ASSIGN_OR_RETURN(Args args, EvalArgs(e));
        TROUPE_ASSIGN_OR_RETURN(bool pass, ApplyTest(e.name, v, args));
        return Value::Bool(pass != e.negated);
      }
      case Expr::Kind::kNot: {
        TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*e.children[0]));
        return Value::Bool(!v.Truthy());
      }
      case Expr::Kind::kNegate: {
        TROUPE_ASSIGN_OR_RETURN(Value v, Eval(*e.children[0]));
        if (v.kind() == Value::Kind::kFloat) return Value::Float(e.name == "-" ? -v.as_float() : v.as_float());
        if (v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kBool) {
          if (e.name == "+") return Value::Int(v.as_int());
          if (v.as_int() == INT64_MIN) return Status::OutOfRange("integer overflow");
          return Value::Int(-v.as_int());
        }
        return Status::InvalidArgument("bad operand type for unary " + e.name + ": '" + v.TypeName() + "'");
      }
      case Expr::Kind::kBinary: return EvalBinary(e);
      case Expr::Kind::kCompare: return EvalCompare(e);
      case Expr::Kind::kCondition: {
        TROUPE_ASSIGN_OR_RETURN(Value cond, Eval(*e.children[0]));
        if (cond.Truthy()) return Eval(*e.children[1]);
        if (e.children[2]) return Eval(*e.children[2]);
        return Value();
      }
    }
    return Status::Internal("unknown expression");
  }

  Result<Value> GetAttr(const Value& obj, const std::string& name) {
    if (obj.is_undefined())
      return Status::InvalidArgument("cannot read attribute '" + name + "' of an undefined value");
    Value method = BoundMethod(obj, name);
    if (!method.is_undefined()) return method;
    if (obj.is_mapping()) {
      const Value* v = obj.Find(name);
      return v ? *v : Value();
    }
    return Value();
  }

  Result<Value> GetItem(const Value& obj, const Value& key) {
    if (obj.is_undefined()) return Status::InvalidArgument("cannot index an undefined value with " + key.Repr());
    if (obj.is_mapping()) {
      if (!key.is_string()) return Value();
      const Value* v = obj.Find(key.as_string());
      if (v) return *v;
      return obj.kind() == Value::Kind::kDict ? BoundMethod(obj, key.as_string()) : Value();
    }
    if ((obj.is_list() || obj.is_string()) && (key.kind() == Value::Kind::kInt || key.kind() == Value::Kind::kBool)) {
      std::vector<size_t> starts;
      int64_t len;
      if (obj.is_list()) {
        len = static_cast<int64_t>(obj.as_list().size());
      } else {
        starts = py::CodePointStarts(obj.as_string());
        len = static_cast<int64_t>(starts.size()) - 1;
      }
      int64_t i = key.as_int();
      if (i < 0) i += len;
      if (i < 0 || i >= len) return Value();
      if (obj.is_list()) return obj.as_list()[static_cast<size_t>(i)];
      return Value::String(obj.as_string().substr(starts[i], starts[i + 1] - starts[i]));
    }
    if (key.is_string()) return GetAttr(obj, key.as_string());
    return Value();
  }

  Result<Value> EvalSlice(const Expr& e) {
    TROUPE_ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0]));
    Value parts[3];
    for (int i = 0; i < 3; ++i) {
      if (e.children[i + 1]) {
        TROUPE_ASSIGN_OR_RETURN(parts[i], Eval(*e.children[i + 1]));
      }
    }
    if (obj.is_undefined()) return Status::InvalidArgument("cannot slice an undefined value");
    if (obj.is_list()) {
      const List& items = obj.as_list();
      TROUPE_ASSIGN_OR_RETURN(std::vector<size_t> idx,
                              SliceIndices(static_cast<int64_t>(items.size()), parts[0], parts[1], parts[2]));
      List out;
      for (size_t i : idx) out.push_back(items[i]);
      return obj.is_tuple() ? Value::MakeTuple(std::move(out)) : Value::MakeList(std::move(out));
    }
    if (obj.is_string()) {
      const std::string& s = obj.as_string();
      std::vector<size_t> starts = py::CodePointStarts(s);
      TROUPE_ASSIGN_OR_RETURN(std::vector<size_t> idx,
                              SliceIndices(static_cast<int64_t>(starts.size()) - 1, parts[0], parts[1], parts[2]));
      std::string out;
      for (size_t i : idx) out += s.substr(starts[i], starts[i + 1] - starts[i]);
      return Value::String(std::move(out));
    }
    return Status::InvalidArgument("'" + obj.TypeName() + "' object is not subscriptable");
  }

  Result<Value> EvalBinary(const Expr& e) {
    TROUPE_ASSIGN_OR_RETURN(Value l, Eval(*e.children[0]));
    if (e.name == "and") return l.Truthy() ? Eval(*e.children[1]) : Result<Value>(l);
    if (e.name == "or") return l.Truthy() ? Result<Value>(l) : Eval(*e.children[1]);
    TROUPE_ASSIGN_OR_RETURN(Value r, Eval(*e.children[1]));
    if (e.name == "~") {
      std::string s = l.Str() + r.Str();
      if (s.size() > kMaxOutputBytes) return Status::OutOfRange("string longer than the output limit");
      return Value::String(std::move(s));
    }
    auto type_error = [&]() {
      if (l.is_undefined() || r.is_undefined()) {
        return Status::InvalidArgument("an undefined value used with '" + e.name + "'");
      }
      return Status::InvalidArgument("unsupported operand type(s) for " + e.name + ": '" + l.TypeName() + "' and '" +
                                     r.TypeName() + "'");
    };
    const bool ints = (l.kind() == Value::Kind::kInt || l.kind() == Value::Kind::kBool) &&
                      (r.kind() == Value::Kind::kInt || r.kind() == Value::Kind::kBool);
    const bool numbers = l.is_number() && r.is_number();
    if (e.name == "+") {
      if (l.is_string() && r.is_string()) {
        if (l.as_string().size() + r.as_string().size() > kMaxOutputBytes) {
          return Status::OutOfRange("string longer than the output limit");
        }
        return Value::String(l.as_string() + r.as_string());
      }
      if (l.is_list() && r.is_list()) {
        List items = l.as_list();
        items.insert(items.end(), r.as_list().begin(), r.as_list().end());
        return Value::MakeList(std::move(items));
      }
    }
    if (e.name == "*" && ((l.is_string() || l.is_list()) != (r.is_string() || r.is_list()))) {
      const Value& seq = l.is_string() || l.is_list() ? l : r;
      const Value& n = l.is_string() || l.is_list() ? r : l;
      if (n.kind() != Value::Kind::kInt && n.kind() != Value::Kind::kBool) return type_error();
      const int64_t times = std::max<int64_t>(0, n.as_int());
      const size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
      if (unit > 0 && static_cast<uint64_t>(times) > kMaxOutputBytes / unit) {
        return Status::OutOfRange("repetition longer than the output limit");
      }
      if (seq.is_string()) {
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += seq.as_string();
        return Value::String(std::move(out));
      }
      List out;
      for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
      return Value::MakeList(std::move(out));
    }
    if (!numbers) {
      if (e.name == "%" && l.is_string()) return Status::Unsupported("string formatting with '%'");
      return type_error();
    }
    const double a = l.as_float(), b = r.as_float();
    int64_t out = 0;
    if (e.name == "+") {
      if (!ints) return Value::Float(a + b);
      if (!CheckedAdd(l.as_int(), r.as_int(), &out)) return Status::OutOfRange("integer overflow");
      return Value::Int(out);
    }
    if (e.name == "-") {
      if (!ints) return Value::Float(a - b);
      if (!CheckedSub(l.as_int(), r.as_int(), &out)) return Status::OutOfRange("integer overflow");
      return Value::Int(out);
    }
    if (e.name == "*") {
      if (!ints) return Value::Float(a * b);
      if (!CheckedMul(l.as_int(), r.as_int(), &out)) return Status::OutOfRange("integer overflow");
      return Value::Int(out);
    }
    if (e.name == "/") {
      if (b == 0) return Status::InvalidArgument("division by zero");
      return Value::Float(a / b);
    }
    if (e.name == "//" || e.name == "%") {
      if (b == 0) return Status::InvalidArgument("integer division or modulo by zero");
      if (ints) {
        const int64_t x = l.as_int(), y = r.as_int();
        if (x == INT64_MIN && y == -1) return Status::OutOfRange("integer overflow");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          q -= 1;
          m += y;
        }
        return Value::Int(e.name == "//" ? q : m);
      }
      const double q = std::floor(a / b);
      return Value::Float(e.name == "//" ? q : a - q * b);
    }
    if (e.name == "**") {
      if (ints && r.as_int() >= 0) {
        int64_t result = 1;
        for (int64_t i = 0; i < r.as_int(); ++i) {
          if (!CheckedMul(result, l.as_int(), &result)) return Status::OutOfRange("integer overflow");
          if (result == 0 || result == 1) break;
        }
        return Value::Int(result);
      }
      return Value::Float(std::pow(a, b));
    }
    return type_error();
  }

  Result<bool> Contains(const Value& container, const Value& item) {
    if (container.is_string()) {
      if (!item.is_string()) {
        return Status::InvalidArgument("'in <string>' requires string as left operand, not " + item.TypeName());
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_list()) {
      for (const Value& v : container.as_list()) {
        if (v.Equals(item)) return true;
      }
      return false;
    }
    if (container.is_mapping()) return item.is_string() && container.Find(item.as_string()) != nullptr;
    if (container.is_undefined()) return false;
    return Status::InvalidArgument("argument of type '" + container.TypeName() + "' is not iterable");
  }

  Result<Value> EvalCompare(const Expr& e) {
    TROUPE_ASSIGN_OR_RETURN(Value left, Eval(*e.children[0]));
    for (size_t i = 0; i < e.ops.size(); ++i) {
      TROUPE_ASSIGN_OR_RETURN(Value right, Eval(*e.children[i + 1]));
      const std::string& op = e.ops[i];
      bool pass;
      if (op == "==") {
        pass = left.Equals(right);
      } else if (op == "!=") {
        pass = !left.Equals(right);
      } else if (op == "in" || op == "notin") {
        TROUPE_ASSIGN_OR_RETURN(bool found, Contains(right, left));
        pass = found == (op == "in");
      } else {
        TROUPE_ASSIGN_OR_RETURN(int c, Value::Compare(left, right));
        pass = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
      }
      if (!pass) return Value::Bool(false);
      left = std::move(right);
    }
    return Value::Bool(true);
  }

  const Template& tmpl_;
  std::vector<Frame> frames_;
  std::string out_;
  int64_t iterations_ = 0;
  int loop_depth_ = 0;
  int call_depth_ = 0;
};

}  // namespace

Result<std::string> Render(const Template& tmpl, const Dict& variables) { return Renderer(tmpl, variables).Run(); }

}  // namespace troupe::jinja
