// JinjaTemplate.cpp — walking parsed statements: scopes, loops, macros, globals and limits.
//
// Scopes follow Jinja: a for loop's body gets a fresh scope each iteration (a {% set %} inside
// it is gone after the iteration), {% if %} opens none, a macro sees the template's top level
// and its own arguments. namespace() objects are shared, so `set ns.x` inside a loop is seen
// after it.
#include "jinja/JinjaTemplate.h"

#include <ctime>
#include <mutex>

#include "jinja/JinjaAst.h"
#include "jinja/JinjaBuiltins.h"
#include "jinja/JinjaParser.h"

namespace lorascope::jinja {

namespace {

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  Renderer(const std::string& origin, const JinjaLimits& limits)
      : origin_(origin),
        limits_(limits),
        sizes_{limits.maxOutputBytes, std::max<std::size_t>(limits.maxLoopIterations, 1024)} {
    scopes_.emplace_back();
    installGlobals(scopes_.back());
  }

  // `set ns.a = ns` (or through a list, a dict or a bound method) makes a cycle of shared
  // references that would outlive the render; namespaces are the only values changed after they
  // are made, so every cycle runs through one, and emptying them all frees it.
  ~Renderer() {
    for (const Value& ns : namespaces_)
      ns.mutableDict().entries.clear();
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  std::string run(const Body& body, const nlohmann::ordered_json& context) {
    Dict& top = scopes_.back();
    if (context.is_object()) {
      for (const auto& [key, value] : context.items())
        top.set(key, jinja::fromJson(value));
    }
    scopes_.emplace_back();  // the template's own top level
    std::string out;
    try {
      // The context's values are the caller's: the budget pays for what the template builds.
      jinja::RenderBudget budget(limits_.maxValueBytes, limits_.maxRenderTime);
      const jinja::RenderBudget::Scope charged(budget);
      execBody(body, out);
    } catch (const EvalError& e) {
      throw JinjaError(origin_ + " line " + std::to_string(line_) + ": " + e.what());
    }
    return out;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(Renderer& r) : renderer(r) {
      if (++renderer.depth_ > renderer.limits_.maxDepth)
        throw EvalError("calls nested deeper than " + std::to_string(renderer.limits_.maxDepth) +
                        " levels (runaway recursion?)");
      jinja::checkRenderTime();
    }
    ~DepthGuard() { --renderer.depth_; }
    Renderer& renderer;
  };

  static Value function(std::string name, std::function<Value(CallArgs&)> call) {
    auto callable = std::make_shared<jinja::Callable>();
    callable->name = std::move(name);
    callable->call = std::move(call);
    return Value(std::move(callable));
  }

  void installGlobals(Dict& globals) {
    globals.set("raise_exception", function("raise_exception", [this](CallArgs& a) -> Value {
                  throw TemplateRaised(origin_, a.positional.empty()
                                                    ? std::string()
                                                    : jinja::toPythonStr(a.positional[0]));
                }));
    globals.set("range", function("range", [this](CallArgs& a) { return range(a); }));
    auto makeDict = [](CallArgs& a, bool isNamespace) {
      Dict d;
      d.isNamespace = isNamespace;
      if (!a.positional.empty() && a.positional[0].kind() == Value::Kind::Mapping)
        d.entries = a.positional[0].asDict().entries;
      for (auto& [key, value] : a.keyword)
        d.set(key, value);
      return Value(std::move(d));
    };
    globals.set("namespace", function("namespace", [this, makeDict](CallArgs& a) {
                  return namespaces_.emplace_back(makeDict(a, true));
                }));
    globals.set("dict", function("dict", [makeDict](CallArgs& a) { return makeDict(a, false); }));
    globals.set(
        "strftime_now", function("strftime_now", [](CallArgs& a) {
          const std::string format =
              a.positional.empty() ? std::string("%Y-%m-%d") : jinja::toPythonStr(a.positional[0]);
          const std::time_t now = std::time(nullptr);
          // std::localtime (localtime_r is POSIX's only), its shared result copied out under a
          // lock.
          std::tm local{};
          {
            static std::mutex localtimeLock;
            const std::lock_guard guard(localtimeLock);
            if (const std::tm* t = std::localtime(&now))
              local = *t;
          }
          char buffer[256];
          const std::size_t n = std::strftime(buffer, sizeof buffer, format.c_str(), &local);
          return Value(std::string(buffer, n));
        }));
  }

  Value range(const CallArgs& a) {
    std::vector<std::int64_t> n;
    for (const Value& v : a.positional) {
      if (v.kind() != Value::Kind::Int)
        throw EvalError("range() needs integers, not " + v.typeName());
      n.push_back(v.asInt());
    }
    if (n.empty() || n.size() > 3)
      throw EvalError("range() takes 1 to 3 arguments");
    const std::int64_t start = n.size() == 1 ? 0 : n[0];
    const std::int64_t stop = n.size() == 1 ? n[0] : n[1];
    const std::int64_t step = n.size() == 3 ? n[2] : 1;
    if (step == 0)
      throw EvalError("range() step must not be zero");
    List out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (out.size() >= limits_.maxLoopIterations)
        throw EvalError("range() longer than the loop limit of " +
                        std::to_string(limits_.maxLoopIterations));
      out.emplace_back(i);
    }
    return Value(out);
  }

