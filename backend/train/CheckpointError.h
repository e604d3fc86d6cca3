// train/CheckpointError.h — the typed error of run files (run directory, checkpoints, PEFT
// adapters, merged models). Every message starts with the file it is about and says what to do.
#pragma once

#include <stdexcept>
#include <string>

namespace lorascope::train {

class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(const std::string& file, const std::string& problem)
      : std::runtime_error(file + ": " + problem), file_(file) {}
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

}  // namespace lorascope::train
