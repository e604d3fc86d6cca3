// common/MappedFilePosix.cpp — MappedFile.h with open/fstat/ftruncate/mmap/msync/munmap.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/MappedFile.h"
#include "common/OsError.h"
#include "common/OsFile.h"  // defines: testing::injectedSync

namespace lorascope::common {
namespace {

std::error_code lastError() {
  return {errno, std::generic_category()};
}

// Closes the descriptor on every path out.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

}  // namespace

std::unique_ptr<MappedFile> MappedFile::openReadOnly(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, for good; the
  // check below refuses it (a regular file's reads and mapping ignore the flag).
  const Descriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) {
    throw OsError(path, "cannot open", lastError());
  }
  struct stat info {};
  if (::fstat(file.fd, &info) != 0) {
    throw OsError(path, "cannot read", lastError());
  }
  if (!S_ISREG(info.st_mode)) {
    throw OsError(path, "cannot read: not a regular file", {});
  }
  const auto size = static_cast<std::size_t>(info.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (data == MAP_FAILED) {
      throw OsError(path, "cannot memory-map", lastError());
    }
  }
  // The mapping keeps the file alive once the descriptor closes.
  return std::unique_ptr<MappedFile>(new MappedFile(path, static_cast<std::byte*>(data), size, -1));
}

std::unique_ptr<MappedFile> MappedFile::openShared(const std::filesystem::path& path,
                                                   std::size_t bytes, bool* resized) {
  const Descriptor file{::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)};
  if (file.fd < 0) {
    throw OsError(path, "cannot open", lastError());
  }
  struct stat info {};
  *resized = ::fstat(file.fd, &info) != 0 || static_cast<std::size_t>(info.st_size) != bytes;
  if (*resized && ::ftruncate(file.fd, static_cast<off_t>(bytes)) != 0) {
    throw OsError(path, "cannot size", lastError());
  }
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd, 0);
  if (data == MAP_FAILED) {
    throw OsError(path, "cannot map", lastError());
  }
  return std::unique_ptr<MappedFile>(
      new MappedFile(path, static_cast<std::byte*>(data), bytes, -1));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) {
    ::munmap(data_, size_);
  }
}

void MappedFile::flush(std::size_t offset, std::size_t count, const char* what) {
  std::error_code injected;
  if (testing::injectedSync(false, &injected)) {
    if (injected) {
      throw OsError(path_, std::string(what) + " failed", injected);
    }
    return;
  }
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t aligned = offset / page * page;
  if (::msync(data_ + aligned, offset - aligned + count, MS_SYNC) != 0) {
    throw OsError(path_, std::string(what) + " failed", lastError());
  }
}

}  // namespace lorascope::common
