// profiles/ProfileJson.h — profile files: parsing with errors that name the file and field, and
// writing back (what the profile editor saves).
//
// {
//   "version": 1,                       optional; newer versions are refused
//   "name": "ROCm stable",              required
//   "description": "one line",          required
//   "rationale": "one paragraph",       optional
//   "environment": {"GPU_MAX_HW_QUEUES": "4", "PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:512"},
//   "toggles": {"serialize": false, "blocking": false, "micro_batch": 2, "cpu_fallback": false,
//               "gemm": "vendor" | "builtin", "activation_checkpointing": true},
//                                     the keys and their values are the settings registry's
//                                     (settings/Registry.h: Setting::profileKey, toggleValue)
//   "allocator": {"mode": "caching" | "arena", "max_split_size_mb": 512,
//                 "garbage_collection_threshold": 0.8, "roundup_power2_divisions": 4},
//   "ladder_rung": "none" | "builtin_gemm" | "serialize" | "smaller_batch" | "cpu"
// }
// Unknown keys are errors (a typo must not silently do nothing).
#pragma once

#include <string>
#include <string_view>

#include "profiles/Profile.h"

namespace lorascope::profiles {

inline constexpr int kProfileFormatVersion = 1;

// `source` names the file (or "built-in profile X") in every error and note. A file with several
// problems (fields, toggles, variables) is refused with one ProfileError naming each, a line each.
ParsedProfile parseProfile(std::string_view jsonText, const std::string& source);

std::string profileToJson(const Profile& profile);  // pretty-printed, round-trips through parse

}  // namespace lorascope::profiles
