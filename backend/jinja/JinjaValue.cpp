// JinjaValue.cpp — Python's str/repr/json.dumps/== for Jinja values.
#include "jinja/JinjaValue.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/Format.h"  // defines: formatBytes
#include "common/Utf8.h"

namespace lorascope::jinja {

namespace {
thread_local RenderBudget* tCurrentBudget = nullptr;  // the render running on this thread
}  // namespace

RenderBudget::RenderBudget(std::size_t maxBytes, std::chrono::milliseconds maxTime)
    : maxBytes_(maxBytes),
      maxTime_(maxTime),
      deadline_(std::chrono::steady_clock::now() + maxTime) {}

void RenderBudget::charge(std::size_t bytes) {
  spentBytes_ += bytes;
  if (spentBytes_ > maxBytes_) {
    throw EvalError("the template's values exceed the memory budget of one render (" +
                    common::formatBytes(maxBytes_) +
                    ", counted across all values and loop iterations)");
  }
  checkTime();
}

void RenderBudget::checkTime() const {
  if (std::chrono::steady_clock::now() > deadline_) {
    throw EvalError("the template ran past the time budget of one render (" +
                    std::to_string(maxTime_.count()) + " ms)");
  }
}

RenderBudget::Scope::Scope(RenderBudget& budget) : previous_(tCurrentBudget) {
  tCurrentBudget = &budget;
}

RenderBudget::Scope::~Scope() {
  tCurrentBudget = previous_;
}

void chargeRender(std::size_t bytes) {
  if (tCurrentBudget != nullptr)
    tCurrentBudget->charge(bytes);
}

void checkRenderTime() {
  if (tCurrentBudget != nullptr)
    tCurrentBudget->checkTime();
}

Value::Value(std::string s) {
  chargeRender(s.size());
  data_ = std::make_shared<const std::string>(std::move(s));
}

Value::Value(List list) {
  chargeRender(list.size() * sizeof(Value));
  data_ = std::make_shared<List>(std::move(list));
}

Value::Value(Dict dict) {
  std::size_t bytes = dict.entries.size() * sizeof(dict.entries.front());
  for (const auto& [key, value] : dict.entries)
    bytes += key.size();
  chargeRender(bytes);
  data_ = std::make_shared<Dict>(std::move(dict));
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key)
      return &v;
  }
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(key, std::move(value));
}

Value Value::none() {
  Value v;
  v.data_ = nullptr;
  return v;
}

Value Value::tuple(List items) {
  Value v(std::move(items));
  v.tuple_ = true;
  return v;
}

double Value::asNumber() const {
  switch (kind()) {
    case Kind::Bool:
      return asBool() ? 1.0 : 0.0;
    case Kind::Int:
      return static_cast<double>(asInt());
    case Kind::Float:
      return std::get<double>(data_);
    default:
      return 0.0;
  }
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return asBool();
    case Kind::Int:
      return asInt() != 0;
    case Kind::Float:
      return asNumber() != 0.0;
    case Kind::String:
      return !asString().empty();
    case Kind::Sequence:
      return !asList().empty();
    case Kind::Mapping:
      return !asDict().entries.empty();
    case Kind::Function:
      return true;
  }
  return false;
}

std::string Value::typeName() const {
  switch (kind()) {
    case Kind::Undefined:
      return "undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Sequence:
      return "list";
    case Kind::Mapping:
      return asDict().isNamespace ? "Namespace" : "dict";
    case Kind::Function:
      return "function";
  }
  return "object";
}

std::optional<Value> CallArgs::get(std::size_t index, std::string_view name) const {
  for (const auto& [key, value] : keyword) {
    if (key == name)
      return value;
  }
  if (index < positional.size())
    return positional[index];
  return std::nullopt;
}

Value fromJson(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(json.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = json.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX))
        return Value(static_cast<double>(u));
      return Value(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List list;
      list.reserve(json.size());
      for (const auto& item : json)
        list.push_back(fromJson(item));
      return Value(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict dict;
      dict.entries.reserve(json.size());
      for (const auto& [key, item] : json.items())
        dict.entries.emplace_back(key, fromJson(item));
      return Value(std::move(dict));
    }
    default:
      return Value();
  }
}

std::string formatPythonFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout: positional for exponents -4..15,
  // scientific (at least two exponent digits) otherwise.
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string sci(buffer, result.ptr);
  const std::size_t ePos = sci.find('e');
  std::string mantissa = sci.substr(0, ePos);
  const int exponent = std::stoi(sci.substr(ePos + 1));
  const bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative)
    mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.')
      digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) {
    return out + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  }
  const auto intDigits = static_cast<std::size_t>(exponent + 1);
  if (digits.size() <= intDigits) {
    return out + digits + std::string(intDigits - digits.size(), '0') + ".0";
  }
  return out + digits.substr(0, intDigits) + "." + digits.substr(intDigits);
}

namespace {

void appendHex(std::string& out, const char* prefix, unsigned value, int width) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%s%0*x", prefix, width, value);
  out += buffer;
}

