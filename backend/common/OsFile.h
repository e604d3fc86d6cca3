// common/OsFile.h — files written through the operating system's own calls, where std::ofstream
// cannot say what is needed: a sync to the disk (fsync, FlushFileBuffers), an append that never
// truncates, a rename that replaces the target. DurableFile.cpp builds the crash-safe writes on
// these; OsFilePosix.cpp and OsFileWin32.cpp implement them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <system_error>

namespace lorascope::common {

class OutputFile {
 public:
  enum class Mode {
    Truncate,  // created or emptied
    Append,    // created or appended to
  };
  // Throws OsError ("cannot create", "cannot open for append").
  OutputFile(const std::filesystem::path& path, Mode mode);
  ~OutputFile();  // closes without syncing; errors are lost here, call close() to see them
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes all of `bytes`; throws OsError ("write failed").
  void write(std::span<const std::byte> bytes);
  void write(std::string_view text) { write(std::as_bytes(std::span(text.data(), text.size()))); }
  // Flushes the file's data to the disk; throws OsError ("fsync failed").
  void sync();
  // Throws OsError ("close failed"); a second call does nothing.
  void close();

 private:
  std::filesystem::path path_;
  std::intptr_t handle_ = -1;  // a POSIX descriptor or a Win32 HANDLE; -1 when closed
};

// Renames `from` to `to`, replacing a file at `to` in one step; throws OsError naming `to`
// ("rename failed").
void renameReplacing(const std::filesystem::path& from, const std::filesystem::path& to);

// The sync of a directory's entries (a rename into it): the system's error, or none;
// DurableFile.h's syncDirectory decides which errors count. Throws OsError when the directory
// cannot be opened.
std::error_code syncDirectoryEntries(const std::filesystem::path& dir);

namespace testing {
// Replaces every sync above (OutputFile::sync, syncDirectoryEntries) and a shared mapping's
// (MappedFile::flush, isDirectory false) with `hook`: its answer is the sync's result (none:
// synced). nullptr restores the real syncs; returns the previous hook. Only for tests that make
// a sync fail (tests/common/test_durable_file.cpp, tests/engine/test_state_mirror.cpp).
using SyncHook = std::error_code (*)(bool isDirectory);
SyncHook setSyncForTesting(SyncHook hook);
// The implementations' side: true (with the hook's answer in *error) when a hook is installed.
bool injectedSync(bool isDirectory, std::error_code* error);
}  // namespace testing

}  // namespace lorascope::common
