// common/AtomicFile.cpp — temp + fsync + rename + directory fsync (POSIX).
#include "common/AtomicFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace lorascope::common {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void throwIoError(const fs::path& path, const char* what) {
  throw std::runtime_error(path.string() + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

void writeFileAtomically(const fs::path& path, std::span<const std::byte> contents) {
  const fs::path temp = path.string() + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throwIoError(temp, "cannot create");
  }
  std::size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      errno = saved;
      throwIoError(temp, "write failed");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    throwIoError(temp, "fsync/close failed");
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    throwIoError(path, "rename failed");
  }
  // The rename itself lives in the directory: sync it too, or a crash may forget it.
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (const int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
}

void writeFileAtomically(const fs::path& path, std::string_view contents) {
  writeFileAtomically(path, std::as_bytes(std::span(contents.data(), contents.size())));
}

}  // namespace lorascope::common
