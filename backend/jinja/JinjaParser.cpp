// JinjaParser.cpp — tokens from Jinja source, and statements and expressions from the tokens.
// Whitespace follows jinja2's lexer under transformers' settings: {%- / -%} strip all
// whitespace on that side; lstrip_blocks removes the spaces before a {% or {# that starts its
// line; trim_blocks removes the newline after %} or #}; one trailing newline of the source is
// dropped (keep_trailing_newline=False).
#include "jinja/JinjaParser.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "common/Utf8.h"
#include "jinja/JinjaError.h"

namespace lorascope::jinja {

namespace {

struct Token {
  enum class Type {
    Text,
    VarBegin,
    VarEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Op,
    End
  };
  Type type = Type::End;
  std::string value;
  int line = 1;
};

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string rstripSpace(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0 && isSpace(text[end - 1]))
    --end;
  return std::string(text.substr(0, end));
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& origin) : origin_(origin) {
    // jinja2 splits on \r\n, \r and \n and joins with \n, dropping one trailing newline.
    for (std::size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n')
          ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n')
      src_.pop_back();
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const std::size_t start = findTagStart(pos_);
      if (start == std::string::npos) {
        emitText(src_.substr(pos_));
        break;
      }
      const char kind = src_[start + 1];
      const char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      std::string text = src_.substr(pos_, start - pos_);
      if (sign == '-') {
        text = rstripSpace(text);
      } else if (sign != '+' && kind != '{') {
        const std::size_t lineStart =
            text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((lineStart > 0 || lineStarting_) && lineStart < text.size() &&
            rstripSpace(text.substr(lineStart)).empty()) {
          text.resize(lineStart);
        }
      }
      line_ += countLines(src_.substr(pos_, start - pos_)) - countLines(text);
      emitText(text);
      line_ += countLines(text);
      pos_ = start + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        lexComment(start);
      } else {
        lexTag(kind == '{');
      }
    }
    tokens_.push_back({Token::Type::End, "", line_});
    return std::move(tokens_);
  }

 private:
  static int countLines(std::string_view text) {
    int n = 0;
    for (char c : text)
      n += c == '\n';
    return n;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw JinjaError(origin_ + " line " + std::to_string(line_) + ": " + what);
  }

  std::size_t findTagStart(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    }
    return std::string::npos;
  }

  void emitText(const std::string& text) {
    if (!text.empty())
      tokens_.push_back({Token::Type::Text, text, line_});
  }

  // After a tag end: "-" strips all following whitespace, "+" keeps it, and a block or comment
  // end otherwise eats one newline (trim_blocks).
  void afterTagEnd(char sign, bool isBlock) {
    std::size_t consumedEnd = pos_;
    if (sign == '-') {
      while (pos_ < src_.size() && isSpace(src_[pos_])) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
    } else if (sign != '+' && isBlock && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
    lineStarting_ = pos_ > consumedEnd ? src_[pos_ - 1] == '\n' : false;
  }

  void lexComment(std::size_t start) {
    const std::size_t end = src_.find("#}", pos_);
    if (end == std::string::npos)
      fail("comment opened here is never closed with #}");
    line_ += countLines(std::string_view(src_).substr(start, end - start));
    const char sign = end > pos_ ? src_[end - 1] : '\0';
    pos_ = end + 2;
    afterTagEnd(sign == '-' || sign == '+' ? sign : '\0', true);
  }

  void lexTag(bool isVariable) {
    tokens_.push_back({isVariable ? Token::Type::VarBegin : Token::Type::BlockBegin, "", line_});
    int depth = 0;  // open ( [ { inside the tag: "}}" then closes a dict, not the tag
    while (true) {
      while (pos_ < src_.size() && isSpace(src_[pos_])) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size())
        fail(std::string("tag is never closed with ") + (isVariable ? "}}" : "%}"));
      const std::string_view rest = std::string_view(src_).substr(pos_);
      const std::string_view close = isVariable ? "}}" : "%}";
      if (depth == 0) {
        for (char sign : {'-', '+', '\0'}) {
          const std::string marker =
              sign ? std::string(1, sign) + std::string(close) : std::string(close);
          if (rest.substr(0, marker.size()) == marker && !(isVariable && sign == '+')) {
            pos_ += marker.size();
            tokens_.push_back(
                {isVariable ? Token::Type::VarEnd : Token::Type::BlockEnd, "", line_});
            afterTagEnd(sign, !isVariable);
            return;
          }
        }
      }
      lexOne(rest, depth);
    }
  }

  void lexOne(std::string_view rest, int& depth) {
    const char c = rest[0];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t n = 1;
      while (n < rest.size() &&
             (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_'))
        ++n;
      tokens_.push_back({Token::Type::Name, std::string(rest.substr(0, n)), line_});
      pos_ += n;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      lexNumber(rest);
      return;
    }
    if (c == '\'' || c == '"') {
      lexString(rest);
      return;
    }
    static const char* const kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : kTwoChar) {
      if (rest.substr(0, 2) == op) {
        tokens_.push_back({Token::Type::Op, op, line_});
        pos_ += 2;
        return;
      }
    }
    if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos)
      fail(std::string("unexpected character '") + c + "' in a tag");
    if (c == '(' || c == '[' || c == '{')
      ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0)
      --depth;
    tokens_.push_back({Token::Type::Op, std::string(1, c), line_});
    ++pos_;
  }

  void lexNumber(std::string_view rest) {
    std::size_t n = 0;
    auto digits = [&] {
      while (n < rest.size() &&
             (std::isdigit(static_cast<unsigned char>(rest[n])) || rest[n] == '_'))
        ++n;
    };
    digits();
    bool isFloat = false;
    if (n + 1 < rest.size() && rest[n] == '.' &&
        std::isdigit(static_cast<unsigned char>(rest[n + 1]))) {
      isFloat = true;
      ++n;
      digits();
    }
    if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
      std::size_t m = n + 1;
      if (m < rest.size() && (rest[m] == '+' || rest[m] == '-'))
        ++m;
      if (m < rest.size() && std::isdigit(static_cast<unsigned char>(rest[m]))) {
        isFloat = true;
        n = m;
        digits();
      }
    }
    std::string text;
    for (char ch : rest.substr(0, n)) {
      if (ch != '_')
        text += ch;
    }
    tokens_.push_back({isFloat ? Token::Type::Float : Token::Type::Int, text, line_});
    pos_ += n;
  }

  // Python's unicode-escape decoding of a string literal's body (unknown escapes stay as written).
  void lexString(std::string_view rest) {
    const char quote = rest[0];
    std::string value;
    std::size_t i = 1;
    const int startLine = line_;
    for (; i < rest.size() && rest[i] != quote; ++i) {
      const char c = rest[i];
      if (c != '\\') {
        line_ += c == '\n';
        value += c;
        continue;
      }
      if (++i >= rest.size())
        break;
      const char e = rest[i];
      const std::string_view simple = "nrtabfv\\'\"\n";
      const std::string_view mapped = "\n\r\t\a\b\f\v\\'\"";
      if (const auto k = simple.find(e); k != std::string_view::npos) {
        if (e != '\n')
          value += mapped[k];  // a backslash-newline continues the line
        continue;
      }
      const int hexDigits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
      if (hexDigits > 0 && i + static_cast<std::size_t>(hexDigits) < rest.size()) {
        const std::string hex(rest.substr(i + 1, static_cast<std::size_t>(hexDigits)));
        if (hex.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
          const auto cp = static_cast<char32_t>(std::stoul(hex, nullptr, 16));
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            fail("string escape \\" + std::string(1, e) + hex + " is not a character");
          common::utf8::append(value, cp);
          i += static_cast<std::size_t>(hexDigits);
          continue;
        }
      }
      if (e >= '0' && e <= '7') {
        unsigned cp = 0;
        std::size_t k = 0;
        for (; k < 3 && i + k < rest.size() && rest[i + k] >= '0' && rest[i + k] <= '7'; ++k)
          cp = cp * 8 + static_cast<unsigned>(rest[i + k] - '0');
        common::utf8::append(value, static_cast<char32_t>(cp));
        i += k - 1;
        continue;
      }
      value += '\\';
      value += e;
    }
    if (i >= rest.size()) {
      line_ = startLine;
      fail("string literal is never closed");
    }
    tokens_.push_back({Token::Type::String, value, startLine});
    pos_ += i + 1;
  }

  std::string src_;
  const std::string& origin_;
  std::size_t pos_ = 0;
  int line_ = 1;
  bool lineStarting_ = true;
  std::vector<Token> tokens_;
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& origin, int maxDepth)
      : tokens_(std::move(tokens)), origin_(origin), maxDepth_(maxDepth) {}

  Body parseAll() {
    Body body = parseBody({});
    if (peek().type != Token::Type::End)
      fail("unexpected {% " + tokens_[pos_ + 1].value + " %}");
    return body;
  }

 private:
  using T = Token::Type;

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : parser(p) {
      if (++parser.depth_ > parser.maxDepth_)
        parser.fail("nesting deeper than " + std::to_string(parser.maxDepth_) + " levels");
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw JinjaError(origin_ + " line " + std::to_string(peek().line) + ": " + what);
  }
  const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  Token next() {
    Token t = peek();
    if (pos_ < tokens_.size() - 1)
      ++pos_;
    return t;
  }
  bool isOp(const char* op, std::size_t ahead = 0) const {
    return peek(ahead).type == T::Op && peek(ahead).value == op;
  }
  bool isName(const char* name, std::size_t ahead = 0) const {
    return peek(ahead).type == T::Name && peek(ahead).value == name;
  }
  void expectOp(const char* op) {
    if (!isOp(op))
      fail(std::string("expected '") + op + "', found " + describe(peek()));
    next();
  }
  std::string expectName() {
    if (peek().type != T::Name)
      fail("expected a name, found " + describe(peek()));
    return next().value;
  }
  void expectBlockEnd() {
    if (peek().type != T::BlockEnd)
      fail("expected '%}', found " + describe(peek()));
    next();
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case T::End:
        return "the end of the template";
      case T::BlockEnd:
        return "'%}'";
      case T::VarEnd:
        return "'}}'";
      case T::String:
        return "a string";
      default:
        return "'" + t.value + "'";
    }
  }

  // Statements up to a {% name %} with name in `stops` (left unconsumed after "{%") or the end.
  Body parseBody(std::initializer_list<const char*> stops) {
    DepthGuard guard(*this);
    Body body;
    while (peek().type != T::End) {
      const Token& t = peek();
      if (t.type == T::Text) {
        Stmt s;
        s.kind = Stmt::Kind::Text;
        s.line = t.line;
        s.text = next().value;
        body.push_back(std::move(s));
      } else if (t.type == T::VarBegin) {
        next();
        Stmt s;
        s.kind = Stmt::Kind::Output;
        s.line = peek().line;
        s.expr = parseTupleOrExpression();
        if (peek().type != T::VarEnd)
          fail("expected '}}', found " + describe(peek()));
        next();
        body.push_back(std::move(s));
      } else if (t.type == T::BlockBegin) {
        for (const char* stop : stops) {
          if (isName(stop, 1)) {
            next();
            return body;
          }
        }
        next();
        body.push_back(parseStatement());
      } else {
        fail("unexpected " + describe(t));
      }
    }
    if (stops.size() > 0)
      fail(std::string("missing {% ") + *(stops.end() - 1) + " %}");
    return body;
  }

  Stmt parseStatement() {
    Stmt s;
    s.line = peek().line;
    const std::string keyword = expectName();
    if (keyword == "if") {
      parseIf(s);
    } else if (keyword == "for") {
      parseFor(s);
    } else if (keyword == "set") {
      parseSet(s);
    } else if (keyword == "macro") {
      parseMacro(s);
    } else if (keyword == "break" || keyword == "continue") {
      s.kind = keyword == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
      expectBlockEnd();
    } else if (keyword == "generation") {
      s.kind = Stmt::Kind::Passthrough;
      expectBlockEnd();
      s.body = parseBody({"endgeneration"});
      next();
      expectBlockEnd();
    } else {
      --pos_;
      fail("unsupported tag {% " + keyword + " %}");
    }
    return s;
  }

  void parseIf(Stmt& s) {
    s.kind = Stmt::Kind::If;
    auto condition = std::make_unique<Expr>(parseExpression());
    expectBlockEnd();
    while (true) {
      Body body = parseBody({"elif", "else", "endif"});
      s.branches.emplace_back(std::move(condition), std::move(body));
      const std::string tag = next().value;
      if (tag == "endif") {
        expectBlockEnd();
        return;
      }
      if (tag == "else") {
        expectBlockEnd();
        s.branches.emplace_back(nullptr, parseBody({"endif"}));
        next();
        expectBlockEnd();
        return;
      }
      condition = std::make_unique<Expr>(parseExpression());
      expectBlockEnd();
    }
  }

  std::vector<std::string> parseTargets() {
    std::vector<std::string> names;
    const bool paren = isOp("(");
    if (paren)
      next();
    names.push_back(expectName());
    while (isOp(",")) {
      next();
      names.push_back(expectName());
    }
    if (paren)
      expectOp(")");
    return names;
  }

  void parseFor(Stmt& s) {
    s.kind = Stmt::Kind::For;
    s.targets = parseTargets();
    if (!isName("in"))
      fail("expected 'in' in a for loop, found " + describe(peek()));
    next();
    s.expr = parseOr();
    if (isName("if")) {
      next();
      s.condition = std::make_unique<Expr>(parseExpression());
    }
    if (isName("recursive"))
      fail("recursive for loops are not supported");
    expectBlockEnd();
    s.body = parseBody({"else", "endfor"});
    if (next().value == "else") {
      expectBlockEnd();
      s.elseBody = parseBody({"endfor"});
      next();
    }
    expectBlockEnd();
  }

  void parseSet(Stmt& s) {
    s.kind = Stmt::Kind::Set;
    s.targets.push_back(expectName());
    if (isOp(".")) {
      next();
      s.attribute = expectName();
    } else {
      while (isOp(",")) {
        next();
        s.targets.push_back(expectName());
      }
    }
    if (peek().type == T::BlockEnd && s.targets.size() == 1 && s.attribute.empty()) {
      next();
      s.kind = Stmt::Kind::SetBlock;
      s.body = parseBody({"endset"});
      next();
      expectBlockEnd();
      return;
    }
    expectOp("=");
    s.expr = parseTupleOrExpression();
    expectBlockEnd();
  }

  void parseMacro(Stmt& s) {
    s.kind = Stmt::Kind::Macro;
    s.text = expectName();
    expectOp("(");
    while (!isOp(")")) {
      std::string name = expectName();
      std::unique_ptr<Expr> fallback;
      if (isOp("=")) {
        next();
        fallback = std::make_unique<Expr>(parseExpression());
      }
      s.params.emplace_back(std::move(name), std::move(fallback));
      if (!isOp(")"))
        expectOp(",");
    }
    next();
    expectBlockEnd();
    s.body = parseBody({"endmacro"});
    next();
    if (peek().type == T::Name)
      next();  // {% endmacro name %}
    expectBlockEnd();
  }

  static Expr make(Expr::Kind kind, int line, std::string name = {}) {
    Expr e;
    e.kind = kind;
    e.line = line;
    e.name = std::move(name);
    return e;
  }

  // a, b, c (a tuple, held as a list) or a single expression.
  Expr parseTupleOrExpression() {
    Expr first = parseExpression();
    if (!isOp(","))
      return first;
    Expr tuple = make(Expr::Kind::ListLit, first.line, "tuple");
    tuple.args.push_back(std::move(first));
    while (isOp(",")) {
      next();
      if (peek().type == T::BlockEnd || peek().type == T::VarEnd)
        break;
      tuple.args.push_back(parseExpression());
    }
    return tuple;
  }

  Expr parseExpression() {
    DepthGuard guard(*this);
    Expr value = parseOr();
    if (!isName("if"))
      return value;
    Expr e = make(Expr::Kind::Conditional, value.line);
    next();
    e.args.push_back(std::move(value));
    e.args.push_back(parseOr());
    if (isName("else")) {
      next();
      e.args.push_back(parseExpression());
    }
    return e;
  }

  Expr parseOr() { return parseLogical(Expr::Kind::Or, "or", &Parser::parseAnd); }
  Expr parseAnd() { return parseLogical(Expr::Kind::And, "and", &Parser::parseNot); }

  // left (keyword right)*, left-associative: "or" over "and" over "not".
  Expr parseLogical(Expr::Kind kind, const char* keyword, Expr (Parser::*operand)()) {
    Expr left = (this->*operand)();
    while (isName(keyword)) {
      next();
      Expr e = make(kind, left.line);
      e.args.push_back(std::move(left));
      e.args.push_back((this->*operand)());
      left = std::move(e);
    }
    return left;
  }

  Expr parseNot() {
    if (isName("not")) {
      DepthGuard guard(*this);
      Expr e = make(Expr::Kind::Not, next().line);
      e.args.push_back(parseNot());
      return e;
    }
    return parseCompare();
  }

  Expr parseCompare() {
    // Python chains comparisons: a < b < c is a < b and b < c.
    std::vector<Expr> operands;
    std::vector<std::string> ops;
    operands.push_back(parseBinary(0));
    while (true) {
      if (peek().type == T::Op &&
          (peek().value == "==" || peek().value == "!=" || peek().value == "<" ||
           peek().value == ">" || peek().value == "<=" || peek().value == ">=")) {
        ops.push_back(next().value);
      } else if (isName("in")) {
        next();
        ops.push_back("in");
      } else if (isName("not") && isName("in", 1)) {
        next();
        next();
        ops.push_back("not in");
      } else {
        break;
      }
      operands.push_back(parseBinary(0));
    }
    if (ops.empty())
      return std::move(operands[0]);
    Expr result;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      Expr e = make(Expr::Kind::Binary, operands[i].line, ops[i]);
      e.args.push_back(operands[i]);
      e.args.push_back(operands[i + 1]);
      if (i == 0) {
        result = std::move(e);
      } else {
        Expr both = make(Expr::Kind::And, e.line);
        both.args.push_back(std::move(result));
        both.args.push_back(std::move(e));
        result = std::move(both);
      }
    }
    return result;
  }

  // Levels: 0 "+ -", 1 "~", 2 "* / // %", 3 "**".
  Expr parseBinary(int level) {
    static const std::vector<std::vector<std::string>> kLevels = {
        {"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
    if (level == 4)
      return parseUnary(true);
    Expr left = parseBinary(level + 1);
    while (peek().type == T::Op) {
      const auto& ops = kLevels[static_cast<std::size_t>(level)];
      if (std::find(ops.begin(), ops.end(), peek().value) == ops.end())
        break;
      Expr e = make(Expr::Kind::Binary, left.line, next().value);
      e.args.push_back(std::move(left));
      e.args.push_back(parseBinary(level + 1));
      left = std::move(e);
    }
    return left;
  }

  Expr parseUnary(bool withFilters) {
    DepthGuard guard(*this);
    Expr node;
    if (isOp("-") || isOp("+")) {
      node = make(Expr::Kind::Unary, peek().line, next().value);
      node.args.push_back(parseUnary(false));
    } else {
      node = parsePostfix(parsePrimary());
    }
    return withFilters ? parseFilters(std::move(node)) : node;
  }

  Expr parsePrimary() {
    const Token t = next();
    switch (t.type) {
      case T::Name: {
        if (t.value == "true" || t.value == "True")
          return literal(Value(true), t.line);
        if (t.value == "false" || t.value == "False")
          return literal(Value(false), t.line);
        if (t.value == "none" || t.value == "None")
          return literal(Value::none(), t.line);
        return make(Expr::Kind::Name, t.line, t.value);
      }
      case T::String: {
        std::string text = t.value;
        while (peek().type == T::String)
          text += next().value;  // adjacent literals concatenate, as in Python
        return literal(Value(std::move(text)), t.line);
      }
      case T::Int:
        return literal(Value(parseInt(t.value)), t.line);
      case T::Float:
        return literal(Value(parseFloat(t.value)), t.line);
      case T::Op:
        if (t.value == "(")
          return parseParenthesised(t.line);
        if (t.value == "[")
          return parseListLiteral(t.line);
        if (t.value == "{")
          return parseDictLiteral(t.line);
        break;
      default:
        break;
    }
    --pos_;
    fail("expected an expression, found " + describe(t));
  }

  std::int64_t parseInt(const std::string& digits) const {
    if (digits.size() > 18)
      fail("integer " + digits + " is too large");
    return static_cast<std::int64_t>(std::stoll(digits));
  }

  // A number past a double's range (5e999, 1e-999) is an error of the template, not a crash:
  // std::stod throws out_of_range for both.
  double parseFloat(const std::string& text) const {
    try {
      return std::stod(text);
    } catch (const std::out_of_range&) {
      fail("number " + text + " is out of range");
    }
  }

  static Expr literal(Value v, int line) {
    Expr e = make(Expr::Kind::Literal, line);
    e.literal = std::move(v);
    return e;
  }

  Expr parseParenthesised(int line) {
    if (isOp(")")) {
      next();
      return make(Expr::Kind::ListLit, line, "tuple");  // ()
    }
    Expr inner = parseExpression();
    if (isOp(",")) {
      Expr tuple = make(Expr::Kind::ListLit, line, "tuple");
      tuple.args.push_back(std::move(inner));
      while (isOp(",")) {
        next();
        if (isOp(")"))
          break;
        tuple.args.push_back(parseExpression());
      }
      inner = std::move(tuple);
    }
    expectOp(")");
    return inner;
  }

  Expr parseListLiteral(int line) {
    Expr list = make(Expr::Kind::ListLit, line);
    while (!isOp("]")) {
      list.args.push_back(parseExpression());
      if (!isOp("]"))
        expectOp(",");
    }
    next();
    return list;
  }

  Expr parseDictLiteral(int line) {
    Expr dict = make(Expr::Kind::DictLit, line);
    while (!isOp("}")) {
      dict.args.push_back(parseExpression());
      expectOp(":");
      dict.args.push_back(parseExpression());
      if (!isOp("}"))
        expectOp(",");
    }
    next();
    return dict;
  }

  void parseCallArguments(Expr& call) {
    // After "(": positional and name=value arguments up to ")".
    while (!isOp(")")) {
      if (peek().type == T::Name && isOp("=", 1)) {
        std::string key = next().value;
        next();
        call.kwargs.push_back({std::move(key), parseExpression()});
      } else {
        call.args.push_back(parseExpression());
      }
      if (!isOp(")"))
        expectOp(",");
    }
    next();
  }

  Expr parsePostfix(Expr node) {
    while (true) {
      if (isOp(".")) {
        next();
        Expr e = make(Expr::Kind::Attr, node.line);
        if (peek().type == T::Int) {
          e.kind = Expr::Kind::Index;  // x.0 is x[0]
          e.args.push_back(std::move(node));
          e.args.push_back(literal(Value(parseInt(next().value)), e.line));
        } else {
          e.name = expectName();
          e.args.push_back(std::move(node));
        }
        node = std::move(e);
      } else if (isOp("[")) {
        next();
        node = parseSubscript(std::move(node));
      } else if (isOp("(")) {
        next();
        Expr call = make(Expr::Kind::Call, node.line);
        call.args.push_back(std::move(node));
        parseCallArguments(call);
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  Expr parseSubscript(Expr subject) {
    std::vector<Expr> parts;
    bool isSlice = false;
    auto part = [&] {
      if (isOp(":") || isOp("]"))
        return literal(Value(), peek().line);
      return parseExpression();
    };
    parts.push_back(part());
    while (isOp(":") && parts.size() < 3) {
      next();
      isSlice = true;
      parts.push_back(part());
    }
    expectOp("]");
    Expr e = make(isSlice ? Expr::Kind::Slice : Expr::Kind::Index, subject.line);
    e.args.push_back(std::move(subject));
    for (Expr& p : parts)
      e.args.push_back(std::move(p));
    while (isSlice && e.args.size() < 4)
      e.args.push_back(literal(Value(), e.line));
    return e;
  }

  Expr parseFilters(Expr node) {
    while (true) {
      if (isOp("|")) {
        next();
        Expr f = make(Expr::Kind::Filter, node.line, dottedName());
        f.args.push_back(std::move(node));
        if (isOp("(")) {
          next();
          parseCallArguments(f);
        }
        node = std::move(f);
      } else if (isName("is")) {
        next();
        Expr test = make(Expr::Kind::Test, node.line);
        if (isName("not")) {
          next();
          test.negated = true;
        }
        test.name = dottedName();
        test.args.push_back(std::move(node));
        if (isOp("(")) {
          next();
          parseCallArguments(test);
        } else if (takesBareArgument()) {
          test.args.push_back(parsePostfix(parsePrimary()));
        }
        node = std::move(test);
      } else if (isOp("(")) {
        next();
        Expr call = make(Expr::Kind::Call, node.line);
        call.args.push_back(std::move(node));
        parseCallArguments(call);
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  std::string dottedName() {
    std::string name = expectName();
    while (isOp(".")) {
      next();
      name += "." + expectName();
    }
    return name;
  }

  // "x is divisibleby 3": a test's one argument may follow without parentheses.
  bool takesBareArgument() const {
    const Token& t = peek();
    if (t.type == T::String || t.type == T::Int || t.type == T::Float)
      return true;
    if (t.type == T::Op)
      return t.value == "[" || t.value == "{";
    return t.type == T::Name && t.value != "else" && t.value != "or" && t.value != "and" &&
           t.value != "if" && t.value != "is" && t.value != "in" && t.value != "not";
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  const std::string& origin_;
  int maxDepth_;
  int depth_ = 0;
};

}  // namespace

Body parseTemplate(std::string_view source, const std::string& origin, int maxDepth) {
  Parser parser(Lexer(source, origin).run(), origin, maxDepth);
  return parser.parseAll();
}

}  // namespace lorascope::jinja
