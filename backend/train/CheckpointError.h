// train/CheckpointError.h — the typed error of run files (run directory, checkpoints, PEFT
// adapters, merged models), and the two readers that raise it. Every message starts with the
// file it is about and says what to do.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace lorascope::train {

class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(const std::string& file, const std::string& problem)
      : std::runtime_error(file + ": " + problem), file_(file) {}
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// The whole file; CheckpointError naming it when it cannot be opened.
std::string readRunFile(const std::filesystem::path& path);
// Appends `bytes` with one open and write() loop (a crash tears at most this piece);
// CheckpointError naming the file when it cannot be opened or written.
void appendRunFile(const std::filesystem::path& path, std::string_view bytes);
// The file as a JSON object; CheckpointError naming it when missing or not a JSON object.
nlohmann::json readRunJson(const std::filesystem::path& path);

}  // namespace lorascope::train
