// job/CliArgs.h — the argument parser of lorascope-train, driven by option tables.
//
// Every command describes its options once (CommandSpec: name, type, range, default, help); the
// same description parses the command line, checks each value (errors name the option), and
// writes the command's --help and the synopsis in `lorascope-train --help`. Booleans are written
// --flag / --no-flag (also --flag=true, --flag false); other options --name VALUE or
// --name=VALUE.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::job {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why a file named on the command line (UTF-8) could not be opened: ": no such file (check the
// path)" or ": cannot be read (check its permissions)", to follow its name in a message.
std::string whyUnreadable(const std::string& path);

enum class OptionType {
  Bool,     // on/off: --name, --no-name
  Integer,  // whole number within [min, max]
  Real,     // number within [min, max]
  Choice,   // one of `choices`
  List,     // comma-separated items, each one of `choices`
  Text,     // a path or free text
};

struct OptionSpec {
  std::string name = {};  // --name; also the key of --config files and the GUI's start command
  OptionType type = OptionType::Text;
  std::string help = {};  // one sentence, for --help, tooltips and man pages
  // Initialised with {} so that designated initialisers may leave members out.
  std::string defaultText = {};  // as typed on the command line; "" = no default
  double min = 0, max = 0;       // Integer / Real: the accepted range, inclusive (when max ≥ min)
  bool maxExclusive = false;     // Real: max itself is out of range
  std::vector<std::string> choices = {};  // Choice / List
  std::string special = {};               // a word accepted instead of a number ("auto")
  std::string zeroMeans = {};  // what 0 stands for ("by epochs"), shown in help and the GUI
  std::string unit = {};       // "tokens", "optimizer steps", "sequences", …; "" when none
  std::string valueName = {};  // the help's placeholder (N, DIR); derived from the type when empty
  bool emptyAllowed = false;   // Text: "" is a value (none given), not a missing one

  bool hasRange() const {
    return max >= min && (type == OptionType::Integer || type == OptionType::Real);
  }
};

struct CommandSpec {
  std::string name = {};      // "train"
  std::string operands = {};  // positional words in the synopsis ("RUN_DIR"), "" when none
  std::string summary = {};   // what the command does, one or two sentences
  std::vector<OptionSpec> options = {};
  // Options to list under a heading of their own in --help: heading → option names (the rest go
  // under "options"). Keeps the train command's long list readable.
  std::vector<std::pair<std::string, std::vector<std::string>>> sections = {};
};

// The value of `text` for `spec` as JSON (bool, integer, number, string, or an array of strings
// for a List), checked against type, range and choices. Throws UsageError naming --name.
nlohmann::json parseOptionValue(const OptionSpec& spec, const std::string& text);
// The same check for a value that is already JSON (a --config file, the GUI's start command); a
// string is parsed as the command line would.
nlohmann::json checkOptionValue(const OptionSpec& spec, const nlohmann::json& value);
// A value as typed on the command line ("true", "8", "2e-05", "q,k,v").
std::string optionText(const nlohmann::json& value);

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
