// job/CliArgs.cpp — option tables: parsing and checking values, --help and synopses.
#include "job/CliArgs.h"

#include <cmath>
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

namespace {

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) {
    out += (out.empty() ? "" : separator) + item;
  }
  return out;
}

std::string numberText(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  std::ostringstream out;
  out << value;
  return out.str();
}

std::optional<bool> boolWord(const std::string& text) {
  if (text == "true" || text == "on" || text == "1" || text == "yes") {
    return true;
  }
  if (text == "false" || text == "off" || text == "0" || text == "no") {
    return false;
  }
  return std::nullopt;
}

// "an integer from 1 to 4096", "a number in [0, 0.9)".
std::string rangeText(const OptionSpec& spec) {
  const bool integer = spec.type == OptionType::Integer;
  std::string text = integer ? "an integer" : "a number";
  if (spec.hasRange()) {
    text += integer ? " from " + numberText(spec.min) + " to " + numberText(spec.max)
                    : " in [" + numberText(spec.min) + ", " + numberText(spec.max) +
                          (spec.maxExclusive ? ")" : "]");
  }
  if (!spec.special.empty()) {
    text += ", or " + spec.special;
  }
  return text;
}

[[noreturn]] void reject(const OptionSpec& spec, const std::string& needs, const std::string& got) {
  throw UsageError("--" + spec.name + " needs " + needs + ", got '" + got + "'");
}

json parseNumber(const OptionSpec& spec, const std::string& text) {
  const bool integer = spec.type == OptionType::Integer;
  std::size_t used = 0;
  double value = 0;
  long long whole = 0;
  try {
    if (integer) {
      whole = std::stoll(text, &used);
      value = static_cast<double>(whole);
    } else {
      value = std::stod(text, &used);
    }
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(value)) {
    reject(spec, rangeText(spec), text);
  }
  const bool above = spec.maxExclusive ? value >= spec.max : value > spec.max;
  if (spec.hasRange() && (value < spec.min || above)) {
    reject(spec, rangeText(spec), text);
  }
  if (integer) {
    return static_cast<std::int64_t>(whole);
  }
  return value;
}

json parseList(const OptionSpec& spec, const std::string& text) {
  json items = json::array();
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    if (item.empty()) {
      continue;
    }
    bool known = false;
    for (const std::string& choice : spec.choices) {
      known = known || choice == item;
    }
    if (!known) {
      reject(spec, "a comma-separated list of " + joined(spec.choices, ", "), text);
    }
    items.push_back(item);
  }
  if (items.empty()) {
    reject(spec, "at least one of " + joined(spec.choices, ", "), text);
  }
  return items;
}

std::string placeholder(const OptionSpec& spec) {
  if (!spec.valueName.empty()) {
    return spec.valueName;
  }
  switch (spec.type) {
    case OptionType::Integer:
      return spec.special.empty() ? "N" : "N|" + spec.special;
    case OptionType::Real:
      return "X";
    case OptionType::Choice:
      return joined(spec.choices, "|");
    case OptionType::List:
      return joined(spec.choices, ",");
    case OptionType::Bool:
    case OptionType::Text:
      break;
  }
  return "VALUE";
}

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
  return parts.empty() ? std::string() : " (" + joined(parts, "; ") + ")";
}

}  // namespace

json parseOptionValue(const OptionSpec& spec, const std::string& text) {
  switch (spec.type) {
    case OptionType::Bool:
      if (const auto value = boolWord(text)) {
        return *value;
      }
      reject(spec, "true or false", text);
    case OptionType::Integer:
    case OptionType::Real:
      if (!spec.special.empty() && text == spec.special) {
        return text;
      }
      return parseNumber(spec, text);
    case OptionType::Choice:
      for (const std::string& choice : spec.choices) {
        if (choice == text) {
          return text;
        }
      }
      reject(spec, "one of " + joined(spec.choices, ", "), text);
    case OptionType::List:
      if (!text.empty() && text.front() == '[') {
        const json array = json::parse(text, nullptr, false);
        if (!array.is_discarded()) {
          return checkOptionValue(spec, array);
        }
      }
      return parseList(spec, text);
    case OptionType::Text:
      if (text.empty() && !spec.emptyAllowed) {
        reject(spec, "a value", text);
      }
      return text;
  }
  return text;
}

json checkOptionValue(const OptionSpec& spec, const json& value) {
  if (value.is_string()) {
    return parseOptionValue(spec, value.get<std::string>());
  }
  if (spec.type == OptionType::List && value.is_array()) {
    std::string text;
    for (const json& item : value) {
      if (!item.is_string()) {
        reject(spec, "a list of names", value.dump());
      }
      text += (text.empty() ? "" : ",") + item.get<std::string>();
    }
    return parseList(spec, text);
  }
  if (value.is_boolean() || value.is_number()) {
    return parseOptionValue(spec, optionText(value));
  }
  reject(spec, placeholder(spec), value.dump());
}

std::string optionText(const json& value) {
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_array()) {
    std::string text;
    for (const json& item : value) {
      text += (text.empty() ? "" : ",") + optionText(item);
    }
    return text;
  }
  return value.dump();
}

std::string optionForm(const OptionSpec& spec) {
  if (spec.type == OptionType::Bool) {
    return "--" + spec.name + "/--no-" + spec.name;
  }
  return "--" + spec.name + " " + placeholder(spec);
}

std::string synopsis(const CommandSpec& command) {
  std::string out = command.name;
  if (!command.operands.empty()) {
    out += " " + command.operands;
  }
  for (const OptionSpec& spec : command.options) {
    out += " [" + (spec.type == OptionType::Bool ? "--" + spec.name : optionForm(spec)) + "]";
  }
  return out;
}

std::string formatHelp(const CommandSpec& command, const std::string& program) {
  constexpr std::size_t kWidth = 96;
  std::string out = "usage: " + program + " " + command.name +
                    (command.operands.empty() ? "" : " " + command.operands) + " [options]\n\n";
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
    given_.emplace_back(spec.name, spec.type == OptionType::Bool ? optionText(value) : text);
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
      if (negated != nullptr && negated->type == OptionType::Bool) {
        store(*negated, "false");
        continue;
      }
    }
    if (spec == nullptr) {
      throw UsageError("unknown option " + arg + " (see " + command.name + " --help)");
    }
    if (eq != std::string::npos) {
      store(*spec, arg.substr(eq + 1));
    } else if (spec->type == OptionType::Bool) {
      // --flag, or --flag true|false (the form older scripts use).
      if (i + 1 < args.size() && boolWord(args[i + 1])) {
        store(*spec, args[++i]);
      } else {
        store(*spec, "true");
      }
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