std::string reprString(const std::string& s) {
  const bool hasSingle = s.find('\'') != std::string::npos;
  const bool hasDouble = s.find('"') != std::string::npos;
  const char quote = hasSingle && !hasDouble ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      appendHex(out, "\\x", c, 2);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string jsonString(const std::string& s, bool ensureAscii) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          appendHex(out, "\\u", c, 4);
        } else if (c >= 0x80 && ensureAscii) {
          const std::size_t length = common::utf8::sequenceLength(s, i);
          if (length == 0) {
            appendHex(out, "\\u", 0xfffd, 4);
            ++i;
            continue;
          }
          char32_t cp = common::utf8::decodeAt(s, i, length);
          if (cp >= 0x10000) {
            cp -= 0x10000;
            appendHex(out, "\\u", 0xd800 + static_cast<unsigned>(cp >> 10), 4);
            appendHex(out, "\\u", 0xdc00 + static_cast<unsigned>(cp & 0x3ff), 4);
          } else {
            appendHex(out, "\\u", static_cast<unsigned>(cp), 4);
          }
          i += length;
          continue;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out + "\"";
}

bool dumpJson(const Value& value, const JsonDumpOptions& options, int level, std::string& out) {
  const std::string itemSep =
      options.separators ? options.separators->first : (options.indent ? "," : ", ");
  const std::string keySep = options.separators ? options.separators->second : ": ";
  auto newline = [&](int depth) {
    if (options.indent) {
      out += '\n';
      out += std::string(static_cast<std::size_t>(*options.indent * depth), ' ');
    }
  };
  switch (value.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::Function:
      return false;
    case Value::Kind::None:
      out += "null";
      return true;
    case Value::Kind::Bool:
      out += value.asBool() ? "true" : "false";
      return true;
    case Value::Kind::Int:
      out += std::to_string(value.asInt());
      return true;
    case Value::Kind::Float: {
      const double d = value.asNumber();
      out += std::isnan(d)   ? "NaN"
             : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                             : formatPythonFloat(d);
      return true;
    }
    case Value::Kind::String:
      out += jsonString(value.asString(), options.ensureAscii);
      return true;
    case Value::Kind::Sequence: {
      const List& list = value.asList();
      if (list.empty()) {
        out += "[]";
        return true;
      }
      out += '[';
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (i > 0)
          out += itemSep;
        newline(level + 1);
        if (!dumpJson(list[i], options, level + 1, out))
          return false;
      }
      newline(level);
      out += ']';
      return true;
    }
    case Value::Kind::Mapping: {
      if (value.asDict().isNamespace)
        return false;  // Python: "Object of type Namespace is not JSON serializable"
      auto entries = value.asDict().entries;
      if (entries.empty()) {
        out += "{}";
        return true;
      }
      if (options.sortKeys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += '{';
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i > 0)
          out += itemSep;
        newline(level + 1);
        out += jsonString(entries[i].first, options.ensureAscii);
        out += keySep;
        if (!dumpJson(entries[i].second, options, level + 1, out))
          return false;
      }
      newline(level);
      out += '}';
      return true;
    }
  }
  return false;
}

}  // namespace

std::string toPythonRepr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::String:
      return reprString(value.asString());
    case Value::Kind::Undefined:
      return "Undefined";
    default:
      return toPythonStr(value);
  }
}

std::string toPythonStr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined:
      return "";
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return value.asBool() ? "True" : "False";
    case Value::Kind::Int:
      return std::to_string(value.asInt());
    case Value::Kind::Float:
      return formatPythonFloat(value.asNumber());
    case Value::Kind::String:
      return value.asString();
    case Value::Kind::Sequence: {
      std::string out = value.isTuple() ? "(" : "[";
      const List& list = value.asList();
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (i > 0)
          out += ", ";
        out += toPythonRepr(list[i]);
      }
      if (value.isTuple())
        return out + (list.size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Value::Kind::Mapping: {
      const Dict& dict = value.asDict();
      if (dict.isNamespace)
        return "<Namespace>";
      std::string out = "{";
      for (std::size_t i = 0; i < dict.entries.size(); ++i) {
        if (i > 0)
          out += ", ";
        out += reprString(dict.entries[i].first) + ": " + toPythonRepr(dict.entries[i].second);
      }
      return out + "}";
    }
    case Value::Kind::Function:
      return "<function " + value.asCallable().name + ">";
  }
  return "";
}

std::optional<std::string> toJsonText(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  if (!dumpJson(value, options, 0, out))
    return std::nullopt;
  return out;
}

bool equals(const Value& a, const Value& b) {
  const bool aNum = a.isNumber() || a.kind() == Value::Kind::Bool;
  const bool bNum = b.isNumber() || b.kind() == Value::Kind::Bool;
  if (aNum && bNum) {
    if (a.kind() != Value::Kind::Float && b.kind() != Value::Kind::Float) {
      const auto ai = a.kind() == Value::Kind::Bool ? std::int64_t{a.asBool()} : a.asInt();
      const auto bi = b.kind() == Value::Kind::Bool ? std::int64_t{b.asBool()} : b.asInt();
      return ai == bi;
    }
    return a.asNumber() == b.asNumber();
  }
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.asString() == b.asString();
    case Value::Kind::Sequence: {
      const List& x = a.asList();
      const List& y = b.asList();
      if (x.size() != y.size())
        return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!equals(x[i], y[i]))
          return false;
      }
      return true;
    }
    case Value::Kind::Mapping: {
      const Dict& x = a.asDict();
      const Dict& y = b.asDict();
      if (&x == &y)
        return true;
      if (x.isNamespace || y.isNamespace || x.entries.size() != y.entries.size())
        return false;
      for (const auto& [key, item] : x.entries) {
        const Value* other = y.find(key);
        if (!other || !equals(item, *other))
          return false;
      }
      return true;
    }
    case Value::Kind::Function:
      return &a.asCallable() == &b.asCallable();
    default:
      return false;
  }
}

}  // namespace lorascope::jinja
