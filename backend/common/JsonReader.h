// common/JsonReader.h — the one strict reader of JSON objects: the protocol's messages, profiles,
// the mirrored trainer state's header and a run's files are read field by field through it.
//
// - Strict: a field has the JSON type it must have (a whole number is no 1.5 and no "1", a flag
//   is true or false), within its range; nothing is converted on the way.
// - Every failure names the field by its path ("toggles.micro_batch", "sites[2]") and the
//   problem, after the document's context ("'step' message: ", "user.json: "), and is thrown as
//   the document's own error: the reader is given the function that throws it.
// - Reading is by key; onlyKeys refuses keys the document does not know (a typo is an error,
//   not a silently ignored setting).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/EnumNames.h"

namespace lorascope::common {

// What a reader throws when the document gave it no error of its own.
class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws the document's error with `message` (the context, the field and the problem); never
// returns.
using JsonFailure = std::function<void(const std::string& message)>;
[[noreturn]] void throwJsonError(const std::string& message);

class JsonReader {
 public:
  // `object` must outlive the reader. A value that is not an object fails with "must be an
  // object" (under `path`, when given).
  JsonReader(const nlohmann::json& object, std::string context, JsonFailure raise = throwJsonError,
             std::string path = {});

  [[noreturn]] void fail(std::string_view key, const std::string& problem) const;
  // The failure of the object itself (no field): "<context><path>: problem".
  [[noreturn]] void failHere(const std::string& problem) const;

  const nlohmann::json& value() const { return object_; }  // the object as it is
  bool has(std::string_view key) const { return object_.contains(key); }
  const nlohmann::json& at(std::string_view key) const;  // "missing" when absent
  // Refuses a key not in `keys`: "<key>: unknown key (the keys here: a, b, c)".
  void onlyKeys(std::initializer_list<std::string_view> keys) const;

  JsonReader object(std::string_view key) const;  // a nested object, its fields named key.field
  const nlohmann::json& array(std::string_view key) const;  // "must be an array"
  // The element `index` of the array `key` as an object ("key[index]" in messages).
  JsonReader element(std::string_view key, std::size_t index) const;
  // The element `index` of the array `key` as a row: an array read by position.
  class JsonRow row(std::string_view key, std::size_t index) const;

  std::string string(std::string_view key) const;
  bool boolean(std::string_view key) const;
  std::int64_t integer(std::string_view key) const;  // any whole number an int64 holds
  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  std::uint64_t unsignedInteger(std::string_view key) const;  // a whole number ≥ 0
  double number(std::string_view key) const;
  // A number that may be null: JSON has no NaN, and a loss may be one.
  double numberOrNaN(std::string_view key) const;

  // The field when present, else `fallback` (a key that is there must still be right).
  std::string stringOr(std::string_view key, std::string fallback) const;
  bool booleanOr(std::string_view key, bool fallback) const;
  std::int64_t integerOr(std::string_view key, std::int64_t fallback) const;
  double numberOr(std::string_view key, double fallback) const;
  // Absent or null: none.
  std::optional<double> optionalNumber(std::string_view key) const;
  std::optional<std::uint64_t> optionalUnsigned(std::string_view key) const;

  template <typename Enum, std::size_t N>
  Enum choice(std::string_view key, const EnumName<Enum> (&names)[N]) const {
    const std::string text = string(key);
    if (const std::optional<Enum> value = parseEnum(names, text)) {
      return *value;
    }
    fail(key, "'" + text + "' is not one of: " + enumNameList(names));
  }

  // The field's name in messages: "path.key" inside a nested object, else "key".
  std::string fieldName(std::string_view key) const;

 private:
  std::uint64_t unsignedValue(std::string_view key, const char* problem) const;
  const nlohmann::json& item(std::string_view key, std::size_t index) const;

  const nlohmann::json& object_;
  std::string context_;
  JsonFailure raise_;
  std::string path_;
};

// A record written as a JSON array ([layer, module, rows, columns]), read by position with the
// reader's rules; a failure names the element ("sites[2][4]: must be a whole number").
class JsonRow {
 public:
  // "must be an array" when `array` is none.
  JsonRow(const nlohmann::json& array, std::string context, JsonFailure raise, std::string path);

  [[noreturn]] void fail(std::size_t index, const std::string& problem) const;
  std::size_t size() const { return array_.size(); }
  const nlohmann::json& at(std::size_t index) const;  // "missing" past the end
  std::string string(std::size_t index) const;
  std::int64_t integer(std::size_t index) const;
  std::int64_t integer(std::size_t index, std::int64_t min, std::int64_t max) const;
  std::uint64_t unsignedInteger(std::size_t index) const;

 private:
  const nlohmann::json& array_;
  std::string context_;
  JsonFailure raise_;
  std::string path_;
};

}  // namespace lorascope::common
