// Validator.h — validateDataset(): reads a whole dataset file once, streaming, and builds the
// ValidationReport. Bad records are counted and listed, never fatal; the only exception is a
// DatasetError for a file that cannot be read at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

#include "data/Example.h"
#include "data/ExampleEncoder.h"
#include "data/ValidationReport.h"

namespace lorascope::data {

// Called as the file is read (about every MiB and once at the end).
using ProgressFn = std::function<void(std::uint64_t bytesRead, std::uint64_t totalBytes)>;

struct ValidateOptions {
  std::optional<Format> format;             // none = detect
  EncodeOptions encode;                     // masking and max_seq_len policy
  const ExampleEncoder* encoder = nullptr;  // none = no token statistics
  ProgressFn progress;
};

ValidationReport validateDataset(const std::filesystem::path& file, const ValidateOptions& options);

}  // namespace lorascope::data
