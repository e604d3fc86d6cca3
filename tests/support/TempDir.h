// TempDir.h — test helper: a fresh folder under the system's temporary folder, removed with
// everything in it when the object goes (what the tests used QTemporaryDir for, without Qt).
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

namespace lstest {

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
  // `name` inside the folder, as a string.
  std::string filePath(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace lstest
