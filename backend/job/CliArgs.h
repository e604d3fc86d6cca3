// job/CliArgs.h — the argument parser of lorascope-train, driven by option tables
// (settings/Options.h describes and checks one option).
//
// Every command describes its options once (CommandSpec: name, type, range, default, help); the
// same description parses the command line, checks each value (errors name the option), and
// writes the command's --help and the synopsis in `lorascope-train --help`. Booleans are written
// --flag / --no-flag (also --flag=true, --flag false); other options --name VALUE or
// --name=VALUE; a choice with a flag value (OptionSpec::flagValue) either way.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "settings/Options.h"  // defines: OptionSpec, UsageError, parseOptionValue

namespace lorascope::job {

// Why a file named on the command line (UTF-8) could not be opened: ": no such file (check the
// path)" or ": cannot be read (check its permissions)", to follow its name in a message.
std::string whyUnreadable(const std::string& path);

using settings::checkOptionValue;
using settings::OptionSpec;
using settings::optionText;
using settings::OptionType;
using settings::parseOptionValue;
using settings::UsageError;

struct CommandSpec {
  std::string name = {};      // "train"
  std::string operands = {};  // positional words in the synopsis ("RUN_DIR"), "" when none
  std::string summary = {};   // what the command does, one or two sentences
  std::vector<OptionSpec> options = {};
  // Options to list under a heading of their own in --help: heading → option names (the rest go
  // under "options"). Keeps the train command's long list readable.
  std::vector<std::pair<std::string, std::vector<std::string>>> sections = {};
};

// "--lr X", "--packing/--no-packing": how the option is written.
std::string optionForm(const OptionSpec& spec);
// "[--steps N]"-style synopsis of a command, one line.
std::string synopsis(const CommandSpec& command);
// The command's --help: synopsis, summary, then each option with its help, range and default.
std::string formatHelp(const CommandSpec& command, const std::string& program);

class CliArgs {
 public:
  // Parses `args` against the command's options: anything else starting with "--" is a
  // UsageError naming it, and so is a value the option's spec rejects.
  CliArgs(const std::vector<std::string>& args, const CommandSpec& command);

  // A Bool option given on (--flag, --flag=true).
  bool has(const std::string& flag) const;
  // The value as given on the command line (bools as "true"/"false"); nullopt when absent.
  std::optional<std::string> value(const std::string& option) const;
  std::string required(const std::string& option) const;  // UsageError when absent
  const std::vector<std::string>& positional() const { return positional_; }
  // Every option given, in command-line order (a repeated option: the last one).
  const std::vector<std::pair<std::string, std::string>>& given() const { return given_; }
  bool helpRequested() const { return help_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::pair<std::string, std::string>> given_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

}  // namespace lorascope::job
