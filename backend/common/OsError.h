// common/OsError.h — the one error type of the platform layer: an operating-system call failed on
// a path ("<path>: <step>: <the system's words>"). Callers that own a typed error (ModelError,
// CheckpointError, ...) rethrow it with detail(), so every message still starts with the file.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace lorascope::common {

// The path as UTF-8 text for messages and JSON. path::string() is the narrow code page on
// Windows (it throws for names it cannot represent there); this never loses a character.
std::string pathText(const std::filesystem::path& path);

// A UTF-8 string (from JSON, the command line on POSIX, a QString's toStdString()) as a path.
// On Windows a std::string constructs a path in the ANSI code page: this is the way from UTF-8.
std::filesystem::path pathFromUtf8(std::string_view utf8);

class OsError : public std::runtime_error {
 public:
  OsError(const std::filesystem::path& path, const std::string& step, std::error_code code)
      : std::runtime_error(pathText(path) + ": " + describe(step, code)),
        path_(path),
        step_(step),
        code_(code) {}

  const std::filesystem::path& path() const { return path_; }
  const std::string& step() const { return step_; }
  std::error_code code() const { return code_; }
  // "<step>: <the system's words>", for errors that name the path themselves.
  std::string detail() const { return describe(step_, code_); }

 private:
  // A step without a system error ("not a regular file") stands alone.
  static std::string describe(const std::string& step, std::error_code code) {
    return code ? step + ": " + code.message() : step;
  }

  std::filesystem::path path_;
  std::string step_;
  std::error_code code_;
};

}  // namespace lorascope::common
