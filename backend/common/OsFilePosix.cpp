// common/OsFilePosix.cpp — OsFile.h on POSIX: open/write/fsync/close, rename, a directory fsync.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/OsError.h"
#include "common/OsFile.h"

namespace lorascope::common {
namespace {

std::error_code lastError() {
  return {errno, std::generic_category()};
}

std::error_code syncDescriptor(int fd, bool isDirectory) {
  std::error_code error;
  if (testing::injectedSync(isDirectory, &error)) {
    return error;
  }
  return ::fsync(fd) == 0 ? std::error_code() : lastError();
}

}  // namespace

OutputFile::OutputFile(const std::filesystem::path& path, Mode mode) : path_(path) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == Mode::Append ? O_APPEND : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    throw OsError(path, mode == Mode::Append ? "cannot open for append" : "cannot create",
                  lastError());
  }
  handle_ = fd;
}

OutputFile::~OutputFile() {
  if (handle_ >= 0) {
    ::close(static_cast<int>(handle_));
  }
}

void OutputFile::write(std::span<const std::byte> bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n =
        ::write(static_cast<int>(handle_), bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw OsError(path_, "write failed", lastError());
    }
    written += static_cast<std::size_t>(n);
  }
}

void OutputFile::sync() {
  if (const std::error_code error = syncDescriptor(static_cast<int>(handle_), false)) {
    throw OsError(path_, "fsync failed", error);
  }
}

void OutputFile::close() {
  if (handle_ < 0) {
    return;
  }
  const int fd = static_cast<int>(handle_);
  handle_ = -1;
  if (::close(fd) != 0) {
    throw OsError(path_, "close failed", lastError());
  }
}

void renameReplacing(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    throw OsError(to, "rename failed", lastError());
  }
}

std::error_code syncDirectoryEntries(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw OsError(dir, "cannot open the directory to sync it", lastError());
  }
  const std::error_code error = syncDescriptor(fd, true);
  ::close(fd);
  return error;
}

}  // namespace lorascope::common
