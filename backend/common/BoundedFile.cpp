// common/BoundedFile.cpp — readBoundedFile on MappedFile (the platform layer's regular-file check
// and size); readSystemFile on a stream whose read errors become an answer.
#include "common/BoundedFile.h"

#include <fstream>

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

std::optional<std::string> readSystemFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  return readToEnd(in);
}

std::optional<std::string> readToEnd(std::istream& in) {
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    return std::nullopt;
  }
  return text;
}

}  // namespace lorascope::common
