// common/MappedFileWin32.cpp — MappedFile.h with CreateFileW/CreateFileMappingW/MapViewOfFile;
// FlushViewOfFile then FlushFileBuffers for flush(). Files are opened with every share mode, so
// that a reader (the supervisor reading the state mirror) and a rename are never refused.
#include <windows.h>

#include "common/MappedFile.h"
#include "common/OsError.h"
#include "common/OsFile.h"  // defines: testing::injectedSync

namespace lorascope::common {
namespace {

std::error_code lastError() {
  return {static_cast<int>(::GetLastError()), std::system_category()};
}

constexpr DWORD kShareAll = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

// Closes a handle on every path out.
struct Handle {
  HANDLE h;
  ~Handle() {
    if (h != nullptr && h != INVALID_HANDLE_VALUE) {
      ::CloseHandle(h);
    }
  }
  HANDLE release() {
    const HANDLE kept = h;
    h = nullptr;
    return kept;
  }
};

// Maps `bytes` of `file` (not 0); throws OsError for `path`.
void* mapView(const std::filesystem::path& path, HANDLE file, std::size_t bytes, bool writable) {
  const auto size = static_cast<std::uint64_t>(bytes);
  const Handle mapping{
      ::CreateFileMappingW(file, nullptr, writable ? PAGE_READWRITE : PAGE_READONLY,
                           static_cast<DWORD>(size >> 32), static_cast<DWORD>(size), nullptr)};
  if (mapping.h == nullptr) {
    throw OsError(path, writable ? "cannot map" : "cannot memory-map", lastError());
  }
  void* view = ::MapViewOfFile(mapping.h, writable ? FILE_MAP_WRITE : FILE_MAP_READ, 0, 0, bytes);
  if (view == nullptr) {
    throw OsError(path, writable ? "cannot map" : "cannot memory-map", lastError());
  }
  return view;  // the view keeps the mapping object alive once its handle closes
}

}  // namespace

std::unique_ptr<MappedFile> MappedFile::openReadOnly(const std::filesystem::path& path) {
  const Handle file{::CreateFileW(path.c_str(), GENERIC_READ, kShareAll, nullptr, OPEN_EXISTING,
                                  FILE_ATTRIBUTE_NORMAL, nullptr)};
  if (file.h == INVALID_HANDLE_VALUE) {
    throw OsError(path, "cannot open", lastError());
  }
  if (::GetFileType(file.h) != FILE_TYPE_DISK) {
    throw OsError(path, "cannot read: not a regular file", {});
  }
  LARGE_INTEGER size{};
  if (!::GetFileSizeEx(file.h, &size)) {
    throw OsError(path, "cannot read", lastError());
  }
  const auto bytes = static_cast<std::size_t>(size.QuadPart);
  void* data = bytes > 0 ? mapView(path, file.h, bytes, false) : nullptr;
  return std::unique_ptr<MappedFile>(
      new MappedFile(path, static_cast<std::byte*>(data), bytes, -1));
}

std::unique_ptr<MappedFile> MappedFile::openShared(const std::filesystem::path& path,
                                                   std::size_t bytes, bool* resized) {
  Handle file{::CreateFileW(path.c_str(), GENERIC_READ | GENERIC_WRITE, kShareAll, nullptr,
                            OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr)};
  if (file.h == INVALID_HANDLE_VALUE) {
    throw OsError(path, "cannot open", lastError());
  }
  LARGE_INTEGER size{};
  *resized = !::GetFileSizeEx(file.h, &size) || static_cast<std::size_t>(size.QuadPart) != bytes;
  if (*resized) {
    LARGE_INTEGER end{};
    end.QuadPart = static_cast<LONGLONG>(bytes);
    if (!::SetFilePointerEx(file.h, end, nullptr, FILE_BEGIN) || !::SetEndOfFile(file.h)) {
      throw OsError(path, "cannot size", lastError());
    }
  }
  void* data = mapView(path, file.h, bytes, true);
  return std::unique_ptr<MappedFile>(new MappedFile(
      path, static_cast<std::byte*>(data), bytes, reinterpret_cast<std::intptr_t>(file.release())));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) {
    ::UnmapViewOfFile(data_);
  }
  if (handle_ != -1) {
    ::CloseHandle(reinterpret_cast<HANDLE>(handle_));
  }
}

void MappedFile::flush(std::size_t offset, std::size_t count, const char* what) {
  std::error_code injected;
  if (testing::injectedSync(false, &injected)) {
    if (injected) {
      throw OsError(path_, std::string(what) + " failed", injected);
    }
    return;
  }
  if (!::FlushViewOfFile(data_ + offset, count) ||
      (handle_ != -1 && !::FlushFileBuffers(reinterpret_cast<HANDLE>(handle_)))) {
    throw OsError(path_, std::string(what) + " failed", lastError());
  }
}

}  // namespace lorascope::common
