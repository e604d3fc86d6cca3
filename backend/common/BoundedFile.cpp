// common/BoundedFile.cpp — readBoundedFile on MappedFile (the platform layer's regular-file check
// and size).
#include "common/BoundedFile.h"

#include "common/Format.h"  // defines: formatBytes
#include "common/MappedFile.h"
#include "common/OsError.h"

namespace lorascope::common {

std::string readBoundedFile(const std::filesystem::path& path, FileSizeLimit limit) {
  const std::unique_ptr<MappedFile> file = MappedFile::openReadOnly(path);
  const std::span<const std::byte> bytes = file->bytes();
  if (bytes.size() > limit.bytes) {
    throw OsError(path,
                  "is " + formatBytes(bytes.size()) + ", more than the " +
                      formatBytes(limit.bytes) + " limit of " + limit.of,
                  {});
  }
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace lorascope::common
