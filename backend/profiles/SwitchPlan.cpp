// profiles/SwitchPlan.cpp — the difference between two profiles, as actions.
#include "profiles/SwitchPlan.h"

#include <set>

namespace lorascope::profiles {

SwitchPlan planSwitch(const Profile& from, const Profile& to) {
  SwitchPlan plan;
  plan.toggles = to.toggles;
  plan.allocator = to.allocator;
  std::set<std::string> names;
  for (const auto& [name, value] : from.environment)
    names.insert(name);
  for (const auto& [name, value] : to.environment)
    names.insert(name);
  for (const std::string& name : names) {
    const auto before = from.environment.find(name);
    const auto after = to.environment.find(name);
    const std::string oldValue = before == from.environment.end() ? "(unset)" : before->second;
    const std::string newValue = after == to.environment.end() ? "(unset)" : after->second;
    if (oldValue != newValue) {
      plan.environmentChanges.push_back(name + ": " + oldValue + " → " + newValue);
    }
  }
  // Where the engine runs is also fixed when it starts.
  if (from.engine != to.engine) {
    const auto where = [](const EngineLocation& l) {
      std::string text;
      for (const std::string& part : l.launcher) {
        text += (text.empty() ? "" : " ") + part;
      }
      return text.empty() ? std::string("native") : text;
    };
    plan.environmentChanges.push_back("engine: " + where(from.engine) + " → " + where(to.engine));
  }
  plan.restartEngine = !plan.environmentChanges.empty();
  return plan;
}

}  // namespace lorascope::profiles
