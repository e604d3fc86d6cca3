// common/Format.cpp — formatBytes with std::to_chars (locale-independent).
#include "common/Format.h"

#include <charconv>
#include <cmath>
#include <iterator>

namespace lorascope::common {

std::string formatBytes(std::uint64_t bytes) {
  if (bytes < 1024) {
    return std::to_string(bytes) + " B";
  }
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  // A value that would print as 1024.00 moves up a unit too ("1.00 MiB", not "1024.00 KiB").
  while (std::round(value * 100.0) >= 102400.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  const auto [end, error] =
      std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, 2);
  if (error != std::errc()) {
    return std::to_string(bytes) + " B";
  }
  return std::string(text, end) + " " + kUnits[unit];
}

std::string_view trimBlanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace lorascope::common
