// runs/RunFileError.h — the typed error of run files (a run folder's config.json, metrics.jsonl,
// checkpoints, PEFT adapters, merged models), and the readers that raise it. Every message starts
// with the file it is about and says what to do.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace lorascope::runs {

class RunFileError : public std::runtime_error {
 public:
  RunFileError(const std::string& file, const std::string& problem)
      : std::runtime_error(file + ": " + problem), file_(file) {}
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// The whole file; RunFileError naming it when it cannot be opened.
std::string readRunFile(const std::filesystem::path& path);
// Appends `bytes` with one open and write() loop (a crash tears at most this piece);
// RunFileError naming the file when it cannot be opened or written.
void appendRunFile(const std::filesystem::path& path, std::string_view bytes);
// The file as a JSON object; RunFileError naming it when missing or not a JSON object.
nlohmann::json readRunJson(const std::filesystem::path& path);

}  // namespace lorascope::runs
