// settings/WatchdogSpec.cpp — LORASCOPE_WATCHDOG's parser and writer.
#include "settings/WatchdogSpec.h"

#include <cstdio>
#include <stdexcept>

namespace lorascope::settings {
namespace {

std::int64_t parseSeconds(const std::string& text, const std::string& spec) {
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(value > 0.0) || value > 86'400.0) {
    throw std::invalid_argument(std::string(kWatchdogEnvVar) + ": '" + spec +
                                "' is not GRACE_S[,FIRST_STEPS_S], seconds above 0 (e.g. 10,120)");
  }
  return static_cast<std::int64_t>(value * 1000.0 + 0.5);
}

// ms as the variable's seconds: "10", "2.5".
std::string secondsSpec(std::int64_t ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(ms) / 1000.0);
  return text;
}

}  // namespace

WatchdogConfig parseWatchdogSpec(const std::string& spec) {
  WatchdogConfig config;
  const std::size_t comma = spec.find(',');
  config.graceMs = parseSeconds(spec.substr(0, comma), spec);
  if (comma != std::string::npos) {
    config.firstStepsMs = parseSeconds(spec.substr(comma + 1), spec);
  }
  return config;
}

std::string watchdogSpec(const WatchdogConfig& config) {
  return secondsSpec(config.graceMs) + "," + secondsSpec(config.firstStepsMs);
}

}  // namespace lorascope::settings
