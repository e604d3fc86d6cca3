// common/FileLockWin32.cpp — FileLock.h on Windows: LockFileEx (exclusive, failing at once) on one
// byte of the file, held by the handle: a second handle, in this process or another, is refused,
// and the system releases it when the handle's process ends. The locked byte is past the holder
// record, which other processes must be able to read.
#include <windows.h>

#include "common/FileLock.h"
#include "common/OsError.h"
#include "common/Platform.h"

namespace lorascope::common {
namespace {

std::error_code lastError() {
  return {static_cast<int>(::GetLastError()), std::system_category()};
}

OVERLAPPED lockedRange() {
  OVERLAPPED where{};
  where.Offset = static_cast<DWORD>(kLockedByteOffset & 0xffffffffu);
  where.OffsetHigh = static_cast<DWORD>(kLockedByteOffset >> 32);
  return where;
}

std::string readRecord(HANDLE file) {
  char buffer[256];
  OVERLAPPED start{};
  DWORD n = 0;
  if (!::ReadFile(file, buffer, sizeof buffer, &n, &start)) {
    return {};
  }
  return std::string(buffer, n);
}

}  // namespace

FileLock::FileLock(const std::filesystem::path& path) : path_(path) {
  for (int attempt = 1;; ++attempt) {
    const HANDLE file = ::CreateFileW(path.c_str(), GENERIC_READ | GENERIC_WRITE,
                                      FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                                      nullptr, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (file == INVALID_HANDLE_VALUE) {
      throw OsError(path, "cannot open the lock file", lastError());
    }
    if (::GetFileType(file) != FILE_TYPE_DISK) {
      ::CloseHandle(file);
      throw OsError(path, "the lock file is not a regular file", {});
    }
    OVERLAPPED where = lockedRange();
    if (!::LockFileEx(file, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &where)) {
      const DWORD code = ::GetLastError();
      if (code == ERROR_LOCK_VIOLATION || code == ERROR_IO_PENDING) {
        LockHolder holder = currentLockHolder([file] { return readRecord(file); });
        ::CloseHandle(file);
        throw LockBusy(path, std::move(holder));
      }
      ::CloseHandle(file);
      throw OsError(path, "cannot lock", {static_cast<int>(code), std::system_category()});
    }
    // A holder may remove the file before it lets go (FileLock::removeFile): the lock of a file
    // being deleted keeps no one out, so the file now at `path` is locked instead.
    FILE_STANDARD_INFO standard{};
    if (::GetFileInformationByHandleEx(file, FileStandardInfo, &standard, sizeof standard) &&
        standard.DeletePending) {
      ::CloseHandle(file);
      if (attempt < kLockAttempts) {
        continue;
      }
      throw OsError(path, "the lock file was removed each time it was locked", {});
    }
    const std::string record = lockHolderText(currentProcessId());
    OVERLAPPED start{};
    DWORD written = 0;
    LARGE_INTEGER zero{};
    if (!::SetFilePointerEx(file, zero, nullptr, FILE_BEGIN) || !::SetEndOfFile(file) ||
        !::WriteFile(file, record.data(), static_cast<DWORD>(record.size()), &written, &start) ||
        written != record.size()) {
      const std::error_code error = lastError();
      ::CloseHandle(file);
      throw OsError(path, "cannot write the lock's holder", error);
    }
    handle_ = reinterpret_cast<std::intptr_t>(file);
    return;
  }
}

FileLock::~FileLock() {
  const HANDLE file = reinterpret_cast<HANDLE>(handle_);
  OVERLAPPED where = lockedRange();
  ::UnlockFileEx(file, 0, 1, 0, &where);
  ::CloseHandle(file);
}

}  // namespace lorascope::common
