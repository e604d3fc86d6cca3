// JsonFile.h — reading a small JSON file (config.json, model.safetensors.index.json) with errors
// that name it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace lorascope::model {

// The cap of readJsonFile: config.json and the shard index are a few KB to a few MB.
inline constexpr std::uint64_t kMaxModelJsonBytes = std::uint64_t{64} << 20;

// Throws ModelError naming `path` when it cannot be opened, is not a regular file, is larger
// than kMaxModelJsonBytes (the message names the limit) or is not well-formed JSON.
nlohmann::json readJsonFile(const std::string& path);

}  // namespace lorascope::model
