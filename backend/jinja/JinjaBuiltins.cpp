// JinjaBuiltins.cpp — filters, tests, methods and operators with Python's semantics.
#include "jinja/JinjaBuiltins.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <utf8proc.h>

#include "common/Utf8.h"

namespace lorascope::jinja {

namespace {

// The characters (code points, as UTF-8) of `text`; an invalid byte is one character.
std::vector<std::string> characters(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = std::max<std::size_t>(1, common::utf8::sequenceLength(text, i));
    out.push_back(text.substr(i, length));
    i += length;
  }
  return out;
}

std::string mapCase(const std::string& text, bool upper) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = common::utf8::sequenceLength(text, i);
    if (length == 0) {
      out += text[i++];
      continue;
    }
    const auto cp = static_cast<utf8proc_int32_t>(common::utf8::decodeAt(text, i, length));
    common::utf8::append(
        out, static_cast<char32_t>(upper ? utf8proc_toupper(cp) : utf8proc_tolower(cp)));
    i += length;
  }
  return out;
}

bool isLetter(char32_t cp) {
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO;
}

// Python's str.title(): a letter after a non-letter is upper case, other letters lower case.
std::string titleCase(const std::string& text) {
  std::string out;
  bool previousLetter = false;
  for (const std::string& ch : characters(text)) {
    const std::size_t length = common::utf8::sequenceLength(ch, 0);
    const bool letter = length > 0 && isLetter(common::utf8::decodeAt(ch, 0, length));
    out += letter ? mapCase(ch, !previousLetter) : ch;
    previousLetter = letter;
  }
  return out;
}

std::string capitalize(const std::string& text) {
  const auto chars = characters(text);
  if (chars.empty())
    return text;
  return mapCase(chars[0], true) + mapCase(text.substr(chars[0].size()), false);
}

[[noreturn]] void typeError(const std::string& what) {
  throw EvalError(what);
}

const std::string& requireString(const Value& v, const std::string& what) {
  if (!v.isString())
    typeError(what + " needs a string, not " + v.typeName());
  return v.asString();
}

std::int64_t requireInt(const Value& v, const std::string& what) {
  if (v.kind() == Value::Kind::Bool)
    return v.asBool() ? 1 : 0;
  if (v.kind() != Value::Kind::Int)
    typeError(what + " needs an integer, not " + v.typeName());
  return v.asInt();
}

