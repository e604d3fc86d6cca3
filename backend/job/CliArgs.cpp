// job/CliArgs.cpp — option tables: parsing and checking values, --help and synopses.
#include "job/CliArgs.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "common/OsError.h"  // defines: pathFromUtf8

namespace lorascope::job {

std::string whyUnreadable(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(common::pathFromUtf8(path), error)
             ? ": cannot be read (check its permissions)"
             : ": no such file (check the path)";
}

using nlohmann::json;
using settings::boolWord;
using settings::joinedText;
using settings::numberText;
using settings::optionPlaceholder;

namespace {

// Wraps `text` to lines of at most `width` characters, each starting with `indent`.
std::string wrapped(const std::string& text, const std::string& indent, std::size_t width) {
  std::istringstream words(text);
  std::string word, line, out;
  while (words >> word) {
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) {
    out += indent + line + "\n";
  }
  return out;
}

// "(1 to 4096; 0 = by epochs; default 8)"-style facts after an option's help.
std::string facts(const OptionSpec& spec) {
  std::vector<std::string> parts;
  if (spec.hasRange()) {
    parts.push_back(spec.type == OptionType::Integer
                        ? numberText(spec.min) + " to " + numberText(spec.max)
                        : "[" + numberText(spec.min) + ", " + numberText(spec.max) +
                              (spec.maxExclusive ? ")" : "]"));
  }
  if (!spec.unit.empty()) {
    parts.push_back(spec.unit);
  }
  if (!spec.zeroMeans.empty()) {
    parts.push_back("0 = " + spec.zeroMeans);
  }
  if (!spec.defaultText.empty()) {
    std::string value = spec.defaultText;
    if (spec.type == OptionType::Bool) {
      value = boolWord(value).value_or(false) ? "on" : "off";
    }
    parts.push_back("default " + value);
  }
  return parts.empty() ? std::string() : " (" + joinedText(parts, "; ") + ")";
}

}  // namespace

std::string optionForm(const OptionSpec& spec) {
  if (spec.type == OptionType::Bool) {
    return "--" + spec.name + "/--no-" + spec.name;
  }
  if (!spec.flagValue.empty()) {  // --packing [off|causal|documents]/--no-packing
    return "--" + spec.name + " [" + optionPlaceholder(spec) + "]/--no-" + spec.name;
  }
  return "--" + spec.name + " " + optionPlaceholder(spec);
}

namespace {

// Operands behind "--" (supervise's command) come after the options: every word after "--" is the
// command's, so options written there would never reach us.
bool operandsLast(const CommandSpec& command) {
  return command.operands.starts_with("--");
}

// "name OPERANDS OPTIONS", or "name OPTIONS OPERANDS" when the operands come last.
std::string withOperands(const CommandSpec& command, const std::string& options) {
  const std::string operands = command.operands.empty() ? "" : " " + command.operands;
  return command.name + (operandsLast(command) ? options + operands : operands + options);
}

}  // namespace

std::string synopsis(const CommandSpec& command) {
  std::string options;
  for (const OptionSpec& spec : command.options) {
    const bool flag = spec.type == OptionType::Bool || !spec.flagValue.empty();
    options += " [" + (flag ? "--" + spec.name : optionForm(spec)) + "]";
  }
  return withOperands(command, options);
}

std::string formatHelp(const CommandSpec& command, const std::string& program) {
  constexpr std::size_t kWidth = 96;
  std::string out = "usage: " + program + " " + withOperands(command, " [options]") + "\n\n";
  out += wrapped(command.summary, "", kWidth) + "\n";
  auto describe = [&](const OptionSpec& spec) {
    out += "  " + optionForm(spec) + "\n" + wrapped(spec.help + facts(spec), "      ", kWidth);
  };
  std::map<std::string, bool> listed;
  for (const auto& [heading, names] : command.sections) {
    out += heading + ":\n";
    for (const std::string& name : names) {
      for (const OptionSpec& spec : command.options) {
        if (spec.name == name) {
          describe(spec);
          listed[name] = true;
        }
      }
    }
    out += "\n";
  }
  std::string rest;
  for (const OptionSpec& spec : command.options) {
    if (!listed.count(spec.name)) {
      if (rest.empty()) {
        out += command.sections.empty() ? "options:\n" : "other options:\n";
        rest = "x";
      }
      describe(spec);
    }
  }
  out += "  --help\n      This text.\n";
  return out;
}

CliArgs::CliArgs(const std::vector<std::string>& args, const CommandSpec& command) {
  auto find = [&](const std::string& name) -> const OptionSpec* {
    for (const OptionSpec& spec : command.options) {
      if (spec.name == name) {
        return &spec;
      }
    }
    return nullptr;
  };
  auto store = [&](const OptionSpec& spec, const std::string& text) {
    // Checked here; kept as typed (bools as true/false), so that numbers keep their digits.
    const json value = parseOptionValue(spec, text);
    std::erase_if(given_, [&](const auto& entry) { return entry.first == spec.name; });
    const bool flag = spec.type == OptionType::Bool || !spec.flagValue.empty();
    given_.emplace_back(spec.name, flag ? optionText(value) : text);
    values_[spec.name] = given_.back().second;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional_.push_back(arg);
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const OptionSpec* spec = find(name);
    if (spec == nullptr && name.rfind("no-", 0) == 0 && eq == std::string::npos) {
      const OptionSpec* negated = find(name.substr(3));
      if (negated != nullptr &&
          (negated->type == OptionType::Bool || !negated->flagValue.empty())) {
        store(*negated, "false");
        continue;
      }
    }
    if (spec == nullptr) {
      throw UsageError("unknown option " + arg + " (see " + command.name + " --help)");
    }
    if (eq != std::string::npos) {
      store(*spec, arg.substr(eq + 1));
    } else if (spec->type == OptionType::Bool || !spec->flagValue.empty()) {
      // --flag, or --flag true|false (the form older scripts use), or --flag CHOICE.
      const bool valueFollows =
          i + 1 < args.size() &&
          (boolWord(args[i + 1]) || std::find(spec->choices.begin(), spec->choices.end(),
                                              args[i + 1]) != spec->choices.end());
      store(*spec, valueFollows ? args[++i] : "true");
    } else if (i + 1 < args.size()) {
      store(*spec, args[++i]);
    } else {
      throw UsageError("option --" + name + " needs a value");
    }
  }
}

bool CliArgs::has(const std::string& flag) const {
  const auto it = values_.find(flag);
  return it != values_.end() && it->second == "true";
}

std::optional<std::string> CliArgs::value(const std::string& option) const {
  const auto it = values_.find(option);
  if (it == values_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::string CliArgs::required(const std::string& option) const {
  auto v = value(option);
  if (!v) {
    throw UsageError("missing required option --" + option);
  }
  return *v;
}

}  // namespace lorascope::job
