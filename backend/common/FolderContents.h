// common/FolderContents.h — what a folder holds, said in a message: the check of a folder a run
// is about to write into (a run's --out, a supervised command's run folder) names what is there.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

namespace lorascope::common {

// The entries of `dir`, but the one named `skipName` (a run's lock file, which a run killed as it
// began leaves behind), described for a message: "" when there are none, else the first five names
// sorted ("config.json, hosts, passwd and 212 more"), control characters shown as '?' (a newline in
// a file name could forge a line). Sets `error` when `dir` cannot be listed.
std::string describeFolderEntries(const std::filesystem::path& dir,
                                  const std::filesystem::path& skipName, std::error_code& error);

}  // namespace lorascope::common
