// common/DurableFile.cpp — temp + fsync + rename + directory fsync (POSIX).
#include "common/DurableFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace lorascope::common {
namespace fs = std::filesystem;

namespace {

std::atomic<testing::FsyncFunction> gFsync{nullptr};

int syncFd(int fd) {
  const testing::FsyncFunction hook = gFsync.load(std::memory_order_relaxed);
  return hook ? hook(fd) : ::fsync(fd);
}

[[noreturn]] void throwIoError(const fs::path& path, const std::string& what, int error) {
  throw std::runtime_error(path.string() + ": " + what + ": " + std::strerror(error));
}

// Closes fd and removes the temp file, then throws for `what` with the errno it was called with.
[[noreturn]] void abandon(int fd, const fs::path& temp, const fs::path& named,
                          const std::string& what) {
  const int saved = errno;
  if (fd >= 0) {
    ::close(fd);
  }
  ::unlink(temp.c_str());
  throwIoError(named, what, saved);
}

fs::path parentOf(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

}  // namespace

std::string tempSuffix() {
  return ".tmp-" + std::to_string(::getpid());
}

void syncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throwIoError(dir, "cannot open the directory to sync it", errno);
  }
  if (syncFd(fd) != 0) {
    const int error = errno;
    ::close(fd);
    // This filesystem cannot sync a directory at all: nothing more can be done for it.
    if (error == EINVAL || error == ENOTSUP || error == EOPNOTSUPP || error == EBADF) {
      return;
    }
    throwIoError(dir, "directory sync failed (the last rename in it may not survive a crash)",
                 error);
  }
  ::close(fd);
}

DurableFileWriter::DurableFileWriter(fs::path path)
    : path_(std::move(path)), temp_(path_.string() + tempSuffix()) {
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throwIoError(temp_, "cannot create", errno);
  }
}

DurableFileWriter::~DurableFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void DurableFileWriter::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) {
    throw std::logic_error(path_.string() + ": write after commit");
  }
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throwIoError(temp_, "write failed", errno);  // the destructor removes the temp file
    }
    written += static_cast<std::size_t>(n);
  }
}

void DurableFileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span(text.data(), text.size())));
}

void DurableFileWriter::commit() {
  if (fd_ < 0) {
    throw std::logic_error(path_.string() + ": committed twice");
  }
  const int fd = fd_;
  fd_ = -1;
  if (syncFd(fd) != 0) {
    abandon(fd, temp_, temp_, "fsync failed");
  }
  if (::close(fd) != 0) {
    abandon(-1, temp_, temp_, "close failed");
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    abandon(-1, temp_, path_, "rename failed");
  }
  // The rename itself lives in the directory: sync it too, or a crash may forget it.
  syncDirectory(parentOf(path_));
}

void writeFileDurably(const fs::path& path, std::span<const std::byte> contents) {
  DurableFileWriter out(path);
  out.write(contents);
  out.commit();
}

void writeFileDurably(const fs::path& path, std::string_view contents) {
  writeFileDurably(path, std::as_bytes(std::span(contents.data(), contents.size())));
}

void replaceDirectory(const fs::path& staging, const fs::path& target) {
  const fs::path parent = parentOf(target);
  syncDirectory(staging);
  const fs::path old = parent / ("." + target.filename().string() + ".old" + tempSuffix());
  const bool hadTarget = fs::exists(target);
  if (hadTarget) {
    fs::remove_all(old);
    fs::rename(target, old);
  }
  fs::rename(staging, target);
  syncDirectory(parent);
  if (hadTarget) {
    fs::remove_all(old);
  }
}

namespace testing {

FsyncFunction setFsyncForTesting(FsyncFunction fsync) {
  return gFsync.exchange(fsync);
}

}  // namespace testing

}  // namespace lorascope::common
