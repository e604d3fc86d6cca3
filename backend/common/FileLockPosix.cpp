// common/FileLockPosix.cpp — FileLock.h on POSIX: an open-file-description lock (fcntl
// F_OFD_SETLK) on one byte of the file. Unlike a classic fcntl lock it belongs to the open file,
// not to the process, so a second FileLock in the same process is refused too, and closing some
// other descriptor of the file does not drop it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/FileLock.h"
#include "common/OsError.h"
#include "common/Platform.h"

namespace lorascope::common {
namespace {

std::error_code lastError() {
  return {errno, std::generic_category()};
}

std::string readRecord(int fd) {
  char buffer[256];
  const ssize_t n = ::pread(fd, buffer, sizeof buffer, 0);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

FileLock::FileLock(const std::filesystem::path& path) : path_(path) {
  for (int attempt = 1;; ++attempt) {
    // O_NOFOLLOW: a link put in the lock file's place does not send the record elsewhere.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
      throw OsError(path, "cannot open the lock file", lastError());
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      ::close(fd);
      throw OsError(path, "the lock file is not a regular file", {});
    }
    struct flock range {};
    range.l_type = F_WRLCK;
    range.l_whence = SEEK_SET;
    range.l_start = static_cast<off_t>(kLockedByteOffset);
    range.l_len = 1;
    if (::fcntl(fd, F_OFD_SETLK, &range) != 0) {
      const std::error_code error = lastError();
      if (error == std::errc::resource_unavailable_try_again ||
          error == std::errc::permission_denied) {
        LockHolder holder = currentLockHolder([fd] { return readRecord(fd); });
        ::close(fd);
        throw LockBusy(path, std::move(holder));
      }
      ::close(fd);
      throw OsError(path, "cannot lock", error);
    }
    // A holder may remove the file before it lets go (FileLock::removeFile): the lock of a file no
    // longer at `path` keeps no one out, so the file now there is locked instead.
    struct stat now {};
    if (::lstat(path.c_str(), &now) != 0 || now.st_dev != info.st_dev ||
        now.st_ino != info.st_ino) {
      ::close(fd);
      if (attempt < kLockAttempts) {
        continue;
      }
      throw OsError(path, "the lock file was removed each time it was locked", {});
    }
    const std::string record = lockHolderText(currentProcessId());
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
      const std::error_code error = lastError();
      ::close(fd);
      throw OsError(path, "cannot write the lock's holder", error);
    }
    handle_ = fd;
    return;
  }
}

FileLock::~FileLock() {
  ::close(static_cast<int>(handle_));
}

}  // namespace lorascope::common
