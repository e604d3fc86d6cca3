// common/BoundedFile.h — reading a whole small file that a user names (a model's config.json or
// tokenizer.json, a profile) without trusting it: it must be a regular file (a link to /dev/zero
// would grow until memory ran out, a FIFO would block for good) of at most a stated size, and
// the refusal names the limit. The check is MappedFile's (model.safetensors is opened the same
// way); the bytes are copied out and the mapping dropped. And reading a small file the system
// writes (procfs), whose read may fail after it opened.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>
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

// The whole of a small file the system writes (/proc/<pid>/stat), or nothing when it cannot be
// opened or its read fails: a process that ends between the open and the read fails it with
// ESRCH. Never throws for either. (Read through std::istreambuf_iterator, the filebuf's read error
// was an exception nothing caught: the window, walking /proc for its process tree while a
// process ended, was terminated.)
std::optional<std::string> readSystemFile(const std::filesystem::path& path);

// The rest of an open stream, or nothing when a read fails (through istream::read, which turns
// the filebuf's exception into badbit). readSystemFile's reader, and the state mirror's.
std::optional<std::string> readToEnd(std::istream& in);

}  // namespace lorascope::common
