// profiles/ProfileStore.h — built-in plus user profiles; user profiles are JSON files in the
// user's config directory. A bad file is reported, never fatal, and never hides the others.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "profiles/Profile.h"

namespace lorascope::profiles {

// A profile holds a few dozen variables and settings: a few KB. The cap keeps a runaway file (or
// one of 100,000 variables) from being read whole.
inline constexpr std::uint64_t kMaxProfileFileBytes = std::uint64_t{1} << 20;

// The text of a profile file: a regular file of at most kMaxProfileFileBytes. Throws ProfileError
// naming the file ("cannot read: not a regular file", "is 3.00 MiB, more than the 1.00 MiB limit
// of a profile file").
std::string readProfileFile(const std::filesystem::path& path);

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
