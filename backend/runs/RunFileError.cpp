// runs/RunFileError.cpp — reading and appending run files, errors naming the file.
#include "runs/RunFileError.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/OsError.h"  // defines: pathText
#include "common/OsFile.h"   // defines: OutputFile

namespace lorascope::runs {
namespace fs = std::filesystem;
using nlohmann::json;

std::string readRunFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw RunFileError(common::pathText(path),
                       "cannot be opened (missing? an incomplete checkpoint?)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void appendRunFile(const fs::path& path, std::string_view bytes) {
  try {
    common::OutputFile file(path, common::OutputFile::Mode::Append);
    file.write(bytes);
    file.close();
  } catch (const common::OsError& e) {
    throw RunFileError(common::pathText(path), e.detail());
  }
}

json readRunJson(const fs::path& path) {
  const json doc = json::parse(readRunFile(path), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    throw RunFileError(common::pathText(path), "is not a well-formed JSON object");
  }
  return doc;
}

}  // namespace lorascope::runs
