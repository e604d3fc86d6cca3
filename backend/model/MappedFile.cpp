// MappedFile.cpp — common::MappedFile with errors naming the model file.
#include "model/MappedFile.h"

#include "common/MappedFile.h"
#include "common/OsError.h"
#include "model/ModelError.h"

namespace lorascope::model {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  std::unique_ptr<common::MappedFile> mapping;
  try {
    mapping = common::MappedFile::openReadOnly(common::pathFromUtf8(path));
  } catch (const common::OsError& e) {
    throw ModelError(path, e.detail());
  }
  return std::make_shared<const MappedFile>(OpenedByOpen{}, path, std::move(mapping));
}

MappedFile::MappedFile(OpenedByOpen, std::string path, std::unique_ptr<common::MappedFile> mapping)
    : path_(std::move(path)), mapping_(std::move(mapping)), bytes_(mapping_->bytes()) {}

MappedFile::~MappedFile() = default;

}  // namespace lorascope::model
