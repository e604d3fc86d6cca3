// settings/Registry.cpp — looking settings up, and the strict check of a toggle's value.
#include "settings/Registry.h"

#include <algorithm>
#include <stdexcept>

namespace lorascope::settings {

void addBuiltinSettings(Registry& registry);  // settings/Builtin.cpp

using nlohmann::json;

Setting& Registry::add(Setting setting) {
  settings_.push_back(std::move(setting));
  try {
    checkNames();
  } catch (const std::invalid_argument&) {
    settings_.pop_back();
    throw;
  }
  return settings_.back();
}

// Entries may be completed after add (the built-in table is): registry() checks them again.
void Registry::checkNames() const {
  for (auto a = settings_.begin(); a != settings_.end(); ++a) {
    for (auto b = std::next(a); b != settings_.end(); ++b) {
      std::string taken;
      if (a->option.name == b->option.name) {
        taken = "--" + a->option.name;
      } else if (a->toggle && a->toggle == b->toggle) {
        taken = "toggle " + a->toggle->name();
      } else if (!a->profileKey.empty() && a->profileKey == b->profileKey) {
        taken = "profile key toggles." + a->profileKey;
      }
      if (!taken.empty()) {
        throw std::invalid_argument("settings registry: " + taken + " names two settings");
      }
    }
  }
}

const Setting* Registry::find(std::string_view optionName) const {
  for (const Setting& s : settings_) {
    if (s.option.name == optionName) {
      return &s;
    }
  }
  return nullptr;
}

const Setting* Registry::findToggle(std::string_view toggleName) const {
  for (const Setting& s : settings_) {
    if (s.toggle && s.toggle->name() == toggleName) {
      return &s;
    }
  }
  return nullptr;
}

const Setting* Registry::findProfileKey(std::string_view key) const {
  for (const Setting& s : settings_) {
    if (!s.profileKey.empty() && s.profileKey == key) {
      return &s;
    }
  }
  return nullptr;
}

std::vector<const Setting*> Registry::setByRung(Rung rung) const {
  std::vector<const Setting*> out;
  for (const Setting& s : settings_) {
    if (s.ladder && s.ladder->rung == rung) {
      out.push_back(&s);
    }
  }
  return out;
}

std::string Registry::toggleNames() const {
  std::vector<std::string> names;
  for (const Setting& s : settings_) {
    if (s.toggle) {
      names.push_back(s.toggle->name());
    }
  }
  return joinedText(names, ", ");
}

std::string Registry::profileKeys() const {
  std::vector<std::string> keys;
  for (const Setting& s : settings_) {
    if (!s.profileKey.empty()) {
      keys.push_back(s.profileKey);
    }
  }
  return joinedText(keys, ", ");
}

Registry& registry() {
  static Registry settings = [] {
    Registry r;
    addBuiltinSettings(r);
    r.checkNames();
    return r;
  }();
  return settings;
}

namespace {

// Why `value` is not of the spec's type, range or choices ("must be true or false"), "" when it is.
std::string typeProblem(const OptionSpec& spec, const json& value) {
  switch (spec.type) {
    case OptionType::Bool:
      return value.is_boolean() ? "" : "must be true or false";
    case OptionType::Integer:
      if (!value.is_number_integer() ||
          (spec.hasRange() && (value.get<double>() < spec.min || value.get<double>() > spec.max))) {
        return "must be a whole number" +
               (spec.hasRange() ? " from " + numberText(spec.min) + " to " + numberText(spec.max)
                                : "");
      }
      return "";
    case OptionType::Real: {
      const bool above = value.is_number() && (spec.maxExclusive ? value.get<double>() >= spec.max
                                                                 : value.get<double>() > spec.max);
      if (!value.is_number() || (spec.hasRange() && (value.get<double>() < spec.min || above))) {
        return "must be " + rangeText(spec);
      }
      return "";
    }
    case OptionType::Choice: {
      const bool known =
          value.is_string() && std::find(spec.choices.begin(), spec.choices.end(),
                                         value.get<std::string>()) != spec.choices.end();
      if (known) {
        return "";
      }
      std::string choices;
      for (std::size_t i = 0; i < spec.choices.size(); ++i) {
        choices += (i == 0                         ? ""
                    : i + 1 == spec.choices.size() ? " or "
                                                   : ", ") +
                   ("\"" + spec.choices[i] + "\"");
      }
      return "must be " + choices;
    }
    case OptionType::List:
      return value.is_array() ? "" : "must be a list of names";
    case OptionType::Text:
      return value.is_string() ? "" : "must be a string";
  }
  return "";
}

}  // namespace

std::string toggleValueProblem(const Setting& setting, const json& value) {
  const std::string problem = typeProblem(setting.toggleValue, value);
  if (problem.empty()) {
    return problem;
  }
  // The value as it came, cut short: a message names what was wrong, not a whole document.
  std::string shown = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (shown.size() > 40) {
    shown = shown.substr(0, 37) + "...";
  }
  return problem + ", not " + shown;
}

json toggleValueOf(const Setting& setting, const json& optionValue) {
  for (const auto& [choice, toggleValue] : setting.toggleValues) {
    if (optionValue == choice) {
      return toggleValue;
    }
  }
  return optionValue;
}

}  // namespace lorascope::settings
