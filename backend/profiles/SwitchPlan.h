// profiles/SwitchPlan.h — what switching from one profile to another takes: live toggles and
// allocator settings to apply at the next step, and whether the engine must restart because the
// HIP runtime's environment changes.
#pragma once

#include <string>
#include <vector>

#include "profiles/Profile.h"

namespace lorascope::profiles {

struct SwitchPlan {
  LiveToggles toggles;          // the target profile's toggles (unset = keep current)
  AllocatorSettings allocator;  // likewise
  bool restartEngine = false;   // environment differs: the runtime reads it only at start-up
  std::vector<std::string> environmentChanges;  // "GPU_MAX_HW_QUEUES: (unset) → 2"
};

SwitchPlan planSwitch(const Profile& from, const Profile& to);

}  // namespace lorascope::profiles
