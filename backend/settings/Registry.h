// settings/Registry.h — the run settings, one entry each: what a run can be told, and every name
// it goes by. An entry (Setting) gives
//   - the option: its CLI spelling (--name, also the key of --config files and of the GUI's start
//     command), type, range or choices, default (and the demo's), unit and help (OptionSpec);
//   - the label and group the Setup page and the Controls dock show it under;
//   - where config.json's "training" object keeps it (configKey);
//   - live or restart: whether the Controls dock changes it during a run;
//   - its engine toggle: the protocol's name and the toggle's value type (the protocol checks
//     values against it), and how option values map to toggle values (device cpu → on);
//   - its key in a profile's "toggles" object (profileKey);
//   - whether it applies while the run computes on the CPU (cpuNote says why not);
//   - the recovery-ladder rung that sets it, and to what (ladder).
// The CLI's parser and --help (job/RunOptions.h), config.json (job/TrainRunConfig.h), the
// protocol's checks (engine/Protocol.cpp), profile files (profiles/ProfileJson.cpp), the Controls
// dock (widgets/ControlsPanel), the Setup page's options (app/gui/RunSetupPage), the supervisor's
// rung plan (engine/Supervisor.cpp) and the engine's "not applicable" (job/DevicePlacement.cpp)
// read this table; none of them lists the settings again. A new toggle is one entry here plus its
// effect (job/RunToggles.cpp's apply, and the run's field in job/RunOptions.cpp when a run keeps
// it).
#pragma once

#include <compare>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "settings/Ladder.h"   // defines: Rung
#include "settings/Options.h"  // defines: OptionSpec

namespace lorascope::settings {

// An engine toggle: a setting the engine changes during a run, by its protocol name
// ("micro_batch"). The built-in ones are named below for the code that gives them their effect.
class Toggle {
 public:
  Toggle() = default;
  explicit Toggle(std::string wireName) : name_(std::move(wireName)) {}
  const std::string& name() const { return name_; }
  friend bool operator==(const Toggle&, const Toggle&) = default;
  friend std::strong_ordering operator<=>(const Toggle&, const Toggle&) = default;

  static const Toggle Serialize;                // bool
  static const Toggle Blocking;                 // bool
  static const Toggle MicroBatch;               // int ≥ 1
  static const Toggle CpuFallback;              // bool
  static const Toggle GemmBackend;              // "vendor" | "builtin"
  static const Toggle AllocatorPolicy;          // "caching" | "arena"
  static const Toggle ActivationCheckpointing;  // bool
  static const Toggle Graph;                    // bool

 private:
  std::string name_;
};
// Inline: initialised before any static of a file that includes this header.
inline const Toggle Toggle::Serialize{"serialize"};
inline const Toggle Toggle::Blocking{"blocking"};
inline const Toggle Toggle::MicroBatch{"micro_batch"};
inline const Toggle Toggle::CpuFallback{"cpu_fallback"};
inline const Toggle Toggle::GemmBackend{"gemm_backend"};
inline const Toggle Toggle::AllocatorPolicy{"allocator_policy"};
inline const Toggle Toggle::ActivationCheckpointing{"activation_checkpointing"};
inline const Toggle Toggle::Graph{"graph"};

enum class Apply {
  Live,     // the Controls dock changes it during a run (the engine applies it at the next step)
  Restart,  // fixed when the run starts: changing it means starting the run again
};

// What a rung of the recovery ladder does to a setting's toggle: from that rung up it is `value`,
// and when the ladder steps back below the rung it returns to the profile's value, else to
// `offValue`. With `halves` (the micro-batch, which every step reports): half what the run had
// when it stepped down, and back to that when the ladder steps back.
struct RungEffect {
  Rung rung = Rung::VendorBlas;
  nlohmann::json value = {};
  nlohmann::json offValue = {};
  bool halves = false;
};

struct Setting {
  OptionSpec option;        // --name, type, range or choices, default, unit, help
  std::string label;        // the GUI's label: "Rank r"
  std::string group;        // the GUI's group box and --help's section: "LoRA", "Training", …
  std::string demoDefault;  // the built-in demo's default when it differs ("" = option's)
  Apply apply = Apply::Restart;
  // Where config.json's "training" object keeps it (a JSON pointer). Settings added after run
  // format 1 may be absent from older runs' config.json: they then take their default.
  std::string configKey;
  bool optionalInConfig = false;
  // The engine toggle that changes it during a run (a profile, the ladder, and the Controls dock
  // when Live), with the toggle's value: its type, range or choices (toggleValue.name is the
  // toggle's name). `toggleValues` maps a Choice option's values to the toggle's when they
  // differ (device: cpu → cpu_fallback on).
  std::optional<Toggle> toggle;
  OptionSpec toggleValue;
  std::vector<std::pair<std::string, nlohmann::json>> toggleValues;
  std::string eventName;   // how the event log names a change of the toggle: "micro-batch"
  std::string profileKey;  // its key in a profile's "toggles" object; "" = profiles leave it
  // Non-empty when the toggle does nothing while the run computes on the CPU: why ("which makes
  // no GPU launches"); the value is kept for when the run is on a GPU.
  std::string cpuNote;
  std::optional<RungEffect> ladder;  // the recovery-ladder rung that sets it

  std::string defaultFor(bool demo) const {
    return demo && !demoDefault.empty() ? demoDefault : option.defaultText;
  }
};

class Registry {
 public:
  // Adds an entry after the others; throws std::invalid_argument when its option name, toggle or
  // profile key is taken (one setting per name).
  Setting& add(Setting setting);
  // Throws std::invalid_argument when two entries share an option name, toggle or profile key.
  void checkNames() const;

  const std::deque<Setting>& all() const { return settings_; }
  std::size_t size() const { return settings_.size(); }
  const Setting* find(std::string_view optionName) const;  // nullptr when there is none
  const Setting* findToggle(std::string_view toggleName) const;
  const Setting* findToggle(const Toggle& toggle) const { return findToggle(toggle.name()); }
  const Setting* findProfileKey(std::string_view key) const;
  // The settings that `rung` of the recovery ladder sets (Setting::ladder), in table order.
  std::vector<const Setting*> setByRung(Rung rung) const;
  // "serialize, blocking, …": the toggles' names, for messages.
  std::string toggleNames() const;
  std::string profileKeys() const;

 private:
  std::deque<Setting> settings_;  // a deque: entries stay where they are as others are added
};

// This build's run settings: the built-in table (settings/Builtin.cpp), plus what is added before
// the first reader runs (a test's extra toggle). Not synchronised: add before any thread reads.
Registry& registry();

// Why `value` is not a value of the setting's toggle ("must be a whole number from 1 to 4096"), ""
// when it is one. JSON types are strict here (true, not "yes"): the protocol's check.
std::string toggleValueProblem(const Setting& setting, const nlohmann::json& value);
// The toggle's value for a value of the option (device "cpu" → true; others as they are).
nlohmann::json toggleValueOf(const Setting& setting, const nlohmann::json& optionValue);

}  // namespace lorascope::settings
