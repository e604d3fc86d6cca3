// common/ChildProcess.cpp — the OS-independent part of ChildProcess.h: the search of PATH.
// ChildProcessPosix.cpp and ChildProcessWin32.cpp supply the platform's facts
// (ChildProcessParts.h).
#include "common/ChildProcess.h"

#include <sstream>

#include "common/ChildProcessParts.h"
#include "common/OsError.h"  // defines: pathFromUtf8

namespace lorascope::common {

std::string findExecutable(const std::string& name) {
  if (name.empty())
    return "";
  if (child::namesFolder(name))
    return child::executableAt(pathFromUtf8(name));
  std::istringstream folders(child::searchPath());
  for (std::string folder; std::getline(folders, folder, child::kPathListSeparator);) {
    const std::string found = child::executableAt(
        pathFromUtf8(folder.empty() ? std::string(".") : folder) / pathFromUtf8(name));
    if (!found.empty())
      return found;
  }
  return "";
}

}  // namespace lorascope::common
