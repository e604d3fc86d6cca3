// common/ChildProcessParts.h — what ChildProcess's three files share (internal to them): the
// OS-independent rules, written once here and in ChildProcess.cpp, and the few facts each
// platform file (ChildProcessPosix.cpp, ChildProcessWin32.cpp) supplies for them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lorascope::common::child {

// The child's environment: the entries of `current` ("NAME=value") whose name no override sets,
// in their order, then each override as "NAME=value". `sameName` compares two names (case
// matters on POSIX, not on Windows). A name ends at the first '=' after its first character:
// Windows keeps "=C:=C:\dir" entries that name a drive's current folder.
template <typename Char, typename SameName>
std::vector<std::basic_string<Char>> environmentWith(
    const std::vector<std::basic_string_view<Char>>& current,
    const std::vector<std::pair<std::basic_string<Char>, std::basic_string<Char>>>& overrides,
    SameName sameName) {
  std::vector<std::basic_string<Char>> entries;
  for (const std::basic_string_view<Char> entry : current) {
    const std::basic_string_view<Char> name = entry.substr(0, entry.find(Char('='), 1));
    bool overridden = false;
    for (const auto& [key, value] : overrides) {
      overridden = overridden || sameName(std::basic_string_view<Char>(key), name);
    }
    if (!overridden) {
      entries.emplace_back(entry);
    }
  }
  for (const auto& [key, value] : overrides) {
    entries.push_back(key + Char('=') + value);
  }
  return entries;
}

// Supplied by the platform file, for findExecutable (ChildProcess.cpp):
// the separator of PATH's folders (':' or ';'),
extern const char kPathListSeparator;
// the folders searched: PATH's value (UTF-8), or the platform's default when it is unset,
std::string searchPath();
// whether `name` names a folder too (then it is taken as it is, not searched for),
bool namesFolder(const std::string& name);
// and the executable file `candidate` stands for ("" when none): itself where it is an
// executable file; on Windows also `candidate` with each of PATHEXT's extensions.
std::string executableAt(const std::filesystem::path& candidate);

}  // namespace lorascope::common::child
