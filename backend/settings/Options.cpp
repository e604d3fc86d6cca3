// settings/Options.cpp — checking a value against its OptionSpec.
#include "settings/Options.h"

#include <cmath>
#include <sstream>

namespace lorascope::settings {

using nlohmann::json;

OptionSpec integerOption(std::string name, double min, double max, std::string defaultText,
                         std::string unit, std::string help) {
  OptionSpec s{.name = std::move(name),
               .type = OptionType::Integer,
               .help = std::move(help),
               .defaultText = std::move(defaultText),
               .min = min,
               .max = max};
  s.unit = std::move(unit);
  return s;
}
OptionSpec realOption(std::string name, double min, double max, std::string defaultText,
                      std::string unit, std::string help) {
  OptionSpec s = integerOption(std::move(name), min, max, std::move(defaultText), std::move(unit),
                               std::move(help));
  s.type = OptionType::Real;
  return s;
}
OptionSpec boolOption(std::string name, std::string defaultText, std::string help) {
  return {.name = std::move(name),
          .type = OptionType::Bool,
          .help = std::move(help),
          .defaultText = std::move(defaultText)};
}
OptionSpec choiceOption(std::string name, std::vector<std::string> choices, std::string defaultText,
                        std::string help) {
  return {.name = std::move(name),
          .type = OptionType::Choice,
          .help = std::move(help),
          .defaultText = std::move(defaultText),
          .choices = std::move(choices)};
}
OptionSpec textOption(std::string name, std::string valueName, std::string help) {
  return {.name = std::move(name),
          .type = OptionType::Text,
          .help = std::move(help),
          .valueName = std::move(valueName)};
}
OptionSpec withZero(OptionSpec spec, std::string zeroMeans) {
  spec.zeroMeans = std::move(zeroMeans);
  return spec;
}

std::string joinedText(const std::vector<std::string>& items, const std::string& separator) {
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

namespace {

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
      reject(spec, "a comma-separated list of " + joinedText(spec.choices, ", "), text);
    }
    items.push_back(item);
  }
  if (items.empty()) {
    reject(spec, "at least one of " + joinedText(spec.choices, ", "), text);
  }
  return items;
}

}  // namespace

std::string optionPlaceholder(const OptionSpec& spec) {
  if (!spec.valueName.empty()) {
    return spec.valueName;
  }
  switch (spec.type) {
    case OptionType::Integer:
      return spec.special.empty() ? "N" : "N|" + spec.special;
    case OptionType::Real:
      return "X";
    case OptionType::Choice:
      return joinedText(spec.choices, "|");
    case OptionType::List:
      return joinedText(spec.choices, ",");
    case OptionType::Bool:
    case OptionType::Text:
      break;
  }
  return "VALUE";
}

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
      if (const auto flag = boolWord(text); flag && !spec.flagValue.empty()) {
        return *flag ? spec.flagValue : spec.choices.front();
      }
      reject(spec, "one of " + joinedText(spec.choices, ", "), text);
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
  reject(spec, optionPlaceholder(spec), value.dump());
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

}  // namespace lorascope::settings
