// job/TrainRunConfig.cpp — options (job/RunOptions.h) ↔ TrainConfig ↔ config.json.
#include "job/TrainRunConfig.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include "common/JsonReader.h"
#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "compute/BuildInfo.h"
#include "job/RunOptions.h"
#include "model/HfCache.h"       // defines: resolveModel
#include "train/RunDirectory.h"  // defines: fnv1a64

namespace lorascope::job {
using nlohmann::json;

TrainRunSettings defaultSettings(bool demo) {
  TrainRunSettings s;
  for (const RunOption& option : runOptions()) {
    option.set(s, parseOptionValue(option.spec, option.defaultFor(demo)));
  }
  return s;
}

void applyOptions(TrainRunSettings& settings,
                  const std::vector<std::pair<std::string, std::string>>& options) {
  bool epochs = false;
  bool steps = false;
  std::optional<std::string> device;
  for (const auto& [name, value] : options) {
    const RunOption* option = findRunOption(name);
    if (option == nullptr) {
      throw UsageError("unknown option --" + name);
    }
    option->set(settings, parseOptionValue(option->spec, value));
    epochs = epochs || name == "epochs";
    steps = steps || name == "steps";
    if (name == "device") {
      device = settings.device;
    }
  }
  if (epochs && !steps) {
    settings.train.maxSteps = 0;  // by epochs, also where the defaults limit the steps (demo)
  }
  if (!settings.gpus.empty()) {
    if (device && *device != "gpu") {
      throw UsageError("--gpus " + settings.gpus + " trains on GPUs; --device " + *device +
                       " contradicts it (leave --device out, or give --device gpu)");
    }
    settings.device = "gpu";  // the group's ranks each compute on their GPU
  }
  if (!settings.evalData.empty() && settings.evalSplit > 0.0) {
    throw UsageError(
        "--eval-data and --eval-split both given: evaluate on a file of its own or "
        "on a share of the training data, not both");
  }
  try {
    settings.train.validate();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

void applyOptions(TrainRunSettings& settings, const std::map<std::string, std::string>& options) {
  applyOptions(settings,
               std::vector<std::pair<std::string, std::string>>(options.begin(), options.end()));
}

// Besides the options: AdamW's betas and epsilon (not options; kept so that a run says all it
// used) and the micro-batch that --batch-size auto starts from.
json settingsToJson(const TrainRunSettings& s) {
  json j = json::object();
  for (const RunOption& option : runOptions()) {
    j[json::json_pointer(option.setting.configKey)] = option.get(s);
  }
  j["adamw"]["beta1"] = s.train.adamw.beta1;
  j["adamw"]["beta2"] = s.train.adamw.beta2;
  j["adamw"]["epsilon"] = s.train.adamw.epsilon;
  j["micro_batch_size"] = s.train.microBatchSize;
  j["auto_micro_batch"] = s.autoMicroBatch;
  return j;
}

TrainRunSettings settingsFromJson(const json& j, const std::string& file) {
  try {
    // The fields besides the options through the one strict reader: its failures name the field
    // ("adamw.beta1: must be a number") and land in the message below.
    const common::JsonReader training(
        j, "", [](const std::string& message) { throw std::invalid_argument(message); });
    TrainRunSettings s = defaultSettings(false);
    for (const RunOption& option : runOptions()) {
      const json::json_pointer key(option.setting.configKey);
      if (!j.contains(key) && option.setting.optionalInConfig) {
        continue;  // a run made before the option existed: its default
      }
      if (option.spec.name == "batch-size") {
        continue;  // micro_batch_size and auto_micro_batch, below
      }
      if (!j.contains(key)) {
        std::string field =
            key.to_string().substr(1);  // "/lora/r" → lora.r, as the reader names it
        std::replace(field.begin(), field.end(), '/', '.');
        throw std::invalid_argument(field + ": missing");
      }
      // Types and choices are checked, not ranges: a run keeps the values it was started with
      // when a later version narrows a range (TrainConfig::validate still checks below).
      OptionSpec unbounded = option.spec;
      unbounded.max = unbounded.min - 1;
      option.set(s, checkOptionValue(unbounded, j.at(key)));
    }
    train::AdamWConfig& adamw = s.train.adamw;
    const common::JsonReader adamwFields = training.object("adamw");
    adamw.beta1 = adamwFields.number("beta1");
    adamw.beta2 = adamwFields.number("beta2");
    adamw.epsilon = adamwFields.number("epsilon");
    s.train.microBatchSize = training.integer("micro_batch_size");
    s.autoMicroBatch = training.booleanOr("auto_micro_batch", false);  // before --batch-size auto
    s.train.validate();
    return s;
  } catch (const std::exception& e) {
    throw UsageError(file + ": \"training\" does not hold valid settings: " + e.what());
  }
}

json newRunConfig(const std::string& modelPath, const std::string& dataPath, bool demo,
                  const TrainRunSettings& settings) {
  const std::time_t now = std::time(nullptr);
  char created[32];
  std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  // --model may be a Hugging Face id: the run trains on its snapshot folder and records the id.
  const model::ResolvedModel resolvedModel = model::resolveModel(modelPath);
  // Paths in and out are UTF-8 text (pathFromUtf8/pathText: no code page on Windows).
  const auto absoluteText = [](const std::filesystem::path& path) {
    return common::pathText(std::filesystem::absolute(path).lexically_normal());
  };
  json config = {{"model_path", absoluteText(resolvedModel.dir)},
                 {"data_path", absoluteText(common::pathFromUtf8(dataPath))},
                 {"data_fingerprint", fileFingerprint(dataPath)},
                 {"demo", demo},
                 {"training", settingsToJson(settings)},
                 {"versions", {{"lorascope", compute::buildInfo().version}, {"run_format", 1}}},
                 {"created", created}};
  if (!settings.evalData.empty()) {
    config["training"]["eval"]["data"] = absoluteText(common::pathFromUtf8(settings.evalData));
    config["eval_data_fingerprint"] = fileFingerprint(settings.evalData);
  }
  if (resolvedModel.modelId) {
    config["model_id"] = *resolvedModel.modelId;
    config["model_revision"] = resolvedModel.revision;
  }
  return config;
}

std::string fileFingerprint(const std::string& path) {
  std::ifstream in(common::pathFromUtf8(path), std::ios::binary);
  if (!in) {
    throw UsageError(path + whyUnreadable(path));
  }
  std::uint64_t hash = train::kFnv1a64Offset;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    hash = train::fnv1a64(std::string_view(buffer, static_cast<std::size_t>(in.gcount())), hash);
  }
  return train::fnv1a64Text(hash);
}

}  // namespace lorascope::job
