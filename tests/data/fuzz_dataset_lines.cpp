// fuzz_dataset_lines.cpp — libFuzzer target: arbitrary bytes as a dataset file (JSONL or a JSON
// array, any format) through the validator — with the committed ChatML test tokenizer, so
// rendering, masking and the length policy run too — and both report forms. The only exception
// allowed is DatasetError (e.g. a UTF-16 byte-order mark); everything else must become a reported
// issue.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "data/Issue.h"
#include "data/Validator.h"

namespace {

// One scratch file per fuzzing process, rewritten for every input.
const std::filesystem::path& scratchFile() {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("lorascope_fuzz_dataset_" + std::to_string(::getpid()) + ".jsonl");
  return path;
}

const lorascope::data::ExampleEncoder& encoder() {
  static const lorascope::data::ExampleEncoder instance(
      lorascope::text::Tokenizer::fromFile(LORASCOPE_FUZZ_TOKENIZER),
      lorascope::text::ChatTemplate::byName("chatml"));
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::FILE* file = std::fopen(scratchFile().c_str(), "wb");
  if (file == nullptr) {
    return 0;
  }
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  lorascope::data::ValidateOptions options;
  // The first byte, when it names a format, forces it; otherwise detection runs.
  if (size > 0 && data[0] < 3) {
    options.format = static_cast<lorascope::data::Format>(data[0]);
  }
  options.encoder = &encoder();
  options.encode.maxSeqLen = 64;  // small, so truncation and drops happen
  options.encode.policy = size % 2 == 0 ? lorascope::data::OverLengthPolicy::Truncate
                                        : lorascope::data::OverLengthPolicy::Drop;
  try {
    const lorascope::data::ValidationReport report =
        lorascope::data::validateDataset(scratchFile(), options);
    const std::string json =
        report.toJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    const std::string text = report.toText();
    if (json.empty() || text.empty()) {
      __builtin_trap();
    }
  } catch (const lorascope::data::DatasetError&) {
  }
  return 0;
}
