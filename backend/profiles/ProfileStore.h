// profiles/ProfileStore.h — built-in plus user profiles; user profiles are JSON files in the
// user's config directory. A bad file is reported, never fatal, and never hides the others.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "profiles/Profile.h"

namespace lorascope::profiles {

struct ProfileLoadProblem {
  std::filesystem::path file;
  std::string message;
};

struct ProfileListing {
  std::vector<ParsedProfile> profiles;  // built-ins first, then user profiles by name
  std::vector<ProfileLoadProblem> problems;
};

class ProfileStore {
 public:
  explicit ProfileStore(std::filesystem::path userDir);

  // $XDG_CONFIG_HOME/LoRAscope/profiles, else ~/.config/LoRAscope/profiles
  // (%APPDATA%\LoRAscope\profiles on Windows).
  static std::filesystem::path defaultUserDir();

  const std::filesystem::path& userDir() const { return userDir_; }
  ProfileListing load() const;
  // Writes <userDir>/<slug of name>.json atomically; refuses built-in names. Returns the path.
  std::filesystem::path save(const Profile& profile) const;
  // Deletes a user profile by name; false when there is none of that name.
  bool remove(const std::string& name) const;

 private:
  std::filesystem::path fileFor(const std::string& name) const;
  std::filesystem::path userDir_;
};

}  // namespace lorascope::profiles
