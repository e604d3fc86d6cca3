// JinjaAst.h — the parsed form of a Jinja template (internal to backend/jinja): expressions and
// statements as plain tagged structs, built by JinjaParser.cpp and walked by JinjaRender.cpp.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/JinjaValue.h"  // defines: Value

namespace lorascope::jinja {

struct Kwarg;

struct Expr {
  enum class Kind {
    Literal,     // literal
    Name,        // name
    ListLit,     // args = items; name "tuple" for (a, b)
    DictLit,     // args = key0, value0, key1, value1, ...
    Attr,        // args[0].name
    Index,       // args[0][args[1]]
    Slice,       // args[0][args[1]:args[2]:args[3]] (Literal Undefined for an omitted part)
    Call,        // args[0](args[1..], kwargs)
    Filter,      // args[0] | name(args[1..], kwargs)
    Test,        // args[0] is [not] name(args[1..])
    Unary,       // name ("-", "+") args[0]
    Binary,      // args[0] name args[1]: + - * / // % ** ~ == != < > <= >= in "not in"
    And,         // args[0] and args[1]
    Or,          // args[0] or args[1]
    Not,         // not args[0]
    Conditional  // args[0] if args[1] else args[2] (args has 2 entries without else)
  };
  Kind kind = Kind::Literal;
  int line = 1;
  std::string name;
  Value literal;
  bool negated = false;  // Test: "is not"
  std::vector<Expr> args;
  std::vector<Kwarg> kwargs;  // name=value arguments of a call, filter or test
};

// (A struct, not std::pair: a pair member needs Expr complete where Expr declares it.)
struct Kwarg {
  std::string name;
  Expr value;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct Stmt {
  enum class Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // branches: (condition, body); the else branch has no condition
    For,       // targets in expr [if condition]: body, elseBody
    Set,       // targets = expr; target "a.b" when attribute is set
    SetBlock,  // {% set targets[0] %}body{% endset %}
    Macro,     // {% macro name(params) %}body{% endmacro %}
    Break,
    Continue,
    Passthrough  // a block rendered as its body ({% generation %}, {% filter %} is not this)
  };
  Kind kind = Kind::Text;
  int line = 1;
  std::string text;
  Expr expr;
  std::vector<std::string> targets;
  std::string attribute;  // Set on a namespace: targets[0].attribute
  std::vector<std::pair<std::unique_ptr<Expr>, Body>> branches;
  Body body;
  Body elseBody;
  std::unique_ptr<Expr> condition;  // For: the "if" filter of the loop
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> params;  // Macro defaults
};

}  // namespace lorascope::jinja
