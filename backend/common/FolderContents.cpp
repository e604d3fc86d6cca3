// common/FolderContents.cpp — see FolderContents.h.
#include "common/FolderContents.h"

#include <algorithm>
#include <vector>

#include "common/OsError.h"  // defines: pathText

namespace lorascope::common {

std::string describeFolderEntries(const std::filesystem::path& dir,
                                  const std::filesystem::path& skipName, std::error_code& error) {
  constexpr std::size_t kShown = 5;
  std::vector<std::string> names;
  for (const std::filesystem::directory_entry& entry :
       std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().filename() == skipName)
      continue;
    std::string name = pathText(entry.path().filename());
    for (char& c : name) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        c = '?';
    }
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  std::string text;
  for (std::size_t i = 0; i < std::min(kShown, names.size()); ++i)
    text += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > kShown)
    text += " and " + std::to_string(names.size() - kShown) + " more";
  return text;
}

}  // namespace lorascope::common
