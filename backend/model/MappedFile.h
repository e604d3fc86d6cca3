// MappedFile.h — a read-only memory mapping of a whole file (POSIX mmap). Weights are used
// straight from the mapping: opening a 15 GB model reads its headers, not its data.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace lorascope::model {

class MappedFile {
 public:
  // Throws ModelError naming `path` when it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  struct OpenedByOpen {};  // only open() can name it, so only open() constructs

 public:
  MappedFile(OpenedByOpen, std::string path, const std::byte* data, std::size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

 private:
  std::string path_;
  const std::byte* data_;  // nullptr for an empty file (mmap cannot map 0 bytes)
  std::size_t size_;       // bytes
};

}  // namespace lorascope::model
