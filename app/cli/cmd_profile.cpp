// cli/cmd_profile.cpp — `lorascope-train profile check FILE...`: reads stability-profile files
// with the same rules as the GUI (allow-listed environment variables, value sizes, toggles,
// allocator settings, a name no built-in profile has) and prints each one's verdict and notes.
// Exit 0 when every file is a valid profile, 1 otherwise.
#include <filesystem>
#include <iostream>

#include "cli/Commands.h"
#include "common/OsError.h"  // defines: pathFromUtf8
#include "job/CliArgs.h"
#include "profiles/Builtins.h"
#include "profiles/ProfileJson.h"
#include "profiles/ProfileStore.h"  // defines: readProfileFile

namespace lorascope::cli {

const job::CommandSpec& profileCommand() {
  static const job::CommandSpec command{
      .name = "profile",
      .operands = "check FILE...",
      .summary =
          "Checks stability-profile files with the GUI's rules (allow-listed environment "
          "variables, value sizes, toggles, allocator settings, a name no built-in "
          "profile has). Exit 0 when every file is a valid profile, 1 otherwise, 2 on a usage "
          "error.",
      .options = {},
  };
  return command;
}

int runProfile(const Args& args) {
  const job::CliArgs parsed(args, profileCommand());
  const std::vector<std::string>& words = parsed.positional();
  if (words.size() < 2 || words[0] != "check") {
    throw job::UsageError("expects: profile check FILE... (a profile JSON file, as the GUI saves)");
  }
  int failed = 0;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& file = words[i];
    std::error_code missing;
    if (!std::filesystem::exists(common::pathFromUtf8(file), missing)) {
      std::cerr << file << job::whyUnreadable(file) << "\n";
      ++failed;
      continue;
    }
    std::string text;
    try {
      text = profiles::readProfileFile(common::pathFromUtf8(file));  // UTF-8, not the code page
    } catch (const profiles::ProfileError& e) {
      std::cerr << e.what() << "\n";
      ++failed;
      continue;
    }
    try {
      const profiles::ParsedProfile profile = profiles::parseProfile(text, file);
      for (const profiles::Profile& builtin : profiles::builtinProfiles()) {
        if (builtin.name == profile.profile.name) {
          throw profiles::ProfileError(file + ": name: '" + builtin.name +
                                       "' is a built-in profile's name; rename it");
        }
      }
      // Every variable the file sets: those the engine reads, and those only mapped or passed on
      // to external trainers.
      const std::size_t variables =
          profile.profile.environment.size() + profile.profile.externalEnvironment.size();
      std::cout << file << ": profile '" << profile.profile.name << "' is valid (" << variables
                << " environment variable" << (variables == 1 ? "" : "s") << ")\n";
      for (const profiles::ProfileNote& note : profile.notes) {
        std::cout << "  note: " << note.field << ": " << note.message << "\n";
      }
    } catch (const profiles::ProfileError& e) {
      std::cerr << e.what() << "\n";
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace lorascope::cli
