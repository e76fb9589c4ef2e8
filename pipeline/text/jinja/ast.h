// The syntax tree of a parsed Jinja template: expressions (Expr) and
// statements (Node). Plain data, built by Parse (parser.h) and walked by
// Render (render.h); each node keeps the byte offset of its first token in the
// normalised source, for error messages. A tree owns its children.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/text/jinja/value.h"

namespace troupe::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // children: items (tuples are lists too)
    kDict,       // children: key, value, key, value, ...
    kAttr,       // children[0].name
    kItem,       // children[0][children[1]]
    kSlice,      // children[0][children[1]:children[2]:children[3]], any of 1..3 may be null
    kCall,       // children[0](children[1..]); arg_names[i] names children[i + 1], "" if positional
    kFilter,     // children[0] | name(children[1..]) with arg_names as for kCall
    kTest,       // children[0] is [not] name(children[1..]); negated
    kNot,        // not children[0]
    kNegate,     // -children[0] (name "+" for unary plus)
    kBinary,     // children[0] name children[1]; name one of + - * / // % ** ~ and or
    kCompare,    // children[0] ops[0] children[1] ops[1] children[2] ...; ops: == != < <= > >= in notin
    kCondition,  // children[1] if children[0] else children[2] (children[2] null: undefined)
  };
  Kind kind;
  size_t offset = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::string> arg_names;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ exprs[0] }}
    kIf,        // exprs: conditions; bodies: one per condition, plus an else body when bodies > exprs
    kFor,       // for names in exprs[0] [if exprs[1]]: bodies[0] [else bodies[1]]
    kSet,       // set names[0] [. attr] = exprs[0]; several names unpack a sequence
    kSetBlock,  // set names[0] %}bodies[0]{% endset
    kMacro,     // macro text(names...) with defaults exprs (null when none): bodies[0]
    kBreak,
    kContinue,
  };
  Kind kind;
  size_t offset = 0;
  std::string text;
  std::string attr;
  std::vector<std::string> names;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
};

struct Template {
  std::string source;  // normalised source that offsets refer to
  Body body;
};

}  // namespace troupe::jinja
