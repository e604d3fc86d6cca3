// JsonFile.cpp — whole-file JSON reading for backend/model.
#include "model/JsonFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/OsError.h"  // defines: pathFromUtf8
#include "model/ModelError.h"

namespace lorascope::model {

nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream in(common::pathFromUtf8(path), std::ios::binary);
  if (!in) {
    throw ModelError(path, std::string("cannot open: ") + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    throw ModelError(path, "not well-formed JSON");
  }
  return doc;
}

}  // namespace lorascope::model