void checkString(std::size_t bytes, const SizeLimits& limits) {
  if (bytes > limits.maxStringBytes)
    throw EvalError("string of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                    std::to_string(limits.maxStringBytes));
}

void checkList(std::size_t items, const SizeLimits& limits) {
  if (items > limits.maxListItems)
    throw EvalError("list of " + std::to_string(items) + " items exceeds the limit of " +
                    std::to_string(limits.maxListItems));
}

std::string replaceAll(const std::string& text, const std::string& from, const std::string& to,
                       std::int64_t count, const SizeLimits& limits) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` around every character.
    const auto chars = characters(text);
    std::int64_t done = 0;
    for (const std::string& ch : chars) {
      if (count < 0 || done++ < count)
        out += to;
      out += ch;
      checkString(out.size(), limits);
    }
    if (count < 0 || done < count)
      out += to;
    return out;
  }
  std::size_t pos = 0;
  std::int64_t done = 0;
  while (count < 0 || done < count) {
    const std::size_t hit = text.find(from, pos);
    if (hit == std::string::npos)
      break;
    out.append(text, pos, hit - pos);
    out += to;
    checkString(out.size(), limits);
    pos = hit + from.size();
    ++done;
  }
  out.append(text, pos, std::string::npos);
  checkString(out.size(), limits);
  return out;
}

// Python's str.split(sep=None, maxsplit=-1).
List splitText(const std::string& text, const Value& sep, std::int64_t maxSplit) {
  List out;
  if (sep.isUndefined() || sep.isNone()) {
    std::size_t i = 0;
    while (true) {
      while (i < text.size() &&
             common::utf8::leadingWhiteSpaceBytes(std::string_view(text).substr(i)) > 0)
        i += common::utf8::leadingWhiteSpaceBytes(std::string_view(text).substr(i));
      if (i >= text.size())
        break;
      if (maxSplit >= 0 && static_cast<std::int64_t>(out.size()) == maxSplit) {
        const std::string_view rest = std::string_view(text).substr(i);
        out.emplace_back(std::string(rest.substr(0, common::utf8::trailingWhiteSpaceStart(rest))));
        break;
      }
      std::size_t j = i;
      while (j < text.size()) {
        const std::size_t ws =
            common::utf8::leadingWhiteSpaceBytes(std::string_view(text).substr(j));
        if (ws > 0)
          break;
        j += std::max<std::size_t>(1, common::utf8::sequenceLength(text, j));
      }
      out.emplace_back(text.substr(i, j - i));
      i = j;
    }
    return out;
  }
  const std::string separator = requireString(sep, "split");
  if (separator.empty())
    typeError("split: empty separator");
  std::size_t pos = 0;
  while (maxSplit < 0 || static_cast<std::int64_t>(out.size()) < maxSplit) {
    const std::size_t hit = text.find(separator, pos);
    if (hit == std::string::npos)
      break;
    out.emplace_back(text.substr(pos, hit - pos));
    pos = hit + separator.size();
  }
  out.emplace_back(text.substr(pos));
  return out;
}

bool startsOrEnds(const std::string& text, const Value& affix, bool start) {
  auto one = [&](const Value& v) {
    const std::string a = requireString(v, start ? "startswith" : "endswith");
    if (a.size() > text.size())
      return false;
    return start ? text.compare(0, a.size(), a) == 0
                 : text.compare(text.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.kind() == Value::Kind::Sequence) {
    return std::any_of(affix.asList().begin(), affix.asList().end(), one);
  }
  return one(affix);
}

Value boundMethod(std::string name, std::function<Value(CallArgs&)> call) {
  auto callable = std::make_shared<Callable>();
  callable->name = std::move(name);
  callable->call = std::move(call);
  return Value(std::move(callable));
}

Value argOr(const CallArgs& args, std::size_t index, const char* name, Value fallback) {
  const auto v = args.get(index, name);
  return v && !v->isUndefined() ? *v : fallback;
}

std::optional<Value> stringMethod(const std::string& text, const std::string& name,
                                  const SizeLimits& limits) {
  using F = std::function<Value(CallArgs&)>;
  F f;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    f = [text, name](CallArgs& a) {
      return Value(
          stripText(text, argOr(a, 0, "chars", Value()), name != "rstrip", name != "lstrip"));
    };
  } else if (name == "split") {
    f = [text](CallArgs& a) {
      return Value(splitText(text, argOr(a, 0, "sep", Value()),
                             requireInt(argOr(a, 1, "maxsplit", Value(-1)), "split")));
    };
  } else if (name == "startswith" || name == "endswith") {
    f = [text, name](CallArgs& a) {
      return Value(startsOrEnds(text, argOr(a, 0, "prefix", Value("")), name == "startswith"));
    };
  } else if (name == "lower" || name == "upper") {
    f = [text, name](CallArgs&) { return Value(mapCase(text, name == "upper")); };
  } else if (name == "title") {
    f = [text](CallArgs&) { return Value(titleCase(text)); };
  } else if (name == "capitalize") {
    f = [text](CallArgs&) { return Value(capitalize(text)); };
  } else if (name == "replace") {
    f = [text, limits](CallArgs& a) {
      return Value(replaceAll(text, requireString(argOr(a, 0, "old", Value("")), "replace"),
                              requireString(argOr(a, 1, "new", Value("")), "replace"),
                              requireInt(argOr(a, 2, "count", Value(-1)), "replace"), limits));
    };
  } else if (name == "find" || name == "count") {
    f = [text, name](CallArgs& a) {
      const std::string sub = requireString(argOr(a, 0, "sub", Value("")), name);
      if (name == "find") {
        const std::size_t hit = text.find(sub);
        return Value(hit == std::string::npos
                         ? std::int64_t{-1}
                         : static_cast<std::int64_t>(characters(text.substr(0, hit)).size()));
      }
      if (sub.empty())
        return Value(static_cast<std::int64_t>(characters(text).size() + 1));
      std::int64_t n = 0;
      for (std::size_t p = text.find(sub); p != std::string::npos;
           p = text.find(sub, p + sub.size()))
        ++n;
      return Value(n);
    };
  } else if (name == "join") {
    f = [text, limits](CallArgs& a) {
      std::string out;
      const List items = iterate(argOr(a, 0, "iterable", Value(List{})));
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0)
          out += text;
        out += requireString(items[i], "join");
        checkString(out.size(), limits);
      }
      return Value(out);
    };
  } else if (name == "isdigit" || name == "isspace" || name == "isalpha") {
    f = [text, name](CallArgs&) {
      if (text.empty())
        return Value(false);
      for (const std::string& ch : characters(text)) {
        const std::size_t length = common::utf8::sequenceLength(ch, 0);
        const char32_t cp = length ? common::utf8::decodeAt(ch, 0, length) : 0xFFFD;
        const bool ok = name == "isdigit"   ? (cp >= '0' && cp <= '9')
                        : name == "isspace" ? common::utf8::isWhiteSpace(cp)
                                            : isLetter(cp);
        if (!ok)
          return Value(false);
      }
      return Value(true);
    };
  } else {
    return std::nullopt;
  }
  return boundMethod(name, std::move(f));
}

List itemPairs(const Dict& dict) {
  List out;
  for (const auto& [key, value] : dict.entries)
    out.push_back(Value::tuple(List{Value(key), value}));
  return out;
}

std::optional<Value> dictMethod(const Value& object, const std::string& name) {
  const Dict& dict = object.asDict();
  if (dict.isNamespace)
    return std::nullopt;
  if (name == "items") {
    return boundMethod(name, [object](CallArgs&) { return Value(itemPairs(object.asDict())); });
  }
  if (name == "keys" || name == "values") {
    return boundMethod(name, [object, name](CallArgs&) {
      List out;
      for (const auto& [key, value] : object.asDict().entries)
        out.push_back(name == "keys" ? Value(key) : value);
      return Value(out);
    });
  }
  if (name == "get") {
    return boundMethod(name, [object](CallArgs& a) {
      const Value key = argOr(a, 0, "key", Value());
      const Value* found = key.isString() ? object.asDict().find(key.asString()) : nullptr;
      return found ? *found : argOr(a, 1, "default", Value::none());
    });
  }
  return std::nullopt;
}

std::optional<Value> methodOf(const Value& object, const std::string& name,
                              const SizeLimits& limits) {
  if (object.isString())
    return stringMethod(object.asString(), name, limits);
  if (object.kind() == Value::Kind::Mapping)
    return dictMethod(object, name);
  return std::nullopt;
}

Value lookupItem(const Value& object, const Value& key) {
  if (object.kind() == Value::Kind::Mapping && key.isString()) {
    const Value* found = object.asDict().find(key.asString());
    return found ? *found : Value();
  }
  if (key.kind() == Value::Kind::Int || key.kind() == Value::Kind::Bool) {
    const std::int64_t raw = requireInt(key, "index");
    if (object.kind() == Value::Kind::Sequence) {
      const auto n = static_cast<std::int64_t>(object.asList().size());
      const std::int64_t i = raw < 0 ? raw + n : raw;
      return i >= 0 && i < n ? object.asList()[static_cast<std::size_t>(i)] : Value();
    }
    if (object.isString()) {
      const auto chars = characters(object.asString());
      const auto n = static_cast<std::int64_t>(chars.size());
      const std::int64_t i = raw < 0 ? raw + n : raw;
      return i >= 0 && i < n ? Value(chars[static_cast<std::size_t>(i)]) : Value();
    }
  }
  return Value();
}

int compareValues(const Value& a, const Value& b, bool caseSensitive = true);

bool isNumeric(const Value& v) {
  return v.isNumber() || v.kind() == Value::Kind::Bool;
}

int compareValues(const Value& a, const Value& b, bool caseSensitive) {
  if (isNumeric(a) && isNumeric(b)) {
    const double x = a.asNumber();
    const double y = b.asNumber();
    if (a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int)
      return a.asInt() < b.asInt() ? -1 : a.asInt() > b.asInt() ? 1 : 0;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.isString() && b.isString()) {
    const std::string x = caseSensitive ? a.asString() : mapCase(a.asString(), false);
    const std::string y = caseSensitive ? b.asString() : mapCase(b.asString(), false);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind() == Value::Kind::Sequence && b.kind() == Value::Kind::Sequence) {
    const List& x = a.asList();
    const List& y = b.asList();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (const int c = compareValues(x[i], y[i], caseSensitive))
        return c;
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  typeError("'<' not supported between instances of '" + a.typeName() + "' and '" + b.typeName() +
            "'");
}

// An attribute path "a.b" or an integer index, as map/selectattr/sort/sum take it.
Value attributePath(const Value& item, const Value& attribute, const SizeLimits& limits) {
  if (attribute.kind() == Value::Kind::Int)
    return lookupItem(item, attribute);
  Value current = item;
  const std::string path = requireString(attribute, "attribute");
  std::size_t pos = 0;
  while (true) {
    const std::size_t dot = path.find('.', pos);
    const std::string part =
        path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    current = current.isUndefined() ? Value() : getItem(current, Value(part), limits);
    if (dot == std::string::npos)
      return current;
    pos = dot + 1;
  }
}

CallArgs restArgs(const CallArgs& args, std::size_t from) {
  CallArgs out;
  for (std::size_t i = from; i < args.positional.size(); ++i)
    out.positional.push_back(args.positional[i]);
  return out;
}

// select/reject/selectattr/rejectattr: keep the items whose test (truthiness by default) is
// `keep`.
Value selectItems(const Value& subject, const CallArgs& args, bool byAttribute, bool keep,
                  const SizeLimits& limits) {
  List out;
  const std::size_t testIndex = byAttribute ? 1 : 0;
  for (const Value& item : iterate(subject)) {
    const Value probe =
        byAttribute
            ? attributePath(item, args.positional.empty() ? Value("") : args.positional[0], limits)
            : item;
    bool pass = probe.truthy();
    if (args.positional.size() > testIndex) {
      pass = applyTest(requireString(args.positional[testIndex], "select"), probe,
                       restArgs(args, testIndex + 1));
    }
    if (pass == keep)
      out.push_back(item);
  }
  return Value(out);
}

std::string htmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Value tojsonFilter(const Value& subject, const CallArgs& args) {
  JsonDumpOptions options;
  if (const auto indent = args.get(0, "indent"); indent && !indent->isNone()) {
    const std::int64_t width = requireInt(*indent, "tojson indent");
    options.indent = static_cast<int>(std::clamp<std::int64_t>(width, 0, 64));
  }
  if (const auto ascii = args.get(99, "ensure_ascii"))
    options.ensureAscii = ascii->truthy();
  if (const auto sortKeys = args.get(99, "sort_keys"))
    options.sortKeys = sortKeys->truthy();
  if (const auto seps = args.get(99, "separators");
      seps && seps->kind() == Value::Kind::Sequence && seps->asList().size() == 2) {
    options.separators = {requireString(seps->asList()[0], "separators"),
                          requireString(seps->asList()[1], "separators")};
  }
  const auto text = toJsonText(subject, options);
  if (!text)
    typeError("Object of type " + subject.typeName() + " is not JSON serializable");
  return Value(*text);
}

Value indentFilter(const Value& subject, const CallArgs& args, const SizeLimits& limits) {
  const std::string text = toPythonStr(subject);
  const Value width = argOr(args, 0, "width", Value(4));
  const std::string pad = width.isString()
                              ? width.asString()
                              : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(
                                                requireInt(width, "indent"), 0, 1024)),
                                            ' ');
  const bool first = argOr(args, 1, "first", Value(false)).truthy();
  const bool blank = argOr(args, 2, "blank", Value(false)).truthy();
  std::string out;
  std::size_t pos = 0;
  bool isFirst = true;
  while (true) {
    const std::size_t nl = text.find('\n', pos);
    const std::string line =
        text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if ((!isFirst || first) && (blank || !stripText(line, Value(), true, true).empty()))
      out += pad;
    out += line;
    checkString(out.size(), limits);
    if (nl == std::string::npos)
      break;
    out += '\n';
    pos = nl + 1;
    isFirst = false;
  }
  return Value(out);
}

Value sortFilter(const Value& subject, const CallArgs& args, const SizeLimits& limits) {
  List items = iterate(subject);
  const bool reverse = argOr(args, 0, "reverse", Value(false)).truthy();
  const bool caseSensitive = argOr(args, 1, "case_sensitive", Value(false)).truthy();
  const Value attribute = argOr(args, 2, "attribute", Value());
  auto key = [&](const Value& v) {
    return attribute.isUndefined() || attribute.isNone() ? v : attributePath(v, attribute, limits);
  };
  std::size_t comparisons = 0;
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    if (++comparisons % 4096 == 0)
      checkRenderTime();  // a sort of a million items takes seconds
    const int c = compareValues(key(a), key(b), caseSensitive);
    return reverse ? c > 0 : c < 0;
  });
  return Value(items);
}

Value mapFilter(const Value& subject, const CallArgs& args, const SizeLimits& limits) {
  List out;
  const auto attribute = args.get(99, "attribute");
  for (const Value& item : iterate(subject)) {
    if (attribute) {
      Value v = attributePath(item, *attribute, limits);
      if (v.isUndefined())
        v = argOr(args, 99, "default", Value());
      out.push_back(v);
    } else {
      if (args.positional.empty())
        typeError("map needs a filter name or attribute=");
      out.push_back(
          applyFilter(requireString(args.positional[0], "map"), item, restArgs(args, 1), limits));
    }
  }
  return Value(out);
}

Value minMax(const Value& subject, const CallArgs& args, bool wantMax, const SizeLimits& limits) {
  const List items = iterate(subject);
  if (items.empty())
    return Value();
  const bool caseSensitive = argOr(args, 0, "case_sensitive", Value(false)).truthy();
  const Value attribute = argOr(args, 1, "attribute", Value());
  auto key = [&](const Value& v) {
    return attribute.isUndefined() || attribute.isNone() ? v : attributePath(v, attribute, limits);
  };
  Value best = items[0];
  for (const Value& item : items) {
    const int c = compareValues(key(item), key(best), caseSensitive);
    if (wantMax ? c > 0 : c < 0)
      best = item;
  }
  return best;
}

Value toInt(const Value& subject, const CallArgs& args) {
  const Value fallback = argOr(args, 0, "default", Value(0));
  switch (subject.kind()) {
    case Value::Kind::Int:
      return subject;
    case Value::Kind::Bool:
      return Value(std::int64_t{subject.asBool()});
    case Value::Kind::Float: {
      const double d = subject.asNumber();
      if (!std::isfinite(d) || std::fabs(d) > 9.2e18)
        return fallback;
      return Value(static_cast<std::int64_t>(d));
    }
    case Value::Kind::String: {
      const std::string text(common::utf8::trimWhiteSpace(subject.asString()));
      try {
        std::size_t used = 0;
        const long long v = std::stoll(text, &used, 10);
        if (used == text.size())
          return Value(static_cast<std::int64_t>(v));
        const double d = std::stod(text, &used);
        if (used == text.size() && std::isfinite(d) && std::fabs(d) < 9.2e18)
          return Value(static_cast<std::int64_t>(d));
      } catch (const std::exception&) {
      }
      return fallback;
    }
    default:
      return fallback;
  }
}

Value toFloat(const Value& subject, const CallArgs& args) {
  const Value fallback = argOr(args, 0, "default", Value(0.0));
  if (isNumeric(subject))
    return Value(subject.asNumber());
  if (subject.isString()) {
    const std::string text(common::utf8::trimWhiteSpace(subject.asString()));
    try {
      std::size_t used = 0;
      const double d = std::stod(text, &used);
      if (used == text.size())
        return Value(d);
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

Value roundFilter(const Value& subject, const CallArgs& args) {
  const double value = subject.asNumber();
  const std::int64_t precision =
      std::clamp<std::int64_t>(requireInt(argOr(args, 0, "precision", Value(0)), "round"), 0, 15);
  const std::string method = requireString(argOr(args, 1, "method", Value("common")), "round");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = value * scale;
  const double rounded = method == "ceil"    ? std::ceil(scaled)
                         : method == "floor" ? std::floor(scaled)
                                             : std::round(scaled);
  return Value(rounded / scale);
}

}  // namespace

std::string stripText(const std::string& text, const Value& chars, bool left, bool right) {
  if (chars.isUndefined() || chars.isNone()) {
    std::string_view view(text);
    if (left)
      view.remove_prefix(common::utf8::leadingWhiteSpaceBytes(view));
    if (right)
      view = view.substr(0, common::utf8::trailingWhiteSpaceStart(view));
    return std::string(view);
  }
  const auto set = characters(requireString(chars, "strip"));
  auto inSet = [&](const std::string& ch) {
    return std::find(set.begin(), set.end(), ch) != set.end();
  };
  const auto all = characters(text);
  std::size_t begin = 0;
  std::size_t end = all.size();
  while (left && begin < end && inSet(all[begin]))
    ++begin;
  while (right && end > begin && inSet(all[end - 1]))
    --end;
  std::string out;
  for (std::size_t i = begin; i < end; ++i)
    out += all[i];
  return out;
}

List iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::Sequence:
      return value.asList();
    case Value::Kind::Mapping: {
      List keys;
      for (const auto& [key, item] : value.asDict().entries)
        keys.emplace_back(key);
      return keys;
    }
    case Value::Kind::String: {
      List out;
      for (std::string& ch : characters(value.asString()))
        out.emplace_back(std::move(ch));
      return out;
    }
    default:
      typeError("'" + value.typeName() + "' object is not iterable");
  }
}

Value getAttribute(const Value& object, const std::string& name, const SizeLimits& limits) {
  if (object.isUndefined())
    typeError("cannot read attribute '" + name + "' of an undefined value");
  if (auto method = methodOf(object, name, limits))
    return *method;
  return lookupItem(object, Value(name));
}

Value getItem(const Value& object, const Value& key, const SizeLimits& limits) {
  if (object.isUndefined())
    typeError("cannot index an undefined value with " + toPythonRepr(key));
  Value found = lookupItem(object, key);
  if (found.isUndefined() && key.isString() &&
      !(object.kind() == Value::Kind::Mapping && object.asDict().find(key.asString()))) {
    if (auto method = methodOf(object, key.asString(), limits))
      return *method;
  }
  return found;
}

Value getSlice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  const bool isString = object.isString();
  if (!isString && object.kind() != Value::Kind::Sequence)
    typeError("'" + object.typeName() + "' object is not subscriptable");
  std::vector<std::string> chars;
  if (isString)
    chars = characters(object.asString());
  const auto n = static_cast<std::int64_t>(isString ? chars.size() : object.asList().size());
  const std::int64_t stepBy = step.isUndefined() || step.isNone() ? 1 : requireInt(step, "slice");
  if (stepBy == 0)
    typeError("slice step cannot be zero");
  // Python's slice.indices().
  auto bound = [&](const Value& v, std::int64_t fallback) {
    if (v.isUndefined() || v.isNone())
      return fallback;
    std::int64_t i = requireInt(v, "slice");
    if (i < 0)
      i += n;
    if (stepBy > 0)
      return std::clamp<std::int64_t>(i, 0, n);
    return std::clamp<std::int64_t>(i, -1, n - 1);
  };
  const std::int64_t from = bound(start, stepBy > 0 ? 0 : n - 1);
  const std::int64_t to = bound(stop, stepBy > 0 ? n : -1);
  List items;
  std::string text;
  for (std::int64_t i = from; stepBy > 0 ? i < to : i > to; i += stepBy) {
    if (isString)
      text += chars[static_cast<std::size_t>(i)];
    else
      items.push_back(object.asList()[static_cast<std::size_t>(i)]);
  }
  return isString ? Value(text) : Value(items);
}

Value negate(const Value& a) {
  if (a.kind() == Value::Kind::Int) {
    if (a.asInt() == std::numeric_limits<std::int64_t>::min())
      typeError("integer overflow");
    return Value(-a.asInt());
  }
  if (a.kind() == Value::Kind::Bool)
    return Value(-std::int64_t{a.asBool()});
  if (a.kind() == Value::Kind::Float)
    return Value(-a.asNumber());
  typeError("bad operand type for unary -: '" + a.typeName() + "'");
}

namespace {

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  const bool ints = a.kind() != Value::Kind::Float && b.kind() != Value::Kind::Float;
  if (ints) {
    const std::int64_t x = requireInt(a, op);
    const std::int64_t y = requireInt(b, op);
    std::int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(x, y, &r))
      return Value(r);
    if (op == "-" && !__builtin_sub_overflow(x, y, &r))
      return Value(r);
    if (op == "*" && !__builtin_mul_overflow(x, y, &r))
      return Value(r);
    if (op == "//" || op == "%") {
      if (y == 0)
        typeError("integer division or modulo by zero");
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1)
        typeError("integer overflow");
      std::int64_t q = x / y;
      std::int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
      return op == "//" ? Value(q) : Value(m);
    }
    if (op == "**" && y >= 0) {
      std::int64_t result = 1;
      for (std::int64_t i = 0; i < y; ++i) {
        if (__builtin_mul_overflow(result, x, &result))
          typeError("integer overflow");
        if (result == 0 || result == 1)
          break;
      }
      return Value(result);
    }
    if (op != "/" && op != "**")
      typeError("integer overflow");
  }
  const double x = a.asNumber();
  const double y = b.asNumber();
  if (op == "+")
    return Value(x + y);
  if (op == "-")
    return Value(x - y);
  if (op == "*")
    return Value(x * y);
  if (op == "**")
    return Value(std::pow(x, y));
  if (y == 0.0)
    typeError("float division by zero");
  if (op == "/")
    return Value(x / y);
  const double q = std::floor(x / y);
  return op == "//" ? Value(q) : Value(x - q * y);
}

Value repeat(const Value& sequence, std::int64_t times, const SizeLimits& limits) {
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(times, 0));
  if (sequence.isString()) {
    const std::string& s = sequence.asString();
    if (!s.empty() && n > limits.maxStringBytes / s.size())
      checkString(limits.maxStringBytes + 1, limits);
    std::string out;
    for (std::size_t i = 0; i < n; ++i)
      out += s;
    return Value(out);
  }
  const List& items = sequence.asList();
  if (!items.empty() && n > limits.maxListItems / items.size())
    checkList(limits.maxListItems + 1, limits);
  List out;
  for (std::size_t i = 0; i < n; ++i)
    out.insert(out.end(), items.begin(), items.end());
  return Value(out);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      return container.asString().find(requireString(item, "'in <string>'")) != std::string::npos;
    case Value::Kind::Sequence:
      return std::any_of(container.asList().begin(), container.asList().end(),
                         [&](const Value& v) { return equals(v, item); });
    case Value::Kind::Mapping:
      return item.isString() && container.asDict().find(item.asString()) != nullptr;
    case Value::Kind::Undefined:
      return false;
    default:
      typeError("argument of type '" + container.typeName() + "' is not iterable");
  }
}

}  // namespace

Value binaryOp(const std::string& op, const Value& a, const Value& b, const SizeLimits& limits) {
  if (op == "==")
    return Value(equals(a, b));
  if (op == "!=")
    return Value(!equals(a, b));
  if (op == "in")
    return Value(contains(b, a));
  if (op == "not in")
    return Value(!contains(b, a));
  if (op == "~") {
    std::string out = toPythonStr(a);
    out += toPythonStr(b);
    checkString(out.size(), limits);
    return Value(out);
  }
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    const int c = compareValues(a, b);
    return Value(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
  }
  if (a.isUndefined() || b.isUndefined())
    typeError("an undefined value cannot be used with '" + op + "'");
  if (isNumeric(a) && isNumeric(b))
    return arithmetic(op, a, b);
  if (op == "+" && a.isString() && b.isString()) {
    checkString(a.asString().size() + b.asString().size(), limits);
    return Value(a.asString() + b.asString());
  }
  if (op == "+" && a.kind() == Value::Kind::Sequence && b.kind() == Value::Kind::Sequence) {
    checkList(a.asList().size() + b.asList().size(), limits);
    List out = a.asList();
    out.insert(out.end(), b.asList().begin(), b.asList().end());
    return Value(out);
  }
  const bool seqA = a.isString() || a.kind() == Value::Kind::Sequence;
  const bool seqB = b.isString() || b.kind() == Value::Kind::Sequence;
  if (op == "*" && seqA && b.kind() == Value::Kind::Int)
    return repeat(a, b.asInt(), limits);
  if (op == "*" && seqB && a.kind() == Value::Kind::Int)
    return repeat(b, a.asInt(), limits);
  typeError("unsupported operand type(s) for " + op + ": '" + a.typeName() + "' and '" +
            b.typeName() + "'");
}

bool applyTest(const std::string& name, const Value& v, const CallArgs& args) {
  const Value arg = args.positional.empty() ? Value() : args.positional[0];
  const Value::Kind k = v.kind();
  if (name == "defined")
    return !v.isUndefined();
  if (name == "undefined")
    return v.isUndefined();
  if (name == "none")
    return v.isNone();
  if (name == "boolean")
    return k == Value::Kind::Bool;
  if (name == "true" || name == "false")
    return k == Value::Kind::Bool && v.asBool() == (name == "true");
  if (name == "integer")
    return k == Value::Kind::Int;
  if (name == "float")
    return k == Value::Kind::Float;
  if (name == "number")
    return isNumeric(v);
  if (name == "string")
    return v.isString();
  if (name == "mapping")
    return k == Value::Kind::Mapping;
  if (name == "iterable")
    return k == Value::Kind::Sequence || k == Value::Kind::Mapping || v.isString() ||
           v.isUndefined();
  if (name == "sequence")
    return k == Value::Kind::Sequence || k == Value::Kind::Mapping || v.isString();
  if (name == "callable")
    return k == Value::Kind::Function;
  if (name == "odd" || name == "even")
    return (requireInt(v, name) % 2 != 0) == (name == "odd");
  if (name == "divisibleby") {
    const std::int64_t d = requireInt(arg, name);
    return d != 0 && requireInt(v, name) % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==")
    return equals(v, arg);
  if (name == "ne" || name == "!=")
    return !equals(v, arg);
  if (name == "lt" || name == "lessthan" || name == "<")
    return compareValues(v, arg) < 0;
  if (name == "le" || name == "<=")
    return compareValues(v, arg) <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">")
    return compareValues(v, arg) > 0;
  if (name == "ge" || name == ">=")
    return compareValues(v, arg) >= 0;
  if (name == "in")
    return contains(arg, v);
  if (name == "sameas")
    return k == arg.kind() && (k == Value::Kind::Sequence || k == Value::Kind::Mapping)
               ? (k == Value::Kind::Sequence ? &v.asList() == &arg.asList()
                                             : &v.asDict() == &arg.asDict())
               : equals(v, arg) && k == arg.kind();
  if (name == "lower" || name == "upper")
    return v.isString() && mapCase(v.asString(), name == "upper") == v.asString();
  throw EvalError("no test named '" + name + "'");
}

Value applyFilter(const std::string& name, const Value& v, const CallArgs& args,
                  const SizeLimits& limits) {
  if (name == "trim" || name == "strip")
    return Value(stripText(toPythonStr(v), argOr(args, 0, "chars", Value()), true, true));
  if (name == "tojson")
    return tojsonFilter(v, args);
  if (name == "length" || name == "count") {
    if (v.isString())
      return Value(static_cast<std::int64_t>(characters(v.asString()).size()));
    if (v.kind() == Value::Kind::Sequence)
      return Value(static_cast<std::int64_t>(v.asList().size()));
    if (v.kind() == Value::Kind::Mapping)
      return Value(static_cast<std::int64_t>(v.asDict().entries.size()));
    if (v.isUndefined())
      return Value(0);
    typeError("object of type '" + v.typeName() + "' has no len()");
  }
  if (name == "lower" || name == "upper")
    return Value(mapCase(toPythonStr(v), name == "upper"));
  if (name == "title")
    return Value(titleCase(toPythonStr(v)));
  if (name == "capitalize")
    return Value(capitalize(toPythonStr(v)));
  if (name == "default" || name == "d") {
    const bool boolean = argOr(args, 1, "boolean", Value(false)).truthy();
    if (v.isUndefined() || (boolean && !v.truthy()))
      return argOr(args, 0, "default_value", Value(""));
    return v;
  }
  if (name == "join") {
    const std::string separator = toPythonStr(argOr(args, 0, "d", Value("")));
    const Value attribute = argOr(args, 1, "attribute", Value());
    std::string out;
    const List items = iterate(v);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0)
        out += separator;
      out += toPythonStr(attribute.isUndefined() ? items[i]
                                                 : attributePath(items[i], attribute, limits));
      checkString(out.size(), limits);
    }
    return Value(out);
  }
  if (name == "first" || name == "last") {
    const List items = iterate(v);
    if (items.empty())
      return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list")
    return Value(iterate(v));
  if (name == "string")
    return Value(toPythonStr(v));
  if (name == "safe")
    return v;
  if (name == "escape" || name == "e")
    return Value(htmlEscape(toPythonStr(v)));
  if (name == "int")
    return toInt(v, args);
  if (name == "float")
    return toFloat(v, args);
  if (name == "abs") {
    if (v.kind() == Value::Kind::Float)
      return Value(std::fabs(v.asNumber()));
    const std::int64_t i = requireInt(v, "abs");
    return i < 0 ? negate(Value(i)) : Value(i);
  }
  if (name == "round")
    return roundFilter(v, args);
  if (name == "replace") {
    const Value count = argOr(args, 2, "count", Value::none());
    return Value(replaceAll(toPythonStr(v), toPythonStr(argOr(args, 0, "old", Value(""))),
                            toPythonStr(argOr(args, 1, "new", Value(""))),
                            count.isNone() ? -1 : requireInt(count, "replace"), limits));
  }
  if (name == "items") {
    if (v.isUndefined())
      return Value(List{});
    if (v.kind() != Value::Kind::Mapping)
      typeError("items needs a mapping, not " + v.typeName());
    return Value(itemPairs(v.asDict()));
  }
  if (name == "dictsort") {
    if (v.kind() != Value::Kind::Mapping)
      typeError("dictsort needs a mapping, not " + v.typeName());
    const bool byValue = toPythonStr(argOr(args, 1, "by", Value("key"))) == "value";
    CallArgs sortArgs;
    sortArgs.keyword = {{"reverse", argOr(args, 2, "reverse", Value(false))},
                        {"case_sensitive", argOr(args, 0, "case_sensitive", Value(false))},
                        {"attribute", Value(byValue ? 1 : 0)}};
    return sortFilter(Value(itemPairs(v.asDict())), sortArgs, limits);
  }
  if (name == "reverse") {
    if (v.isString()) {
      auto chars = characters(v.asString());
      std::reverse(chars.begin(), chars.end());
      std::string out;
      for (const std::string& ch : chars)
        out += ch;
      return Value(out);
    }
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value(items);
  }
  if (name == "sort")
    return sortFilter(v, args, limits);
  if (name == "map")
    return mapFilter(v, args, limits);
  if (name == "select" || name == "reject")
    return selectItems(v, args, false, name == "select", limits);
  if (name == "selectattr" || name == "rejectattr")
    return selectItems(v, args, true, name == "selectattr", limits);
  if (name == "unique") {
    List out;
    for (const Value& item : iterate(v)) {
      const bool seen = std::any_of(out.begin(), out.end(), [&](const Value& o) {
        return o.isString() && item.isString() ? compareValues(o, item, false) == 0
                                               : equals(o, item);
      });
      if (!seen)
        out.push_back(item);
    }
    return Value(out);
  }
  if (name == "sum") {
    const Value attribute = argOr(args, 0, "attribute", Value());
    Value total = argOr(args, 1, "start", Value(0));
    for (const Value& item : iterate(v))
      total =
          binaryOp("+", total,
                   attribute.isUndefined() ? item : attributePath(item, attribute, limits), limits);
    return total;
  }
  if (name == "min" || name == "max")
    return minMax(v, args, name == "max", limits);
  if (name == "indent")
    return indentFilter(v, args, limits);
  if (name == "wordcount")
    return Value(static_cast<std::int64_t>(splitText(toPythonStr(v), Value(), -1).size()));
  throw EvalError("no filter named '" + name + "'");
}

}  // namespace lorascope::jinja