  // Output ------------------------------------------------------------------------------------

  void append(std::string& out, const std::string& text) {
    if (out.size() + text.size() > limits_.maxOutputBytes)
      throw EvalError("output exceeds the limit of " + std::to_string(limits_.maxOutputBytes) +
                      " bytes");
    out += text;
  }

  Flow execBody(const Body& body, std::string& out) {
    for (const Stmt& s : body) {
      const Flow flow = exec(s, out);
      if (flow != Flow::Normal)
        return flow;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt& s, std::string& out) {
    line_ = s.line;
    switch (s.kind) {
      case Stmt::Kind::Text:
        append(out, s.text);
        return Flow::Normal;
      case Stmt::Kind::Output:
        append(out, jinja::toPythonStr(eval(s.expr)));
        return Flow::Normal;
      case Stmt::Kind::If:
        for (const auto& [condition, body] : s.branches) {
          if (!condition || eval(*condition).truthy())
            return execBody(body, out);
        }
        return Flow::Normal;
      case Stmt::Kind::For:
        execFor(s, out);
        return Flow::Normal;
      case Stmt::Kind::Set:
        execSet(s);
        return Flow::Normal;
      case Stmt::Kind::SetBlock: {
        std::string captured;
        DepthGuard guard(*this);
        execBody(s.body, captured);
        assign(s.targets[0], Value(captured));
        return Flow::Normal;
      }
      case Stmt::Kind::Macro:
        defineMacro(s);
        return Flow::Normal;
      case Stmt::Kind::Break:
        return Flow::Break;
      case Stmt::Kind::Continue:
        return Flow::Continue;
      case Stmt::Kind::Passthrough: {
        DepthGuard guard(*this);
        return execBody(s.body, out);
      }
    }
    return Flow::Normal;
  }

  void assign(const std::string& name, Value value) { scopes_.back().set(name, std::move(value)); }

  void bindTargets(const std::vector<std::string>& targets, const Value& value) {
    if (targets.size() == 1) {
      assign(targets[0], value);
      return;
    }
    const List items = jinja::iterate(value);
    if (items.size() != targets.size()) {
      throw EvalError("cannot unpack " + std::to_string(items.size()) + " values into " +
                      std::to_string(targets.size()) + " names");
    }
    for (std::size_t i = 0; i < targets.size(); ++i)
      assign(targets[i], items[i]);
  }

  void execSet(const Stmt& s) {
    const Value value = eval(s.expr);
    if (!s.attribute.empty()) {
      const Value target = lookup(s.targets[0]);
      if (target.kind() != Value::Kind::Mapping || !target.asDict().isNamespace)
        throw EvalError("cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
      target.mutableDict().set(s.attribute, value);
      return;
    }
    bindTargets(s.targets, value);
  }

  void countIteration() {
    if (++iterations_ > limits_.maxLoopIterations)
      throw EvalError("loops ran more than " + std::to_string(limits_.maxLoopIterations) +
                      " iterations");
    jinja::checkRenderTime();
  }

  void execFor(const Stmt& s, std::string& out) {
    List items = jinja::iterate(eval(s.expr));
    DepthGuard guard(*this);
    if (s.condition) {
      List kept;
      for (const Value& item : items) {
        countIteration();
        scopes_.emplace_back();
        bindTargets(s.targets, item);
        const bool keep = eval(*s.condition).truthy();
        scopes_.pop_back();
        if (keep)
          kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      execBody(s.elseBody, out);
      return;
    }
    const auto length = static_cast<std::int64_t>(items.size());
    for (std::int64_t i = 0; i < length; ++i) {
      countIteration();
      scopes_.emplace_back();
      const Value loop = loopObject(items, i);
      assign("loop", loop);
      bindTargets(s.targets, items[static_cast<std::size_t>(i)]);
      Flow flow = Flow::Normal;
      try {
        flow = execBody(s.body, out);
      } catch (...) {
        scopes_.pop_back();
        throw;
      }
      scopes_.pop_back();
      if (flow == Flow::Break)
        break;
    }
  }

  static Value loopObject(const List& items, std::int64_t i) {
    const auto length = static_cast<std::int64_t>(items.size());
    Dict loop;
    loop.set("index", Value(i + 1));
    loop.set("index0", Value(i));
    loop.set("revindex", Value(length - i));
    loop.set("revindex0", Value(length - i - 1));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == length - 1));
    loop.set("length", Value(length));
    loop.set("depth", Value(1));
    loop.set("depth0", Value(0));
    loop.set("previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value());
    loop.set("nextitem", i + 1 < length ? items[static_cast<std::size_t>(i + 1)] : Value());
    loop.set("cycle", function("cycle", [i](CallArgs& a) -> Value {
               if (a.positional.empty())
                 throw EvalError("loop.cycle() needs at least one item");
               return a.positional[static_cast<std::size_t>(i) % a.positional.size()];
             }));
    return Value(std::move(loop));
  }

  void defineMacro(const Stmt& s) {
    const Stmt* macro = &s;
    assign(s.text, function(s.text, [this, macro](CallArgs& a) { return callMacro(*macro, a); }));
  }

  Value callMacro(const Stmt& macro, CallArgs& a) {
    DepthGuard guard(*this);
    if (a.positional.size() > macro.params.size())
      throw EvalError("macro '" + macro.text + "' takes " + std::to_string(macro.params.size()) +
                      " arguments, " + std::to_string(a.positional.size()) + " given");
    // The macro sees the globals, the template's top level and its arguments.
    std::vector<Dict> saved;
    saved.swap(scopes_);
    scopes_.push_back(saved[0]);
    scopes_.push_back(saved[1]);
    scopes_.emplace_back();
    std::string out;
    try {
      for (std::size_t i = 0; i < macro.params.size(); ++i) {
        const auto& [name, fallback] = macro.params[i];
        Value value;
        if (i < a.positional.size())
          value = a.positional[i];
        else if (const auto named = a.get(SIZE_MAX, name))
          value = *named;
        else if (fallback)
          value = eval(*fallback);
        assign(name, value);
      }
      execBody(macro.body, out);
    } catch (...) {
      scopes_.swap(saved);
      throw;
    }
    scopes_.swap(saved);
    return Value(out);
  }

  // Expressions --------------------------------------------------------------------------------

  Value lookup(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      if (const Value* v = scope->find(name))
        return *v;
    }
    return Value();
  }

  CallArgs evalArgs(const Expr& e, std::size_t first) {
    CallArgs args;
    for (std::size_t i = first; i < e.args.size(); ++i)
      args.positional.push_back(eval(e.args[i]));
    for (const auto& [key, value] : e.kwargs)
      args.keyword.emplace_back(key, eval(value));
    return args;
  }

  Value eval(const Expr& e) {
    line_ = e.line;
    switch (e.kind) {
      case Expr::Kind::Literal:
        return e.literal;
      case Expr::Kind::Name:
        return lookup(e.name);
      case Expr::Kind::ListLit: {
        List items;
        for (const Expr& item : e.args)
          items.push_back(eval(item));
        return e.name == "tuple" ? Value::tuple(std::move(items)) : Value(std::move(items));
      }
      case Expr::Kind::DictLit: {
        Dict dict;
        for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value key = eval(e.args[i]);
          if (!key.isString())
            throw EvalError("dict keys must be strings here, not " + key.typeName());
          dict.set(key.asString(), eval(e.args[i + 1]));
        }
        return Value(std::move(dict));
      }
      case Expr::Kind::Attr:
        return jinja::getAttribute(eval(e.args[0]), e.name, sizes_);
      case Expr::Kind::Index:
        return jinja::getItem(eval(e.args[0]), eval(e.args[1]), sizes_);
      case Expr::Kind::Slice:
        return jinja::getSlice(eval(e.args[0]), eval(e.args[1]), eval(e.args[2]), eval(e.args[3]));
      case Expr::Kind::Call: {
        const Value callee = eval(e.args[0]);
        if (callee.kind() != Value::Kind::Function)
          throw EvalError("'" + callee.typeName() + "' object is not callable");
        CallArgs args = evalArgs(e, 1);
        DepthGuard guard(*this);
        return callee.asCallable().call(args);
      }
      case Expr::Kind::Filter: {
        const Value subject = eval(e.args[0]);
        return jinja::applyFilter(e.name, subject, evalArgs(e, 1), sizes_);
      }
      case Expr::Kind::Test: {
        if (e.name == "defined" || e.name == "undefined") {
          const bool defined = !eval(e.args[0]).isUndefined();
          return Value((e.name == "defined") == defined ? !e.negated : e.negated);
        }
        const Value subject = eval(e.args[0]);
        return Value(jinja::applyTest(e.name, subject, evalArgs(e, 1)) != e.negated);
      }
      case Expr::Kind::Unary: {
        const Value v = eval(e.args[0]);
        if (e.name == "-")
          return jinja::negate(v);
        if (!v.isNumber() && v.kind() != Value::Kind::Bool)
          throw EvalError("bad operand type for unary +: '" + v.typeName() + "'");
        return v;
      }
      case Expr::Kind::Binary: {
        const Value a = eval(e.args[0]);
        const Value b = eval(e.args[1]);
        return jinja::binaryOp(e.name, a, b, sizes_);
      }
      case Expr::Kind::And: {
        Value a = eval(e.args[0]);
        return a.truthy() ? eval(e.args[1]) : a;
      }
      case Expr::Kind::Or: {
        Value a = eval(e.args[0]);
        return a.truthy() ? a : eval(e.args[1]);
      }
      case Expr::Kind::Not:
        return Value(!eval(e.args[0]).truthy());
      case Expr::Kind::Conditional:
        if (eval(e.args[1]).truthy())
          return eval(e.args[0]);
        return e.args.size() > 2 ? eval(e.args[2]) : Value();
    }
    return Value();
  }

  const std::string& origin_;
  const JinjaLimits& limits_;
  jinja::SizeLimits sizes_;
  std::vector<Dict> scopes_;       // [0] globals and context, [1] the template's top level, ...
  std::vector<Value> namespaces_;  // every namespace() this render made, emptied at its end
  std::size_t iterations_ = 0;
  int depth_ = 0;
  int line_ = 1;
};

}  // namespace

JinjaTemplate JinjaTemplate::parse(std::string_view source, std::string origin,
                                   JinjaLimits limits) {
  JinjaTemplate t;
  t.body_ = std::make_shared<const Body>(jinja::parseTemplate(source, origin, limits.maxDepth));
  t.origin_ = std::move(origin);
  t.limits_ = limits;
  return t;
}

std::string JinjaTemplate::render(const nlohmann::ordered_json& context) const {
  Renderer renderer(origin_, limits_);
  return renderer.run(*body_, context);
}

}  // namespace lorascope::jinja
