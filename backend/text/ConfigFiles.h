// ConfigFiles.h — reading the JSON files of a model folder (tokenizer.json,
// tokenizer_config.json, config.json) with errors that name the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lorascope::text {

// The caps of readTextFile: a tokenizer.json (the largest real ones are tens of MB), any other
// text file of a model folder (config files and chat templates, a few KB).
inline constexpr std::uint64_t kMaxTokenizerJsonBytes = std::uint64_t{512} << 20;
inline constexpr std::uint64_t kMaxModelTextFileBytes = std::uint64_t{64} << 20;

// The whole file; TextError "<path>: <what> not found" / "is a directory" / "cannot open" /
// "cannot read: not a regular file" / "is N, more than the <cap> limit of ...".
std::string readTextFile(const std::filesystem::path& path, const char* what);
// TextError "<source>: malformed JSON (byte N): ..." for text that does not parse.
nlohmann::json parseJsonText(std::string_view text, const std::string& source);
// tokenizer_config.json writes bos_token / eos_token as a string or as an AddedToken object
// ({"content": ...}); nullopt when absent or null.
std::optional<std::string> configTokenText(const nlohmann::json& config, const char* key);

}  // namespace lorascope::text
