#include "pipeline/text/jinja/parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "pipeline/text/jinja/builtins.h"
#include "pipeline/text/jinja/lexer.h"

namespace troupe::jinja {
namespace {

using K = Token::Kind;

class Parser {
 public:
  explicit Parser(Lexed lexed) : lexed_(std::move(lexed)) {}

  Result<Template> Run() {
    Template t;
    std::string end;
    TROUPE_RETURN_IF_ERROR(ParseBody(&t.body, {}, &end));
    t.source = std::move(lexed_.source);
    return t;
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, lexed_.tokens.size() - 1);
    return lexed_.tokens[i];
  }
  const Token& Next() {
    const Token& t = Peek();
    if (pos_ < lexed_.tokens.size() - 1) ++pos_;
    return t;
  }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).kind == K::kOperator && Peek(ahead).text == op;
  }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).kind == K::kName && Peek(ahead).text == name;
  }
  bool SkipOp(const char* op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(const char* name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }
  std::string Where(size_t offset) const { return Position(lexed_.source, offset); }
  Status Error(const std::string& what) const {
    return Status::InvalidArgument("template syntax error at " + Where(Peek().offset) + ": " + what);
  }
  Status Unsupported(const std::string& what, size_t offset) const {
    return Status::Unsupported("template uses " + what + ", which is not supported, at " + Where(offset));
  }
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case K::kEof: return "end of template";
      case K::kBlockEnd: return "'%}'";
      case K::kExprEnd: return "'}}'";
      case K::kString: return "a string";
      default: return "'" + t.text + "'";
    }
  }
  Status Expect(const char* op) {
    if (SkipOp(op)) return Status::Ok();
    return Error(std::string("expected '") + op + "', found " + Describe(Peek()));
  }
  Status ExpectBlockEnd() {
    if (Peek().kind == K::kBlockEnd) {
      Next();
      return Status::Ok();
    }
    return Error("expected '%}', found " + Describe(Peek()));
  }
  Result<std::string> ExpectName() {
    if (Peek().kind != K::kName) return Error("expected a name, found " + Describe(Peek()));
    return Next().text;
  }
  Status Enter() {
    if (++depth_ > kMaxDepth) {
      return Status::Unsupported("template nests deeper than " + std::to_string(kMaxDepth) + " levels at " +
                                 Where(Peek().offset));
    }
    return Status::Ok();
  }

  // ----- Statements

  // Parses nodes until a block tag whose keyword is in `ends` (consumed up to
  // after the keyword; *end names it) or, when `ends` is empty, the end.
  Status ParseBody(Body* body, const std::set<std::string>& ends, std::string* end) {
    TROUPE_RETURN_IF_ERROR(Enter());
    while (true) {
      const Token& t = Peek();
      if (t.kind == K::kEof) {
        if (ends.empty()) break;
        return Error("missing {% " + *ends.begin() + " %}: the template ends first");
      }
      if (t.kind == K::kText) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kText;
        node->offset = t.offset;
        node->text = Next().text;
        body->push_back(std::move(node));
      } else if (t.kind == K::kExprBegin) {
        auto node = std::make_unique<Node>();
        node->kind = Node::Kind::kOutput;
        node->offset = Next().offset;
        TROUPE_ASSIGN_OR_RETURN(ExprPtr e, ParseExpression());
        node->exprs.push_back(std::move(e));
        if (Peek().kind != K::kExprEnd) return Error("expected '}}', found " + Describe(Peek()));
        Next();
        body->push_back(std::move(node));
      } else if (t.kind == K::kBlockBegin) {
        const size_t offset = Next().offset;
        if (Peek().kind != K::kName) return Error("expected a statement name, found " + Describe(Peek()));
        const std::string keyword = Peek().text;
        if (ends.count(keyword)) {
          Next();
          *end = keyword;
          break;
        }
        Next();
        NodePtr node;
        TROUPE_RETURN_IF_ERROR(ParseStatement(keyword, offset, &node));
        if (node) body->push_back(std::move(node));
      } else {
        return Error("unexpected " + Describe(t));
      }
    }
    --depth_;
    return Status::Ok();
  }

  Status ParseStatement(const std::string& keyword, size_t offset, NodePtr* out) {
    auto node = std::make_unique<Node>();
    node->offset = offset;
    std::string end;
    if (keyword == "if") {
      node->kind = Node::Kind::kIf;
      while (true) {
        TROUPE_ASSIGN_OR_RETURN(ExprPtr cond, ParseExpression());
        node->exprs.push_back(std::move(cond));
        TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
        node->bodies.emplace_back();
        TROUPE_RETURN_IF_ERROR(ParseBody(&node->bodies.back(), {"elif", "else", "endif"}, &end));
        if (end != "elif") break;
      }
      if (end == "else") {
        TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
        node->bodies.emplace_back();
        TROUPE_RETURN_IF_ERROR(ParseBody(&node->bodies.back(), {"endif"}, &end));
      }
      TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
    } else if (keyword == "for") {
      node->kind = Node::Kind::kFor;
      do {
        TROUPE_ASSIGN_OR_RETURN(std::string name, ExpectName());
        node->names.push_back(name);
      } while (SkipOp(","));
      if (!SkipName("in")) return Error("expected 'in' in the for statement, found " + Describe(Peek()));
      TROUPE_ASSIGN_OR_RETURN(ExprPtr iter, ParseExpression(/*with_condition=*/false));
      node->exprs.push_back(std::move(iter));
      if (SkipName("if")) {
        TROUPE_ASSIGN_OR_RETURN(ExprPtr filter, ParseExpression());
        node->exprs.push_back(std::move(filter));
      }
      if (IsName("recursive")) return Unsupported("a recursive for loop", Peek().offset);
      TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
      node->bodies.emplace_back();
      TROUPE_RETURN_IF_ERROR(ParseBody(&node->bodies.back(), {"else", "endfor"}, &end));
      if (end == "else") {
        TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
        node->bodies.emplace_back();
        TROUPE_RETURN_IF_ERROR(ParseBody(&node->bodies.back(), {"endfor"}, &end));
      }
      TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
    } else if (keyword == "set") {
      TROUPE_ASSIGN_OR_RETURN(std::string name, ExpectName());
      node->names.push_back(name);
      if (SkipOp(".")) {
        TROUPE_ASSIGN_OR_RETURN(node->attr, ExpectName());
      } else {
        while (SkipOp(",")) {
          TROUPE_ASSIGN_OR_RETURN(std::string more, ExpectName());
          node->names.push_back(more);
        }
      }
      if (Peek().kind == K::kBlockEnd && node->attr.empty() && node->names.size() == 1) {
        Next();
        node->kind = Node::Kind::kSetBlock;
        node->bodies.emplace_back();
        TROUPE_RETURN_IF_ERROR(ParseBody(&node->bodies.back(), {"endset"}, &end));
        TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
      } else {
        node->kind = Node::Kind::kSet;
        TROUPE_RETURN_IF_ERROR(Expect("="));
        TROUPE_ASSIGN_OR_RETURN(ExprPtr value, ParseTuple());
        node->exprs.push_back(std::move(value));
        TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
      }
    } else if (keyword == "macro") {
      node->kind = Node::Kind::kMacro;
      TROUPE_ASSIGN_OR_RETURN(node->text, ExpectName());
      TROUPE_RETURN_IF_ERROR(Expect("("));
      while (!SkipOp(")")) {
        if (!node->names.empty()) TROUPE_RETURN_IF_ERROR(Expect(","));
        if (SkipOp(")")) break;
        TROUPE_ASSIGN_OR_RETURN(std::string param, ExpectName());
        node->names.push_back(param);
        ExprPtr def;
        if (SkipOp("=")) {
          TROUPE_ASSIGN_OR_RETURN(def, ParseExpression());
        }
        node->exprs.push_back(std::move(def));
      }
      TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
      node->bodies.emplace_back();
      TROUPE_RETURN_IF_ERROR(ParseBody(&node->bodies.back(), {"endmacro"}, &end));
      if (Peek().kind == K::kName) Next();  // {% endmacro name %}
      TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
    } else if (keyword == "break" || keyword == "continue") {
      node->kind = keyword == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
    } else if (keyword == "generation") {
      // transformers' AssistantTracker: marks assistant text, renders its body.
      node->kind = Node::Kind::kIf;
      auto yes = std::make_unique<Expr>();
      yes->kind = Expr::Kind::kLiteral;
      yes->value = Value::Bool(true);
      node->exprs.push_back(std::move(yes));
      TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
      node->bodies.emplace_back();
      TROUPE_RETURN_IF_ERROR(ParseBody(&node->bodies.back(), {"endgeneration"}, &end));
      TROUPE_RETURN_IF_ERROR(ExpectBlockEnd());
    } else {
      static const std::set<std::string> kKnown = {"extends", "include", "import", "from",       "block", "call",
                                                   "filter",  "raw",     "with",   "autoescape", "do"};
      if (kKnown.count(keyword)) return Unsupported("the '" + keyword + "' statement", offset);
      return Error("unknown statement '" + keyword + "'");
    }
    *out = std::move(node);
    return Status::Ok();
  }

  // ----- Expressions, lowest precedence first (as jinja2's parser)

  ExprPtr Make(Expr::Kind kind, size_t offset) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->offset = offset;
    return e;
  }

  // a, b, c without brackets (set x = a, b): a list.
  Result<ExprPtr> ParseTuple() {
    const size_t offset = Peek().offset;
    TROUPE_ASSIGN_OR_RETURN(ExprPtr first, ParseExpression());
    if (!IsOp(",")) return first;
    ExprPtr list = Make(Expr::Kind::kList, offset);
    list->name = "tuple";
    list->children.push_back(std::move(first));
    while (SkipOp(",")) {
      if (Peek().kind == K::kBlockEnd) break;
      TROUPE_ASSIGN_OR_RETURN(ExprPtr e, ParseExpression());
      list->children.push_back(std::move(e));
    }
    return list;
  }

  Result<ExprPtr> ParseExpression(bool with_condition = true) {
    TROUPE_RETURN_IF_ERROR(Enter());
    auto result = with_condition ? ParseCondition() : ParseOr();
    --depth_;
    return result;
  }

  Result<ExprPtr> ParseCondition() {
    TROUPE_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
    while (IsName("if")) {
      const size_t offset = Next().offset;
      ExprPtr cond = Make(Expr::Kind::kCondition, offset);
      TROUPE_ASSIGN_OR_RETURN(ExprPtr test, ParseOr());
      ExprPtr otherwise;
      if (SkipName("else")) {
        TROUPE_ASSIGN_OR_RETURN(otherwise, ParseExpression());
      }
      cond->children.push_back(std::move(test));
      cond->children.push_back(std::move(expr));
      cond->children.push_back(std::move(otherwise));
      expr = std::move(cond);
    }
    return expr;
  }

  Result<ExprPtr> ParseOr() {
    TROUPE_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (IsName("or")) {
      ExprPtr e = Make(Expr::Kind::kBinary, Next().offset);
      e->name = "or";
      TROUPE_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      e->children.push_back(std::move(left));
      e->children.push_back(std::move(right));
      left = std::move(e);
    }
    return left;
  }

  Result<ExprPtr> ParseAnd() {
    TROUPE_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (IsName("and")) {
      ExprPtr e = Make(Expr::Kind::kBinary, Next().offset);
      e->name = "and";
      TROUPE_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      e->children.push_back(std::move(left));
      e->children.push_back(std::move(right));
      left = std::move(e);
    }
    return left;
  }

  Result<ExprPtr> ParseNot() {
    if (IsName("not")) {
      ExprPtr e = Make(Expr::Kind::kNot, Next().offset);
      TROUPE_RETURN_IF_ERROR(Enter());
      TROUPE_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
      --depth_;
      e->children.push_back(std::move(operand));
      return e;
    }
    return ParseCompare();
  }

  Result<ExprPtr> ParseCompare() {
    const size_t offset = Peek().offset;
    TROUPE_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
    ExprPtr cmp;
    while (true) {
      std::string op;
      const Token& t = Peek();
      if (t.kind == K::kOperator &&
          (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")) {
        op = Next().text;
      } else if (IsName("in")) {
        Next();
        op = "in";
      } else if (IsName("not") && IsName("in", 1)) {
        Next();
        Next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = Make(Expr::Kind::kCompare, offset);
        cmp->children.push_back(std::move(first));
      }
      TROUPE_ASSIGN_OR_RETURN(ExprPtr next, ParseMath1());
      cmp->ops.push_back(op);
      cmp->children.push_back(std::move(next));
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  Result<ExprPtr> Binary(const char* const* ops, Result<ExprPtr> (Parser::*next)()) {
    TROUPE_ASSIGN_OR_RETURN(ExprPtr left, (this->*next)());
    while (true) {
      const char* found = nullptr;
      for (const char* const* op = ops; *op; ++op) {
        if (IsOp(*op)) found = *op;
      }
      if (!found) return left;
      ExprPtr e = Make(Expr::Kind::kBinary, Next().offset);
      e->name = found;
      TROUPE_ASSIGN_OR_RETURN(ExprPtr right, (this->*next)());
      e->children.push_back(std::move(left));
      e->children.push_back(std::move(right));
      left = std::move(e);
    }
  }
  Result<ExprPtr> ParseMath1() {
    static const char* const kOps[] = {"+", "-", nullptr};
    return Binary(kOps, &Parser::ParseConcat);
  }
  Result<ExprPtr> ParseConcat() {
    static const char* const kOps[] = {"~", nullptr};
    return Binary(kOps, &Parser::ParseMath2);
  }
  Result<ExprPtr> ParseMath2() {
    static const char* const kOps[] = {"*", "/", "//", "%", nullptr};
    return Binary(kOps, &Parser::ParsePow);
  }
  Result<ExprPtr> ParsePow() {
    static const char* const kOps[] = {"**", nullptr};
    return Binary(kOps, &Parser::ParseUnaryWithFilters);
  }
  Result<ExprPtr> ParseUnaryWithFilters() { return ParseUnary(true); }

  Result<ExprPtr> ParseUnary(bool with_filter) {
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      ExprPtr e = Make(Expr::Kind::kNegate, Peek().offset);
      e->name = Next().text;
      TROUPE_RETURN_IF_ERROR(Enter());
      TROUPE_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      --depth_;
      e->children.push_back(std::move(operand));
      node = std::move(e);
    } else {
      TROUPE_ASSIGN_OR_RETURN(node, ParsePrimary());
    }
    TROUPE_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    if (with_filter) {
      TROUPE_ASSIGN_OR_RETURN(node, ParseFilters(std::move(node)));
    }
    return node;
  }

  Result<ExprPtr> ParsePrimary() {
    const Token& t = Peek();
    const size_t offset = t.offset;
    if (t.kind == K::kName) {
      const std::string name = Next().text;
      if (name == "true" || name == "True") return Literal(Value::Bool(true), offset);
      if (name == "false" || name == "False") return Literal(Value::Bool(false), offset);
      if (name == "none" || name == "None") return Literal(Value::None(), offset);
      ExprPtr e = Make(Expr::Kind::kName, offset);
      e->name = name;
      return e;
    }
    if (t.kind == K::kString) {
      std::string s = Next().text;
      while (Peek().kind == K::kString) s += Next().text;  // adjacent literals join
      return Literal(Value::String(std::move(s)), offset);
    }
    if (t.kind == K::kInt || t.kind == K::kFloat) {
      const bool is_float = t.kind == K::kFloat;
      const std::string text = Next().text;
      errno = 0;
      if (is_float) return Literal(Value::Float(std::strtod(text.c_str(), nullptr)), offset);
      long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) return Unsupported("an integer literal beyond 64 bits", offset);
      return Literal(Value::Int(v), offset);
    }
    if (SkipOp("(")) {
      TROUPE_RETURN_IF_ERROR(Enter());
      ExprPtr e;
      if (SkipOp(")")) {
        e = Make(Expr::Kind::kList, offset);
        e->name = "tuple";
      } else {
        TROUPE_ASSIGN_OR_RETURN(e, ParseExpression());
        if (IsOp(",")) {
          ExprPtr list = Make(Expr::Kind::kList, offset);
          list->name = "tuple";
          list->children.push_back(std::move(e));
          while (SkipOp(",")) {
            if (IsOp(")")) break;
            TROUPE_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
            list->children.push_back(std::move(item));
          }
          e = std::move(list);
        }
        TROUPE_RETURN_IF_ERROR(Expect(")"));
      }
      --depth_;
      return e;
    }
    if (SkipOp("[")) {
      TROUPE_RETURN_IF_ERROR(Enter());
      ExprPtr list = Make(Expr::Kind::kList, offset);
      while (!SkipOp("]")) {
        if (!list->children.empty()) {
          TROUPE_RETURN_IF_ERROR(Expect(","));
          if (SkipOp("]")) break;
        }
        TROUPE_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
        list->children.push_back(std::move(item));
      }
      --depth_;
      return list;
    }
    if (SkipOp("{")) {
      TROUPE_RETURN_IF_ERROR(Enter());
      ExprPtr dict = Make(Expr::Kind::kDict, offset);
      while (!SkipOp("}")) {
        if (!dict->children.empty()) {
          TROUPE_RETURN_IF_ERROR(Expect(","));
          if (SkipOp("}")) break;
        }
        TROUPE_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
        TROUPE_RETURN_IF_ERROR(Expect(":"));
        TROUPE_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        dict->children.push_back(std::move(key));
        dict->children.push_back(std::move(value));
      }
      --depth_;
      return dict;
    }
    return Error("expected an expression, found " + Describe(t));
  }

  Result<ExprPtr> Literal(Value v, size_t offset) {
    ExprPtr e = Make(Expr::Kind::kLiteral, offset);
    e->value = std::move(v);
    return e;
  }

  Result<ExprPtr> ParsePostfix(ExprPtr node) {
    int chain = 0;
    while (true) {
      if (++chain > kMaxDepth * 4) return Unsupported("a postfix chain this long", Peek().offset);
      const size_t offset = node->offset;  // errors point at the start of `a.b(c)`
      if (SkipOp(".")) {
        ExprPtr e;
        if (Peek().kind == K::kInt) {  // foo.0 is foo[0]
          e = Make(Expr::Kind::kItem, offset);
          e->children.push_back(std::move(node));
          TROUPE_ASSIGN_OR_RETURN(ExprPtr index, Literal(Value::Int(std::atoll(Next().text.c_str())), offset));
          e->children.push_back(std::move(index));
        } else {
          e = Make(Expr::Kind::kAttr, offset);
          TROUPE_ASSIGN_OR_RETURN(e->name, ExpectName());
          e->children.push_back(std::move(node));
        }
        node = std::move(e);
      } else if (SkipOp("[")) {
        TROUPE_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node), offset));
      } else if (IsOp("(")) {
        ExprPtr call = Make(Expr::Kind::kCall, offset);
        call->children.push_back(std::move(node));
        TROUPE_RETURN_IF_ERROR(ParseArgs(call.get()));
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> ParseSubscript(ExprPtr object, size_t offset) {
    TROUPE_RETURN_IF_ERROR(Enter());
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (!IsOp("]")) {
      if (SkipOp(":")) {
        is_slice = true;
        if (++part > 2) return Error("a slice takes at most three parts");
        continue;
      }
      if (parts[part]) return Error("expected ':' or ']' in a subscript, found " + Describe(Peek()));
      TROUPE_ASSIGN_OR_RETURN(parts[part], ParseExpression());
    }
    Next();
    --depth_;
    if (!is_slice) {
      if (!parts[0]) return Error("empty subscript");
      ExprPtr e = Make(Expr::Kind::kItem, offset);
      e->children.push_back(std::move(object));
      e->children.push_back(std::move(parts[0]));
      return e;
    }
    ExprPtr e = Make(Expr::Kind::kSlice, offset);
    e->children.push_back(std::move(object));
    for (ExprPtr& p : parts) e->children.push_back(std::move(p));
    return e;
  }

  // (a, b, key=c): appended to e->children / e->arg_names.
  Status ParseArgs(Expr* e) {
    TROUPE_RETURN_IF_ERROR(Expect("("));
    TROUPE_RETURN_IF_ERROR(Enter());
    bool first = true;
    while (!SkipOp(")")) {
      if (!first) {
        TROUPE_RETURN_IF_ERROR(Expect(","));
        if (SkipOp(")")) break;
      }
      first = false;
      if (IsOp("*") || IsOp("**")) return Unsupported("*args / **kwargs in a call", Peek().offset);
      std::string name;
      if (Peek().kind == K::kName && IsOp("=", 1)) {
        name = Next().text;
        Next();
      }
      TROUPE_ASSIGN_OR_RETURN(ExprPtr arg, ParseExpression());
      e->children.push_back(std::move(arg));
      e->arg_names.push_back(name);
    }
    --depth_;
    return Status::Ok();
  }

  Result<ExprPtr> ParseFilters(ExprPtr node) {
    int chain = 0;
    while (true) {
      if (++chain > kMaxDepth * 4) return Unsupported("a filter chain this long", Peek().offset);
      if (IsOp("|")) {
        const size_t offset = Next().offset;
        ExprPtr f = Make(Expr::Kind::kFilter, offset);
        TROUPE_ASSIGN_OR_RETURN(f->name, ExpectName());
        if (!IsFilter(f->name)) return Unsupported("the filter '" + f->name + "'", offset);
        f->children.push_back(std::move(node));
        if (IsOp("(")) TROUPE_RETURN_IF_ERROR(ParseArgs(f.get()));
        node = std::move(f);
      } else if (IsName("is")) {
        const size_t offset = Next().offset;
        ExprPtr t = Make(Expr::Kind::kTest, offset);
        t->negated = SkipName("not");
        TROUPE_ASSIGN_OR_RETURN(t->name, ExpectName());
        if (!IsTest(t->name)) return Unsupported("the test '" + t->name + "'", offset);
        t->children.push_back(std::move(node));
        if (IsOp("(")) {
          TROUPE_RETURN_IF_ERROR(ParseArgs(t.get()));
        } else if (StartsPrimary()) {  // `is equalto 'user'`, `is divisibleby 3`
          TROUPE_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
          TROUPE_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
          t->children.push_back(std::move(arg));
          t->arg_names.push_back("");
        }
        node = std::move(t);
      } else {
        return node;
      }
    }
  }

  bool StartsPrimary() const {
    const Token& t = Peek();
    if (t.kind == K::kString || t.kind == K::kInt || t.kind == K::kFloat) return true;
    if (t.kind == K::kOperator) return t.text == "[" || t.text == "{";
    if (t.kind != K::kName) return false;
    static const std::set<std::string> kStop = {"and", "or", "else", "if", "in", "not", "is"};
    return kStop.count(t.text) == 0;
  }

  Lexed lexed_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<Template> Parse(std::string_view source) {
  TROUPE_ASSIGN_OR_RETURN(Lexed lexed, Lex(source));
  return Parser(std::move(lexed)).Run();
}

}  // namespace troupe::jinja
