// common/EnumNames.h — enum ↔ string from one table. Each enum that is named in a file format, a
// protocol or a message lists its values once:
//   inline constexpr common::EnumName<RunState> kRunStateNames[] = {{RunState::Idle, "idle"}, …};
// and reads both directions from it: enumName(kRunStateNames, s), parseEnum(kRunStateNames, t).
// coversEnum(table) (for a static_assert) holds when the table lists the values 0, 1, 2, … in
// order, so an enumerator added without a name fails to compile where the enum ends in a
// sentinel, and enumName is an index.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lorascope::common {

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;
};

// True when table[i].value == Enum(i) for every i (a dense table in declaration order).
template <typename Enum, std::size_t N>
constexpr bool coversEnum(const EnumName<Enum> (&table)[N]) {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(table[i].value) != i) {
      return false;
    }
  }
  return true;
}

// The name of `value`; "?" for a value the table lacks.
template <typename Enum, std::size_t N>
constexpr const char* enumName(const EnumName<Enum> (&table)[N], Enum value) {
  for (const EnumName<Enum>& entry : table) {
    if (entry.value == value) {
      return entry.name;
    }
  }
  return "?";
}

// The value named `text`, or nothing.
template <typename Enum, std::size_t N>
constexpr std::optional<Enum> parseEnum(const EnumName<Enum> (&table)[N], std::string_view text) {
  for (const EnumName<Enum>& entry : table) {
    if (text == entry.name) {
      return entry.value;
    }
  }
  return std::nullopt;
}

// "a, b, c": the names for an error message that says what is accepted.
template <typename Enum, std::size_t N>
std::string enumNameList(const EnumName<Enum> (&table)[N], std::string_view separator = ", ") {
  std::string out;
  for (const EnumName<Enum>& entry : table) {
    if (!out.empty()) {
      out += separator;
    }
    out += entry.name;
  }
  return out;
}

}  // namespace lorascope::common
