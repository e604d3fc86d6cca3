// settings/Options.h — an option's value as a person types it: its type, range or choices, default
// and help (OptionSpec), and the one check of a value against it. The run settings
// (settings/Registry.h) and every command of lorascope-train (job/CliArgs.h) describe their
// options with it; the check serves the command line, --config files, the GUI's start command and
// config.json alike, and its errors name the option (--name).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::settings {

// A value or an option that cannot be used; the message names the option.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
  // Choice: the choice `--name` alone means, so that the option is also written as a flag (a
  // setting that was a Bool and grew more values: --packing is causal). --no-name and the words
  // of a boolean then mean choices[0] (false) and this (true), in files as on the command line.
  std::string flagValue = {};

  bool hasRange() const {
    return max >= min && (type == OptionType::Integer || type == OptionType::Real);
  }
};

// Builders that keep a table entry on a few lines.
OptionSpec integerOption(std::string name, double min, double max, std::string defaultText,
                         std::string unit, std::string help);
OptionSpec realOption(std::string name, double min, double max, std::string defaultText,
                      std::string unit, std::string help);
OptionSpec boolOption(std::string name, std::string defaultText, std::string help);
OptionSpec choiceOption(std::string name, std::vector<std::string> choices, std::string defaultText,
                        std::string help);
OptionSpec textOption(std::string name, std::string valueName, std::string help);
OptionSpec withZero(OptionSpec spec, std::string zeroMeans);  // what 0 stands for

// The value of `text` for `spec` as JSON (bool, integer, number, string, or an array of strings
// for a List), checked against type, range and choices. Throws UsageError naming --name.
nlohmann::json parseOptionValue(const OptionSpec& spec, const std::string& text);
// The same check for a value that is already JSON (a --config file, the GUI's start command); a
// string is parsed as the command line would.
nlohmann::json checkOptionValue(const OptionSpec& spec, const nlohmann::json& value);
// A value as typed on the command line ("true", "8", "2e-05", "q,k,v").
std::string optionText(const nlohmann::json& value);

// The words of a boolean as typed: true/on/1/yes, false/off/0/no.
std::optional<bool> boolWord(const std::string& text);
// The value's placeholder in help: N, X, vendor|builtin, DIR.
std::string optionPlaceholder(const OptionSpec& spec);
// "an integer from 1 to 4096", "a number in [0, 0.9)" (", or auto" with a special word).
std::string rangeText(const OptionSpec& spec);
// 8, 0.9, 2e-05: a number as help and messages show it.
std::string numberText(double value);
std::string joinedText(const std::vector<std::string>& items, const std::string& separator);

}  // namespace lorascope::settings
