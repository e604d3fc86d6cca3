// JsonFile.cpp — whole-file JSON reading for backend/model.
#include "model/JsonFile.h"

#include <nlohmann/json.hpp>

#include "common/BoundedFile.h"
#include "common/OsError.h"  // defines: pathFromUtf8
#include "model/ModelError.h"

namespace lorascope::model {

nlohmann::json readJsonFile(const std::string& path) {
  std::string text;
  try {
    text = common::readBoundedFile(common::pathFromUtf8(path),
                                   {kMaxModelJsonBytes, "a model's JSON file"});
  } catch (const common::OsError& e) {
    throw ModelError(path, e.detail());
  }
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    throw ModelError(path, "not well-formed JSON");
  }
  return doc;
}

}  // namespace lorascope::model
