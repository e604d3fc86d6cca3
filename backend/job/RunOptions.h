// job/RunOptions.h — the one table of a training run's options.
//
// Each option is described here once: name, type, range, default (and the demo's), unit, help,
// the label and group the GUI shows it under, whether it is live (changed during a run, at the
// next step, through an engine toggle) or needs a restart (fixed when the run starts), and where
// it sits in the run's config.json. From this table come
//   - `lorascope-train train`'s parser and --help (trainCommand()),
//   - --config files and the GUI's start command (keys are the option names),
//   - the "training" object of config.json (settingsToJson / settingsFromJson),
//   - the setup page's editors (app/gui/RunSetupPage) and the controls dock's rows (the app
//     hands widgets/ControlsPanel the live options).
// Options apply independently of their order: no option's setter touches another's field; the
// one rule between two options (epochs given without steps runs by epochs) is applied after all.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/Protocol.h"  // defines: Toggle
#include "job/CliArgs.h"      // defines: OptionSpec, CommandSpec

namespace lorascope::job {

struct TrainRunSettings;

enum class ApplyMode {
  Live,     // the engine applies a change at the next step (controls dock)
  Restart,  // fixed when the run starts: changing it means starting the run again
};

struct RunOption {
  OptionSpec spec;          // name, type, range, default, unit, help
  std::string label;        // the GUI's label: "Rank r"
  std::string group;        // the GUI's group box and --help's section: "LoRA", "Training", …
  std::string demoDefault;  // the built-in demo's default when it differs ("" = spec's)
  ApplyMode apply = ApplyMode::Restart;
  // Live options: the engine toggle that changes it during a run. `toggleValues` maps a Choice
  // option's values to the toggle's when they differ (device: cpu → cpu_fallback on).
  std::optional<engine::Toggle> toggle;
  std::vector<std::pair<std::string, nlohmann::json>> toggleValues;
  // Where config.json's "training" object keeps it (a JSON pointer). Options added after run
  // format 1 may be absent from older runs' config.json: they then take their default.
  std::string configKey;
  bool optionalInConfig = false;
  // The option's value in `settings` as parseOptionValue returns it, and back. `set` takes a
  // checked value and touches only this option's fields.
  std::function<nlohmann::json(const TrainRunSettings&)> get;
  std::function<void(TrainRunSettings&, const nlohmann::json&)> set;

  std::string defaultFor(bool demo) const {
    return demo && !demoDefault.empty() ? demoDefault : spec.defaultText;
  }
};

const std::vector<RunOption>& runOptions();
const RunOption* findRunOption(const std::string& name);  // nullptr when there is none

// `lorascope-train train`: the run options plus --model, --data, --out, --demo, --resume,
// --checkpoint and --config, sectioned by group.
const CommandSpec& trainCommand();

}  // namespace lorascope::job
