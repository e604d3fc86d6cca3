// MappedFile.h — a read-only memory mapping of a whole model file (common/MappedFile.h: mmap,
// MapViewOfFile). Weights are used straight from the mapping: opening a 15 GB model reads its
// headers, not its data.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace lorascope::common {
class MappedFile;
}

namespace lorascope::model {

class MappedFile {
 public:
  // Throws ModelError naming `path` (UTF-8) when it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  std::span<const std::byte> bytes() const { return bytes_; }

 private:
  struct OpenedByOpen {};  // only open() can name it, so only open() constructs

 public:
  MappedFile(OpenedByOpen, std::string path, std::unique_ptr<common::MappedFile> mapping);

 private:
  std::string path_;
  std::unique_ptr<common::MappedFile> mapping_;
  std::span<const std::byte> bytes_;  // the whole file; empty for an empty file
};

}  // namespace lorascope::model
