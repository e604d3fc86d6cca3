// common/OsFileWin32.cpp — OsFile.h on Windows: CreateFileW/WriteFile/FlushFileBuffers,
// MoveFileExW(MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH). A directory has no sync of its
// own on Windows: the write-through rename is what makes it durable, so syncDirectoryEntries
// only checks that the directory can be opened.
#include <windows.h>

#include <algorithm>

#include "common/OsError.h"
#include "common/OsFile.h"

namespace lorascope::common {
namespace {

std::error_code lastError() {
  return {static_cast<int>(::GetLastError()), std::system_category()};
}

HANDLE asHandle(std::intptr_t handle) {
  return reinterpret_cast<HANDLE>(handle);
}

constexpr DWORD kShareAll = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

}  // namespace

OutputFile::OutputFile(const std::filesystem::path& path, Mode mode) : path_(path) {
  const HANDLE file = ::CreateFileW(path.c_str(), GENERIC_WRITE, kShareAll, nullptr,
                                    mode == Mode::Append ? OPEN_ALWAYS : CREATE_ALWAYS,
                                    FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) {
    throw OsError(path, mode == Mode::Append ? "cannot open for append" : "cannot create",
                  lastError());
  }
  handle_ = reinterpret_cast<std::intptr_t>(file);
  if (mode == Mode::Append) {
    LARGE_INTEGER zero{};
    ::SetFilePointerEx(file, zero, nullptr, FILE_END);
  }
}

OutputFile::~OutputFile() {
  if (handle_ != -1) {
    ::CloseHandle(asHandle(handle_));
  }
}

void OutputFile::write(std::span<const std::byte> bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const DWORD chunk =
        static_cast<DWORD>(std::min<std::size_t>(bytes.size() - written, DWORD{1} << 30));
    DWORD n = 0;
    if (!::WriteFile(asHandle(handle_), bytes.data() + written, chunk, &n, nullptr)) {
      throw OsError(path_, "write failed", lastError());
    }
    written += n;
  }
}

void OutputFile::sync() {
  std::error_code error;
  if (!testing::injectedSync(false, &error) && !::FlushFileBuffers(asHandle(handle_))) {
    error = lastError();
  }
  if (error) {
    throw OsError(path_, "fsync failed", error);
  }
}

void OutputFile::close() {
  if (handle_ == -1) {
    return;
  }
  const HANDLE file = asHandle(handle_);
  handle_ = -1;
  if (!::CloseHandle(file)) {
    throw OsError(path_, "close failed", lastError());
  }
}

void renameReplacing(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (!::MoveFileExW(from.c_str(), to.c_str(),
                     MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
    throw OsError(to, "rename failed", lastError());
  }
}

std::error_code syncDirectoryEntries(const std::filesystem::path& dir) {
  const HANDLE handle = ::CreateFileW(dir.c_str(), FILE_LIST_DIRECTORY, kShareAll, nullptr,
                                      OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
  if (handle == INVALID_HANDLE_VALUE) {
    throw OsError(dir, "cannot open the directory to sync it", lastError());
  }
  ::CloseHandle(handle);
  std::error_code error;
  testing::injectedSync(true, &error);
  return error;
}

}  // namespace lorascope::common
