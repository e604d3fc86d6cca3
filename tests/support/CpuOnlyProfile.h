// CpuOnlyProfile.h — the built-in profile "CPU only", for the tests that supervise a real
// engine on the CPU (tests/engine's fault suite and step cycle).
#pragma once

#include <stdexcept>

#include "profiles/Builtins.h"  // defines: builtinProfiles (of Profile)

namespace lstest {

inline const lorascope::profiles::Profile& cpuOnlyProfile() {
  for (const auto& profile : lorascope::profiles::builtinProfiles()) {
    if (profile.name == "CPU only")
      return profile;
  }
  throw std::logic_error("no built-in profile is named 'CPU only'");
}

}  // namespace lstest
