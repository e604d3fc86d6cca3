// profiles/ProfileStore.cpp — user profile files: listing, loading, atomic saving, removal.
#include "profiles/ProfileStore.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "common/BoundedFile.h"
#include "common/DurableFile.h"
#include "common/OsError.h"  // defines: pathText
#include "common/Platform.h"
#include "profiles/Builtins.h"
#include "profiles/ProfileJson.h"

namespace lorascope::profiles {
namespace fs = std::filesystem;

namespace {

bool isBuiltinName(const std::string& name) {
  return std::any_of(builtinProfiles().begin(), builtinProfiles().end(),
                     [&](const Profile& p) { return p.name == name; });
}

}  // namespace

std::string readProfileFile(const fs::path& path) {
  try {
    return common::readBoundedFile(path, {kMaxProfileFileBytes, "a profile file"});
  } catch (const common::OsError& e) {
    throw ProfileError(common::pathText(path) + ": " + e.detail());
  }
}

ProfileStore::ProfileStore(fs::path userDir) : userDir_(std::move(userDir)) {}

fs::path ProfileStore::defaultUserDir() {
  return common::userConfigDirectory() / "profiles";
}

ProfileListing ProfileStore::load() const {
  ProfileListing listing;
  for (const Profile& p : builtinProfiles()) {
    listing.profiles.push_back({p, {}});
  }
  std::error_code ec;
  if (!fs::is_directory(userDir_, ec)) {
    return listing;  // no user profiles yet: a normal state
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(userDir_, ec)) {
    if (entry.path().extension() == ".json") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<ParsedProfile> user;
  std::map<std::string, fs::path> fileOfName;
  for (const fs::path& file : files) {
    try {
      ParsedProfile parsed = parseProfile(readProfileFile(file), common::pathText(file));
      if (isBuiltinName(parsed.profile.name)) {
        listing.problems.push_back({file, "uses the name of a built-in profile ('" +
                                              parsed.profile.name + "'); rename it"});
        continue;
      }
      // Two files of one name: the first in file-name order is loaded, the other reported.
      if (const auto [first, added] = fileOfName.emplace(parsed.profile.name, file); !added) {
        listing.problems.push_back({file, "uses the name '" + parsed.profile.name + "', which " +
                                              common::pathText(first->second) +
                                              " already has; rename one of them"});
        continue;
      }
      user.push_back(std::move(parsed));
    } catch (const ProfileError& e) {
      listing.problems.push_back({file, e.what()});
    }
  }
  std::sort(user.begin(), user.end(), [](const ParsedProfile& a, const ParsedProfile& b) {
    return a.profile.name < b.profile.name;
  });
  listing.profiles.insert(listing.profiles.end(), user.begin(), user.end());
  return listing;
}

fs::path ProfileStore::fileFor(const std::string& name) const {
  // ASCII letters and digits as they are (lower case), other ASCII as '-', and each byte of a
  // non-ASCII letter as '_' and two hex digits: "日本" and "中国" are two files, not one "------".
  std::string slug;
  for (char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      constexpr const char* kHex = "0123456789abcdef";
      slug += {'_', kHex[byte >> 4], kHex[byte & 0xf]};
      continue;
    }
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    slug += keep ? static_cast<char>(std::tolower(byte)) : '-';
  }
  return userDir_ / (slug + ".json");
}

fs::path ProfileStore::save(const Profile& profile) const {
  if (isBuiltinName(profile.name)) {
    throw ProfileError("'" + profile.name + "' is a built-in profile; save under another name");
  }
  const std::string json = profileToJson(profile);
  parseProfile(json, "profile '" + profile.name + "'");  // refuse to write what we cannot read
  fs::create_directories(userDir_);
  const fs::path path = fileFor(profile.name);
  common::writeFileDurably(path, json);
  return path;
}

bool ProfileStore::remove(const std::string& name) const {
  for (const ParsedProfile& p : load().profiles) {
    if (!p.profile.builtin && p.profile.name == name) {
      return fs::remove(fileFor(name));
    }
  }
  return false;
}

}  // namespace lorascope::profiles
