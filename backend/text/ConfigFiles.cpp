// ConfigFiles.cpp — file reading and JSON parsing shared by Tokenizer and ChatTemplate.
#include "text/ConfigFiles.h"

#include "common/BoundedFile.h"
#include "common/OsError.h"  // defines: pathText
#include "text/TextError.h"

namespace lorascope::text {

std::string readTextFile(const std::filesystem::path& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw TextError(common::pathText(path) + ": " + what + " not found");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw TextError(common::pathText(path) + ": is a directory, expected " + what);
  }
  // tokenizer.json holds the vocabulary and the merges (tens of MB for the largest ones); the
  // other files are a few KB.
  const bool tokenizer = std::string_view(what) == "tokenizer.json";
  const common::FileSizeLimit limit =
      tokenizer ? common::FileSizeLimit{kMaxTokenizerJsonBytes, "a tokenizer.json"}
                : common::FileSizeLimit{kMaxModelTextFileBytes, "a model's text file"};
  try {
    return common::readBoundedFile(path, limit);
  } catch (const common::OsError& e) {
    throw TextError(common::pathText(path) + ": " + e.detail() + " (" + what + ")");
  }
}

nlohmann::json parseJsonText(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw TextError(source + ": malformed JSON (byte " + std::to_string(e.byte) + "): " + e.what());
  } catch (const nlohmann::json::exception& e) {
    // A number no double holds (1e400) is out_of_range, not a parse_error; it names no byte.
    throw TextError(source + ": malformed JSON: " + e.what());
  }
}

std::optional<std::string> configTokenText(const nlohmann::json& config, const char* key) {
  if (!config.is_object() || !config.contains(key)) {
    return std::nullopt;
  }
  const nlohmann::json& value = config.at(key);
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_object() && value.contains("content") && value.at("content").is_string()) {
    return value.at("content").get<std::string>();
  }
  return std::nullopt;
}

}  // namespace lorascope::text
