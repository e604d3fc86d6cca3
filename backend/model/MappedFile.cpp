// MappedFile.cpp — mmap/munmap with errors naming the file.
#include "model/MappedFile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "model/ModelError.h"

namespace lorascope::model {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw ModelError(path, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const std::string why = S_ISREG(info.st_mode) ? std::strerror(errno) : "not a regular file";
    ::close(fd);
    throw ModelError(path, "cannot read: " + why);
  }
  const auto size = static_cast<std::size_t>(info.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw ModelError(path, std::string("cannot memory-map: ") + std::strerror(err));
    }
  }
  ::close(fd);  // the mapping keeps the file alive
  return std::make_shared<const MappedFile>(OpenedByOpen{}, path,
                                            static_cast<const std::byte*>(data), size);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) {
    ::munmap(const_cast<std::byte*>(data_), size_);
  }
}

}  // namespace lorascope::model
