// profiles/Builtins.h — the built-in profiles, from ROCm users' practice.
#pragma once

#include <vector>

#include "profiles/Profile.h"

namespace lorascope::profiles {

// Balanced (the default) first, then ROCm stable, Debug: serialize + blocking, Low VRAM,
// Windows safe, Built-in GEMM, CPU only. Parsed from JSON by parseProfile, like user files.
const std::vector<Profile>& builtinProfiles();
const Profile& defaultProfile();

}  // namespace lorascope::profiles
