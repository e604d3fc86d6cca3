// JinjaBuiltins.h — Jinja's filters and tests, the str/dict methods templates call, and
// Python's operators on Jinja values (internal to backend/jinja). Errors are EvalError with
// Jinja/Python's wording; the renderer adds the template name and line.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "jinja/JinjaValue.h"  // defines: Value, CallArgs, EvalError

namespace lorascope::jinja {

// Bounds on what one operation may build (strings in bytes, lists in items).
struct SizeLimits {
  std::size_t maxStringBytes;
  std::size_t maxListItems;
};

Value applyFilter(const std::string& name, const Value& subject, const CallArgs& args,
                  const SizeLimits& limits);
bool applyTest(const std::string& name, const Value& subject, const CallArgs& args);

// a.name: a method of a str or dict first, then the item (Jinja's getattr order).
Value getAttribute(const Value& object, const std::string& name, const SizeLimits& limits);
// a[key]: the item first, then (for a string key) a method (Jinja's getitem order).
Value getItem(const Value& object, const Value& key, const SizeLimits& limits);
// a[start:stop:step] for lists and strings (Undefined for an omitted part).
Value getSlice(const Value& object, const Value& start, const Value& stop, const Value& step);

// + - * / // % ** ~ == != < > <= >= in "not in"
Value binaryOp(const std::string& op, const Value& a, const Value& b, const SizeLimits& limits);
Value negate(const Value& a);

// The items a for loop visits: a list's items, a dict's keys, a string's characters; none for
// Undefined. EvalError for what Python cannot iterate.
List iterate(const Value& value);

// Python's str.strip/lstrip/rstrip (Unicode White_Space, or the characters in `chars`).
std::string stripText(const std::string& text, const Value& chars, bool left, bool right);

}  // namespace lorascope::jinja
