// common/MappedFile.h — a file mapped into memory (mmap; CreateFileMapping/MapViewOfFile on
// Windows): read-only for model weights, used straight from the mapping (opening a 15 GB model
// reads its headers, not its data), or shared and writable for the engine's state mirror, whose
// pages the system writes back even when the process dies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace lorascope::common {

class MappedFile {
 public:
  // The whole file, read-only. Throws OsError naming `path` ("cannot open", "not a regular
  // file", "cannot memory-map"). An empty file maps to no bytes.
  static std::unique_ptr<MappedFile> openReadOnly(const std::filesystem::path& path);
  // The file created if missing and sized to exactly `bytes` (contents kept up to that size),
  // shared and writable. *resized says whether its size changed (a new file, or another
  // capacity). Throws OsError ("cannot open", "cannot size", "cannot map").
  static std::unique_ptr<MappedFile> openShared(const std::filesystem::path& path,
                                                std::size_t bytes, bool* resized);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  // Writable bytes; only for openShared's mappings.
  std::span<std::byte> writableBytes() { return {data_, size_}; }
  // Writes [offset, offset + count) back to the file and waits for the disk; throws OsError
  // ("<what> failed").
  void flush(std::size_t offset, std::size_t count, const char* what);

 private:
  MappedFile(std::filesystem::path path, std::byte* data, std::size_t size, std::intptr_t handle)
      : path_(std::move(path)), data_(data), size_(size), handle_(handle) {}

  std::filesystem::path path_;
  std::byte* data_ = nullptr;  // nullptr for an empty file (nothing can map 0 bytes)
  std::size_t size_ = 0;       // bytes
  // Windows: the file, kept open for FlushFileBuffers; unused on POSIX.
  [[maybe_unused]] std::intptr_t handle_ = -1;
};

}  // namespace lorascope::common
