// common/BoundedFile.h — reading a whole small file that a user names (a model's config.json or
// tokenizer.json, a profile) without trusting it: it must be a regular file (a link to /dev/zero
// would grow until memory ran out, a FIFO would block for good) of at most a stated size, and
// the refusal names the limit. The check is MappedFile's (model.safetensors is opened the same
// way); the bytes are copied out and the mapping dropped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace lorascope::common {

// A cap and what it is for, as the refusal says it: "... more than the 64.00 MiB limit of a
// model's JSON file".
struct FileSizeLimit {
  std::uint64_t bytes;
  const char* of;  // "a model's JSON file"
};

// The whole file. Throws OsError naming `path`: "cannot open", "cannot read: not a regular file",
// or "is 1.20 GiB, more than the 64.00 MiB limit of a model's JSON file".
std::string readBoundedFile(const std::filesystem::path& path, FileSizeLimit limit);

}  // namespace lorascope::common
