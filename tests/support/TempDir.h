// TempDir.h — test helper: a fresh folder under the system's temporary folder, removed with
// everything in it when the object goes (what the tests used QTemporaryDir for, without Qt), and
// a folder inside it under names no ANSI code page holds, for the tests of non-ASCII paths.
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

namespace lstest {

// "Łukasz" and "日本" as UTF-8 text: the two names of TempDir::nonAsciiFolder(). Windows turns a
// narrow string into a path (and a path into one) through the ANSI code page, which has neither.
inline constexpr const char* kNonAsciiUser = "\xc5\x81ukasz";
inline constexpr const char* kNonAsciiSub = "\xe6\x97\xa5\xe6\x9c\xac";

// The path as UTF-8 text (what the project's messages and JSON hold).
inline std::string utf8Text(const std::filesystem::path& path) {
  const std::u8string text = path.u8string();
  return std::string(text.begin(), text.end());
}

class TempDir {
 public:
  TempDir() {
    std::random_device entropy;
    const auto base = std::filesystem::temp_directory_path();
    for (int attempt = 0; attempt < 100 && path_.empty(); ++attempt) {
      const auto candidate = base / ("lorascope-test-" + std::to_string(entropy()));
      std::error_code error;
      if (std::filesystem::create_directory(candidate, error))
        path_ = candidate;
    }
  }
  ~TempDir() {
    std::error_code ignored;  // a folder that cannot be removed is left behind, not an error
    if (!path_.empty())
      std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool isValid() const { return !path_.empty(); }
  // The folder (empty when it could not be created).
  const std::filesystem::path& path() const { return path_; }
  // `name` inside the folder, as UTF-8 text.
  std::string filePath(const std::string& name) const { return utf8Text(path_ / name); }
  // <folder>/Łukasz/日本, created: a user folder such as C:\Users\Łukasz\日本.
  std::filesystem::path nonAsciiFolder() const {
    const std::filesystem::path dir =
        path_ / std::filesystem::path(u8"\u0141ukasz") / std::filesystem::path(u8"\u65e5\u672c");
    std::filesystem::create_directories(dir);
    return dir;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace lstest
