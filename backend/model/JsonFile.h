// JsonFile.h — reading a small JSON file (config.json, model.safetensors.index.json) with errors
// that name it.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace lorascope::model {

// Throws ModelError naming `path` when it cannot be opened or is not well-formed JSON.
nlohmann::json readJsonFile(const std::string& path);

}  // namespace lorascope::model
