// common/SharedLibraryWin32.cpp — SharedLibrary.h with LoadLibraryW/GetProcAddress/FreeLibrary.
// Names are UTF-8 and reach the system as UTF-16.
#include <windows.h>

#include <cstring>

#include "common/SharedLibrary.h"
#include "common/Win32Text.h"

namespace lorascope::common {

std::unique_ptr<SharedLibrary> SharedLibrary::open(const std::string& name, std::string* error) {
  // No "cannot find the DLL" message box: a missing vendor library is an ordinary answer.
  const UINT previous = ::SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOOPENFILEERRORBOX);
  const HMODULE module = ::LoadLibraryW(wideFromUtf8(name).c_str());
  const DWORD code = ::GetLastError();
  ::SetErrorMode(previous);
  if (module == nullptr) {
    *error = name + ": " + std::system_category().message(static_cast<int>(code));
    return nullptr;
  }
  return std::unique_ptr<SharedLibrary>(new SharedLibrary(static_cast<void*>(module)));
}

SharedLibrary::~SharedLibrary() {
  ::FreeLibrary(static_cast<HMODULE>(handle_));
}

void* SharedLibrary::symbol(const char* symbol) const {
  const FARPROC address = ::GetProcAddress(static_cast<HMODULE>(handle_), symbol);
  void* pointer = nullptr;
  static_assert(sizeof pointer == sizeof address);
  std::memcpy(&pointer, &address, sizeof pointer);
  return pointer;
}

}  // namespace lorascope::common
