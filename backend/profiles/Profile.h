// profiles/Profile.h — a stability profile: environment for the HIP runtime (allow-listed names
// only), live toggles, allocator policy, and its rung on the recovery ladder.
//
// Live toggles and allocator settings are applied by our own code at the next step boundary.
// Environment variables are read by the HIP runtime once at start-up, so changing them means
// restarting the isolated engine (see planSwitch).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "memory/AllocatorPolicy.h"  // defines: AllocatorMode
#include "settings/Ladder.h"         // defines: Rung
#include "settings/Registry.h"       // defines: Toggle

namespace lorascope::profiles {

// A profile file is malformed: names the file, the field (JSON path) and the problem.
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The allocator's mode is the allocator's own enum (caching, or caching plus a planned arena).
using AllocatorMode = memory::AllocatorMode;

// The toggles a profile sets, each with its value as the engine takes it ("builtin", 2, true): the
// settings registry's toggles that have a profile key (settings/Registry.h). A toggle the profile
// does not list keeps its current value.
using LiveToggles = std::map<settings::Toggle, nlohmann::json>;

// The value the profile gives `toggle`, if any.
inline std::optional<nlohmann::json> toggleValue(const LiveToggles& toggles,
                                                 const settings::Toggle& toggle) {
  const auto it = toggles.find(toggle);
  return it == toggles.end() ? std::nullopt : std::optional<nlohmann::json>(it->second);
}

// Whether a run's start sets `toggle` to the profile's `value` (engine::Supervisor sends a
// profile's toggles after each Start, over the run's options): every one but CPU fallback off,
// which only a switch to the profile sends, so that a run its options put on the CPU stays there.
inline bool setAtStart(const settings::Toggle& toggle, const nlohmann::json& value) {
  return toggle != settings::Toggle::CpuFallback || value == true;
}

struct AllocatorSettings {
  std::optional<AllocatorMode> mode;
  std::optional<std::uint64_t> maxSplitSizeBytes;    // blocks above this are never split
  std::optional<double> garbageCollectionThreshold;  // fraction of device memory, (0, 1)
  std::optional<int> roundupPower2Divisions;
  bool operator==(const AllocatorSettings&) const = default;
};

// How file paths cross to an engine that runs elsewhere.
enum class EnginePaths {
  Same,      // the engine sees this machine's paths
  Wsl,       // C:/dir <-> /mnt/c/dir; the distribution's own files as //wsl.localhost/<distro>/...
  Prefixes,  // each host prefix <-> its engine prefix (the Linux stand-in launcher of the tests)
};

// Where the engine runs. Native (no launcher): `lorascope-train engine` beside this program. Else
// the launcher command starts an engine that speaks the same JSON lines on its stdin and stdout,
// e.g. {"wsl.exe", "-d", "Ubuntu", "--", "lorascope-train", "engine"}: the route Windows users
// take when ROCm on Windows hangs in backward. Switching to a profile with another location
// restarts the engine there (planSwitch), resuming from the state mirror.
struct EngineLocation {
  std::vector<std::string> launcher;  // program and arguments; empty: native
  EnginePaths paths = EnginePaths::Same;
  std::vector<std::pair<std::string, std::string>> prefixes;  // host -> engine (Prefixes)
  bool operator==(const EngineLocation&) const = default;
};

struct Profile {
  std::string name;
  std::string description;  // one line, shown in the profile bar
  std::string rationale;    // one paragraph: when and why to use it
  std::map<std::string, std::string> environment;
  // Variables for external trainers only (profiles/Environment.h, variablePolicy): PyTorch's and
  // ROCm's families that our engine does not read, and PYTORCH_*_ALLOC_CONF verbatim (our engine
  // gets it mapped onto `allocator`). `lorascope-train supervise` sets these and `environment`.
  std::map<std::string, std::string> externalEnvironment = {};
  LiveToggles toggles;
  AllocatorSettings allocator;
  settings::Rung ladderRung = settings::Rung::VendorBlas;  // its rung on the recovery ladder
  EngineLocation engine;
  bool builtin = false;
};

// A non-fatal finding about a profile: a folklore variable, an allocator setting we map or ignore.
struct ProfileNote {
  std::string field;    // JSON path, e.g. "environment.HIP_SERIALIZE_KERNEL"
  std::string message;  // what it means and what to use instead
};

struct ParsedProfile {
  Profile profile;
  std::vector<ProfileNote> notes;
};

const char* toString(EnginePaths paths);

}  // namespace lorascope::profiles
