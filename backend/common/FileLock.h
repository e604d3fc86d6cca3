// common/FileLock.h — one holder at a time for a file, across processes: an operating-system lock
// (an open-file-description lock, fcntl F_OFD_SETLK, on POSIX; LockFileEx on Windows) that the
// system drops when its holder's process ends, however it ends. So a lock left by a process that
// was killed is no lock at all: the next one to ask takes it over, and rewrites the holder record.
// Two locks of one file in the same process exclude each other too (they are per open file, not
// per process as classic fcntl locks are). The file also holds its holder's process id and the
// time it took the lock, for the message of whoever is refused.
// FileLock.cpp has the holder record; FileLockPosix.cpp and FileLockWin32.cpp the system calls.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace lorascope::common {

// The lock file of a run folder (LoRAscope's own runs and supervised commands' runs): held by the
// run's one writer.
inline constexpr const char* kRunLockFile = "run.lock";

// Who holds a lock, as its file records it.
struct LockHolder {
  std::uint32_t pid = 0;  // 0: not recorded yet (the holder is between taking and writing)
  std::string started;    // when it took the lock, UTC ("2026-11-28T23:50:00Z"); "" when unknown
  // "pid 1234, since 2026-11-28T23:50:00Z" (or "a process whose id is not recorded yet").
  std::string describe() const;
};

// The lock is held by someone else (another process, or another FileLock of this process).
class LockBusy : public std::runtime_error {
 public:
  LockBusy(const std::filesystem::path& path, LockHolder holder);
  const LockHolder& holder() const { return holder_; }

 private:
  LockHolder holder_;
};

class FileLock {
 public:
  // Takes the lock of `path` (the file is created when missing; its folder must exist) and
  // records this process and the time in it. Throws LockBusy when it is held, OsError when the
  // file cannot be opened or written.
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();  // releases it (the file stays, unless removeFile removed it before)
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Removes the lock file while the lock is still held (released as ever, by the destructor):
  // for a holder that gives up a folder it made, to leave nothing behind. The next one to ask
  // makes a new file; one that had opened this file before and locks it after the release sees
  // that it is gone and locks the new one. On Windows the name stays until the release (the file
  // is delete-pending: no one can open it) and goes with it. False when it could not be removed.
  bool removeFile() const;

 private:
  std::filesystem::path path_;
  std::intptr_t handle_ = -1;  // a POSIX descriptor or a Win32 HANDLE
};

// The holder record of a lock file: its text, and back. Used by the platform files.
std::string lockHolderText(std::uint32_t pid);  // this moment as the start time
LockHolder parseLockHolder(const std::string& text);
// The holder of a lock held by another, from `readRecord` (the file's text). One that has just
// taken the lock may not have written its record yet (or the previous holder's is still there):
// asked again for up to a second while the record names no live process.
LockHolder currentLockHolder(const std::function<std::string()>& readRecord);
// How often a lock is tried again when the file it locked turns out removed (removeFile).
inline constexpr int kLockAttempts = 10;
// The byte of the file that is locked: past the record, because a Windows lock also keeps other
// processes from reading the bytes it covers.
inline constexpr std::uint64_t kLockedByteOffset = std::uint64_t{1} << 30;

}  // namespace lorascope::common
