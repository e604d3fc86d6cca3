// TextFiles.cpp — strict parsing of sysfs/procfs numbers and sizes.
#include "telemetry/TextFiles.h"

#include <charconv>
#include <fstream>
#include <limits>

namespace lorascope::telemetry {

std::optional<std::string> readTextFile(const std::filesystem::path& path, std::size_t maxBytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::string text;
  char chunk[4096];
  while (text.size() < maxBytes) {
    in.read(chunk, static_cast<std::streamsize>(sizeof(chunk)));
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (!in) {
      break;
    }
  }
  if (in.bad()) {
    return std::nullopt;  // e.g. EIO from a sysfs attribute the driver refuses to read
  }
  if (text.size() > maxBytes) {
    text.resize(maxBytes);
  }
  return text;
}

std::string_view trimmed(std::string_view text) {
  const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && isSpace(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && isSpace(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<std::uint64_t> parseUnsigned(std::string_view text) {
  text = trimmed(text);
  if (text.empty() || text.front() < '0' || text.front() > '9') {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::uint64_t> parseSizeBytes(std::string_view text) {
  text = trimmed(text);
  const std::size_t space = text.find_first_of(" \t");
  const std::optional<std::uint64_t> number = parseUnsigned(text.substr(0, space));
  if (!number) {
    return std::nullopt;
  }
  const std::string_view unit =
      space == std::string_view::npos ? std::string_view() : trimmed(text.substr(space));
  std::uint64_t scale = 0;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "KiB" || unit == "kB") {
    scale = std::uint64_t{1} << 10;
  } else if (unit == "MiB") {
    scale = std::uint64_t{1} << 20;
  } else if (unit == "GiB") {
    scale = std::uint64_t{1} << 30;
  } else {
    return std::nullopt;
  }
  if (*number > std::numeric_limits<std::uint64_t>::max() / scale) {
    return std::nullopt;
  }
  return *number * scale;
}

std::optional<std::uint64_t> readUnsignedFile(const std::filesystem::path& path) {
  const std::optional<std::string> text = readTextFile(path, 4096);
  if (!text) {
    return std::nullopt;
  }
  return parseUnsigned(*text);
}

std::string readProcessName(const std::filesystem::path& procRoot, std::uint32_t pid) {
  const std::optional<std::string> comm =
      readTextFile(procRoot / std::to_string(pid) / "comm", 256);
  return comm ? std::string(trimmed(*comm)) : std::string();
}

}  // namespace lorascope::telemetry
