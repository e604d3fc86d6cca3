// JinjaValue.h — the values a Jinja chat template computes with, and how Python shows them.
// Jinja runs on Python objects; a template's output depends on Python's rules, so these follow
// them: str() and repr() of None/True/lists/dicts, truthiness, int/float arithmetic, json.dumps
// (transformers' tojson filter) with insertion-ordered keys. Lists and dicts are shared by
// reference (as in Python), which is what makes namespace() objects mutable from inner scopes;
// strings are shared too (immutable, as in Python), so a list of a million references to one
// large string holds it once.
//
// A render's values are paid for from its RenderBudget: every new string, list and dict charges
// its bytes (copies of a value share it and cost nothing), so a template that builds without end
// stops at the budget with an error instead of exhausting memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::jinja {

// An error of a render (Jinja/Python's wording); the renderer adds the template name and line.
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one render may spend, counted across all the values it builds and all its loops: bytes
// of new strings, lists and dicts (cumulative: a value built and dropped in every iteration
// counts every time), and wall time. While a Scope lives, the values built on its thread are
// charged to it; charge() and checkTime() throw EvalError naming the limit.
class RenderBudget {
 public:
  RenderBudget(std::size_t maxBytes, std::chrono::milliseconds maxTime);
  void charge(std::size_t bytes);
  void checkTime() const;
  std::size_t spentBytes() const { return spentBytes_; }

  class Scope {
   public:
    explicit Scope(RenderBudget& budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RenderBudget* previous_;
  };

 private:
  std::size_t maxBytes_;
  std::size_t spentBytes_ = 0;
  std::chrono::milliseconds maxTime_;
  std::chrono::steady_clock::time_point deadline_;
};

// The budget of the render running on this thread, charged `bytes` / checked for time; nothing
// outside a render.
void chargeRender(std::size_t bytes);
void checkRenderTime();

class Value;
struct CallArgs;

using List = std::vector<Value>;

// A Python dict with string keys, in insertion order (json.dumps and iteration keep it).
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  bool isNamespace = false;  // made by namespace(): the one object `set a.b = ...` may change

  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

// A function a template can call: a global (range, namespace, raise_exception), a bound
// method ("a b".split) or a macro.
struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> call;
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, Sequence, Mapping, Function };

  Value() = default;  // Undefined
  static Value none();
  static Value tuple(List items);  // a list that prints as Python's tuple: (1, 2)
  Value(bool b) : data_(b) {}      // NOLINT: implicit, like Python literals
  Value(std::int64_t i) : data_(i) {}
  Value(int i) : data_(static_cast<std::int64_t>(i)) {}
  Value(double d) : data_(d) {}
  Value(std::string s);  // these three charge the render's budget (RenderBudget)
  Value(const char* s) : Value(std::string(s)) {}
  Value(List list);
  Value(Dict dict);
  Value(std::shared_ptr<Callable> callable) : data_(std::move(callable)) {}

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool isUndefined() const { return kind() == Kind::Undefined; }
  bool isNone() const { return kind() == Kind::None; }
  bool isString() const { return kind() == Kind::String; }
  bool isNumber() const { return kind() == Kind::Int || kind() == Kind::Float; }
  bool isTuple() const { return tuple_; }

  bool asBool() const { return std::get<bool>(data_); }
  std::int64_t asInt() const { return std::get<std::int64_t>(data_); }
  double asNumber() const;  // Int or Float (bool counts as 0/1, as in Python)
  const std::string& asString() const {
    return *std::get<std::shared_ptr<const std::string>>(data_);
  }
  const List& asList() const { return *std::get<std::shared_ptr<List>>(data_); }
  const Dict& asDict() const { return *std::get<std::shared_ptr<Dict>>(data_); }
  Dict& mutableDict() const { return *std::get<std::shared_ptr<Dict>>(data_); }
  const Callable& asCallable() const { return *std::get<std::shared_ptr<Callable>>(data_); }

  // Python's truth value (Undefined is false).
  bool truthy() const;
  // Python's type name, for error messages ("str", "int", "dict", "undefined").
  std::string typeName() const;

 private:
  std::variant<std::monostate, std::nullptr_t, bool, std::int64_t, double,
               std::shared_ptr<const std::string>, std::shared_ptr<List>, std::shared_ptr<Dict>,
               std::shared_ptr<Callable>>
      data_;
  bool tuple_ = false;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, else nullopt.
  std::optional<Value> get(std::size_t index, std::string_view name) const;
};

// From parsed JSON (numbers keep int/float, objects keep key order).
Value fromJson(const nlohmann::ordered_json& json);

// Python's str(): what {{ value }} prints (Undefined prints nothing).
std::string toPythonStr(const Value& value);
// Python's repr(): how items of a printed list or dict look.
std::string toPythonRepr(const Value& value);
// Python's repr() of a float ("1.0", "0.1", "1e-05", "inf").
std::string formatPythonFloat(double value);

struct JsonDumpOptions {
  std::optional<int> indent;  // json.dumps(indent=...)
  bool ensureAscii = false;   // transformers passes ensure_ascii=False
  bool sortKeys = false;
  // separators: nullopt gives Python's default, (", ", ": "), or (",", ": ") with an indent.
  std::optional<std::pair<std::string, std::string>> separators;
};
// Python's json.dumps with these options; nullopt for a value json cannot hold (Undefined,
// a callable, a namespace).
std::optional<std::string> toJsonText(const Value& value, const JsonDumpOptions& options);

// Python ==, as Jinja compares (1 == 1.0; Undefined equals only Undefined).
bool equals(const Value& a, const Value& b);

}  // namespace lorascope::jinja
