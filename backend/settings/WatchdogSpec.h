// settings/WatchdogSpec.h — the hang watchdog's budgets and their one spelling,
// LORASCOPE_WATCHDOG=GRACE_S[,FIRST_STEPS_S]: read by the engine's watchdog
// (runtime/Watchdog.h) from its environment, and checked where a profile sets it
// (profiles/Environment.cpp), so a profile with a bad value is refused when it loads rather than
// failing the engine it starts.
#pragma once

#include <cstdint>
#include <string>

namespace lorascope::settings {

struct WatchdogConfig {
  std::int64_t graceMs = 10'000;  // beyond the longest the op has taken before
  // The budget while the first `firstSteps` steps of this process run: at least this long.
  std::int64_t firstStepsMs = 120'000;
  std::int64_t firstSteps = 2;
};

// LORASCOPE_WATCHDOG=GRACE_S[,FIRST_STEPS_S] (seconds, decimals allowed; e.g. "10,120", the
// default) sets the grace and the first steps' budget of a process's watchdog.
inline constexpr const char* kWatchdogEnvVar = "LORASCOPE_WATCHDOG";
// The budgets of `spec`; throws std::invalid_argument naming the variable and the accepted form.
WatchdogConfig parseWatchdogSpec(const std::string& spec);
// `config`'s budgets as the variable's value: "10,120".
std::string watchdogSpec(const WatchdogConfig& config);

}  // namespace lorascope::settings
