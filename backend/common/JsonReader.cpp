// common/JsonReader.cpp — strict field reads, each failure naming its field.
#include "common/JsonReader.h"

#include <algorithm>
#include <limits>

namespace lorascope::common {
using nlohmann::json;

namespace {

// A key as messages show it: as written when it is plain text, else as a JSON string (quoted,
// control characters escaped), so that a newline or a NUL in a key cannot forge lines of output.
std::string shownKey(std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  return plain ? std::string(key)
               : json(std::string(key)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// The checks of one value, shared by fields and rows: the problem, or none when it is right.
std::optional<std::string> integerProblem(const json& v) {
  if (!v.is_number_integer())
    return "must be a whole number";
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return "too large";
  return std::nullopt;
}

std::optional<std::string> rangeProblem(const json& v, std::int64_t min, std::int64_t max) {
  const bool inRange =
      v.is_number_integer() &&
      !(v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) &&
      v.get<std::int64_t>() >= min && v.get<std::int64_t>() <= max;
  if (inRange)
    return std::nullopt;
  return "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max);
}

bool isUnsigned(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
}

// Throws through `raise` (and, should it return, as JsonError).
[[noreturn]] void raiseWith(const JsonFailure& raise, const std::string& message) {
  raise(message);
  throw JsonError(message);
}

}  // namespace

void throwJsonError(const std::string& message) {
  throw JsonError(message);
}

// ---- JsonReader ------------------------------------------------------------------------------

JsonReader::JsonReader(const json& object, std::string context, JsonFailure raise, std::string path)
    : object_(object), context_(std::move(context)), raise_(raise), path_(std::move(path)) {
  if (!object_.is_object())
    failHere("must be an object");
}

void JsonReader::fail(std::string_view key, const std::string& problem) const {
  raiseWith(raise_, context_ + fieldName(key) + ": " + problem);
}

void JsonReader::failHere(const std::string& problem) const {
  raiseWith(raise_, context_ + (path_.empty() ? "" : path_ + ": ") + problem);
}

std::string JsonReader::fieldName(std::string_view key) const {
  return path_.empty() ? shownKey(key) : path_ + "." + shownKey(key);
}

const json& JsonReader::at(std::string_view key) const {
  const auto it = object_.find(key);
  if (it == object_.end())
    fail(key, "missing");
  return *it;
}

void JsonReader::onlyKeys(std::initializer_list<std::string_view> keys) const {
  for (const auto& [key, value] : object_.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (const std::string_view name : keys)
        known += (known.empty() ? "" : ", ") + std::string(name);
      fail(key, "unknown key (the keys here: " + known + ")");
    }
  }
}

JsonReader JsonReader::object(std::string_view key) const {
  return JsonReader(at(key), context_, raise_, fieldName(key));
}

const json& JsonReader::array(std::string_view key) const {
  const json& v = at(key);
  if (!v.is_array())
    fail(key, "must be an array");
  return v;
}

const json& JsonReader::item(std::string_view key, std::size_t index) const {
  const json& items = array(key);
  if (index >= items.size())
    fail(key, "has no element " + std::to_string(index));
  return items[index];
}

JsonReader JsonReader::element(std::string_view key, std::size_t index) const {
  return JsonReader(item(key, index), context_, raise_,
                    fieldName(key) + "[" + std::to_string(index) + "]");
}

JsonRow JsonReader::row(std::string_view key, std::size_t index) const {
  return JsonRow(item(key, index), context_, raise_,
                 fieldName(key) + "[" + std::to_string(index) + "]");
}

std::string JsonReader::string(std::string_view key) const {
  const json& v = at(key);
  if (!v.is_string())
    fail(key, "must be a string");
  return v.get<std::string>();
}

bool JsonReader::boolean(std::string_view key) const {
  const json& v = at(key);
  if (!v.is_boolean())
    fail(key, "must be true or false");
  return v.get<bool>();
}

std::int64_t JsonReader::integer(std::string_view key) const {
  const json& v = at(key);
  if (const std::optional<std::string> problem = integerProblem(v))
    fail(key, *problem);
  return v.get<std::int64_t>();
}

std::int64_t JsonReader::integer(std::string_view key, std::int64_t min, std::int64_t max) const {
  const json& v = at(key);
  if (const std::optional<std::string> problem = rangeProblem(v, min, max))
    fail(key, *problem);
  return v.get<std::int64_t>();
}

std::uint64_t JsonReader::unsignedValue(std::string_view key, const char* problem) const {
  const json& v = at(key);
  if (!isUnsigned(v))
    fail(key, problem);
  return v.get<std::uint64_t>();
}

std::uint64_t JsonReader::unsignedInteger(std::string_view key) const {
  return unsignedValue(key, "must be a whole number ≥ 0");
}

double JsonReader::number(std::string_view key) const {
  const json& v = at(key);
  if (!v.is_number())
    fail(key, "must be a number");
  return v.get<double>();
}

double JsonReader::numberOrNaN(std::string_view key) const {
  return at(key).is_null() ? std::numeric_limits<double>::quiet_NaN() : number(key);
}

std::string JsonReader::stringOr(std::string_view key, std::string fallback) const {
  return has(key) ? string(key) : std::move(fallback);
}

bool JsonReader::booleanOr(std::string_view key, bool fallback) const {
  return has(key) ? boolean(key) : fallback;
}

std::int64_t JsonReader::integerOr(std::string_view key, std::int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}

double JsonReader::numberOr(std::string_view key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

std::optional<double> JsonReader::optionalNumber(std::string_view key) const {
  if (!has(key) || at(key).is_null())
    return std::nullopt;
  return number(key);
}

std::optional<std::uint64_t> JsonReader::optionalUnsigned(std::string_view key) const {
  if (!has(key) || at(key).is_null())
    return std::nullopt;
  return unsignedValue(key, "must be a whole number ≥ 0 or null");
}

// ---- JsonRow ---------------------------------------------------------------------------------

JsonRow::JsonRow(const json& array, std::string context, JsonFailure raise, std::string path)
    : array_(array), context_(std::move(context)), raise_(raise), path_(std::move(path)) {
  if (!array_.is_array())
    raiseWith(raise_, context_ + path_ + ": must be an array");
}

void JsonRow::fail(std::size_t index, const std::string& problem) const {
  raiseWith(raise_, context_ + path_ + "[" + std::to_string(index) + "]: " + problem);
}

const json& JsonRow::at(std::size_t index) const {
  if (index >= array_.size())
    fail(index, "missing");
  return array_[index];
}

std::string JsonRow::string(std::size_t index) const {
  const json& v = at(index);
  if (!v.is_string())
    fail(index, "must be a string");
  return v.get<std::string>();
}

std::int64_t JsonRow::integer(std::size_t index) const {
  const json& v = at(index);
  if (const std::optional<std::string> problem = integerProblem(v))
    fail(index, *problem);
  return v.get<std::int64_t>();
}

std::int64_t JsonRow::integer(std::size_t index, std::int64_t min, std::int64_t max) const {
  const json& v = at(index);
  if (const std::optional<std::string> problem = rangeProblem(v, min, max))
    fail(index, *problem);
  return v.get<std::int64_t>();
}

std::uint64_t JsonRow::unsignedInteger(std::size_t index) const {
  const json& v = at(index);
  if (!isUnsigned(v))
    fail(index, "must be a whole number ≥ 0");
  return v.get<std::uint64_t>();
}

}  // namespace lorascope::common
