// common/Win32Text.h — UTF-8 ↔ UTF-16 for the Win32 implementation files (*Win32.cpp), through
// std::filesystem::path (whose native form on Windows is UTF-16), so no code page is involved.
// Plain C++: included only by *Win32.cpp files.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/OsError.h"  // defines: pathFromUtf8, pathText

namespace lorascope::common {

inline std::wstring wideFromUtf8(std::string_view utf8) {
  return pathFromUtf8(utf8).wstring();
}

inline std::string utf8FromWide(std::wstring_view wide) {
  return pathText(std::filesystem::path(std::wstring(wide)));
}

}  // namespace lorascope::common
