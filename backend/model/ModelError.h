// ModelError.h — typed errors of backend/model. Every message starts with the file it is about
// ("<dir>/config.json: field 'hidden_size' is missing"), so the user knows what to open.
#pragma once

#include <stdexcept>
#include <string>

namespace lorascope::model {

// A model folder, config.json, safetensors file or index is missing, malformed or does not match
// the configuration.
class ModelError : public std::runtime_error {
 public:
  ModelError(const std::string& file, const std::string& problem)
      : std::runtime_error(file + ": " + problem), file_(file) {}
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// The folder is well-formed but describes something this build does not run (an architecture,
// activation or rope scaling type); the message reads "not supported: <what>".
class UnsupportedModelError : public ModelError {
 public:
  UnsupportedModelError(const std::string& file, const std::string& what)
      : ModelError(file, "not supported: " + what) {}
};

}  // namespace lorascope::model
