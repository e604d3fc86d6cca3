// common/DurableFile.h — the one crash-safe way to write files and publish folders: write under a
// temp name in the same directory, fsync, rename into place, fsync the directory. A crash leaves
// either the old file (folder) or the new one, never a torn one.
//
// Directory sync: the rename is only durable once the directory itself is synced. When that sync
// fails with an I/O error (EIO, ENOSPC, EACCES opening it, …) the write throws, naming the
// directory: the file is in place but may not survive a crash, and the caller must not report it
// saved. Filesystems that cannot sync a directory at all (EINVAL, ENOTSUP, EBADF: some network
// and FUSE mounts) count as synced: there is nothing more to do there, and failing every save on
// them would lose more than it protects.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/OsFile.h"

namespace lorascope::common {

// Writes `contents` to `path` durably (temp file, fsync, rename, directory fsync). Throws
// OsError (a std::runtime_error) naming the path (or the directory) and the failing step, with
// the system's words for the error.
void writeFileDurably(const std::filesystem::path& path, std::string_view contents);
void writeFileDurably(const std::filesystem::path& path, std::span<const std::byte> contents);

// A file written sequentially under a temp name and renamed into place by commit(); destroying
// it uncommitted removes the temp file. For large outputs produced piece by piece (a merged
// model's safetensors is streamed tensor by tensor, never held twice in memory).
class DurableFileWriter {
 public:
  explicit DurableFileWriter(std::filesystem::path path);
  ~DurableFileWriter();
  DurableFileWriter(const DurableFileWriter&) = delete;
  DurableFileWriter& operator=(const DurableFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  void commit();  // fsync, close, rename, fsync of the directory

 private:
  std::filesystem::path path_;
  std::filesystem::path temp_;
  std::optional<OutputFile> file_;  // empty once committed
};

// fsync of a directory, so that renames and unlinks inside it survive a crash. Throws OsError
// naming it on an I/O error; see the top of this file for what counts as one. (On Windows the
// rename is written through (MOVEFILE_WRITE_THROUGH) and a directory has no sync of its own.)
void syncDirectory(const std::filesystem::path& dir);

// Publishes the complete folder `staging` as `target` durably: staging synced, an existing target
// moved aside, staging renamed into place, the parent synced, the old one deleted.
void replaceDirectory(const std::filesystem::path& staging, const std::filesystem::path& target);

// The suffix of this process's temp names (".tmp-<pid>"), so that a leftover is recognisable.
std::string tempSuffix();
// Whether `name` ends in another process's tempSuffix() and that process is gone: a leftover of
// a writer that was killed, never to be completed.
bool isStaleTempName(const std::string& name);

// Tests make the syncs fail through common/OsFile.h's testing::setSyncForTesting.

}  // namespace lorascope::common
