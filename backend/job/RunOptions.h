// job/RunOptions.h — a training run's options: the run settings of the settings registry
// (settings/Registry.h: name, type, range, default and the demo's, unit, help, label and group,
// live or restart, config.json key), each with where a run keeps it (TrainRunSettings). From
// them come
//   - `lorascope-train train`'s parser and --help (trainCommand()),
//   - --config files and the GUI's start command (keys are the option names),
//   - the "training" object of config.json (settingsToJson / settingsFromJson).
// Options apply independently of their order: no option's setter touches another's field; the
// rules between two options (epochs given without steps runs by epochs; a --gpus list makes the
// device gpu) are applied after all.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/CliArgs.h"        // defines: OptionSpec, CommandSpec
#include "settings/Registry.h"  // defines: Setting

namespace lorascope::job {

struct TrainRunSettings;

struct RunOption {
  const settings::Setting& setting;
  const OptionSpec& spec;  // setting.option
  // The option's value in `settings` as parseOptionValue returns it, and back. `set` takes a
  // checked value and touches only this option's fields.
  std::function<nlohmann::json(const TrainRunSettings&)> get;
  std::function<void(TrainRunSettings&, const nlohmann::json&)> set;

  std::string defaultFor(bool demo) const { return setting.defaultFor(demo); }
};

// The registry's settings that a run keeps, in the registry's order (read when first called).
const std::vector<RunOption>& runOptions();
const RunOption* findRunOption(const std::string& name);  // nullptr when there is none

// `lorascope-train train`: every setting of the registry plus --model, --data, --out, --demo,
// --resume, --checkpoint and --config, sectioned by group.
const CommandSpec& trainCommand();

}  // namespace lorascope::job
