// job/TrainRunConfig.h — a run's settings: from the option table's defaults (job/RunOptions.h),
// command-line flags, a --config JSON file (keys are the option names, e.g. {"lr": 1e-4,
// "lora-r": 16}) or the GUI's start command, to TrainConfig and to the run's config.json (and
// back, for --resume).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/CliArgs.h"
#include "train/TrainLoop.h"  // defines: TrainConfig

namespace lorascope::job {

struct TrainRunSettings {
  train::TrainConfig train;
  std::int64_t checkpointEvery = 50;  // optimizer steps; 0 = only at the end
  int keepCheckpoints = 3;            // ≤ 0 keeps all
  std::string device = "cpu";  // as asked: cpu, gpu or auto (each step's metrics say where it ran)
  // --gpus: the GPUs of a data-parallel group ("0,1", "all"; group/RankPlan.h), checked for its
  // words here and against the machine's GPUs when the run starts; "" = one device, as `device`
  // says. A list makes `device` gpu.
  std::string gpus;
  // --batch-size auto: the micro-batch is planned from free memory when the run starts (the
  // effective batch, micro-batch × accumulation as configured, is kept); memoryMargin is the
  // fraction of free memory kept back.
  bool autoMicroBatch = false;
  double memoryMargin = 0.10;
  // The stability toggles a run starts with (the controls dock changes them live).
  bool serializeKernels = false;
  bool blockingLaunches = false;
  std::string gemmBackend = "vendor";       // vendor | builtin
  std::string allocatorPolicy = "caching";  // caching | arena
  bool graph = false;                       // whole-step graph mode (train/StepGraphs.h)
  // Validation (train/Evaluation.h): a held-out dataset file, or a seeded share of the data.
  std::string evalData;                    // "" = none; absolute in config.json
  double evalSplit = 0.0;                  // fraction of the examples held out; 0 = none
  std::int64_t evalEvery = 0;              // optimizer steps; 0 = only after the last step
  std::int64_t earlyStoppingPatience = 0;  // evaluations without improvement; 0 = off
  bool evaluates() const { return !evalData.empty() || evalSplit > 0.0; }
  // The profile the run started with ("none"); its supervisor applies it (profiles/Profile.h).
  std::string profile = "none";
};

// The option table's defaults; the demo's are tuned for the built-in demo (a minute on 2 cores).
TrainRunSettings defaultSettings(bool demo);

// Applies `options` (option name → value as typed). Throws UsageError naming the option when a
// name is unknown or a value does not parse or is out of range. The order does not matter: each
// option sets only its own fields, and "epochs" without "steps" runs by epochs (steps = 0).
void applyOptions(TrainRunSettings& settings,
                  const std::vector<std::pair<std::string, std::string>>& options);
void applyOptions(TrainRunSettings& settings, const std::map<std::string, std::string>& options);

// The "training" object of config.json, and back (for --resume; throws UsageError naming the
// field of a config.json that does not parse).
nlohmann::json settingsToJson(const TrainRunSettings& settings);
TrainRunSettings settingsFromJson(const nlohmann::json& training, const std::string& file);

// The config.json of a new run: model and data paths (absolute, the eval data's too; a model given
// as a Hugging Face id is resolved from the hub cache and recorded as model_id), the data file's
// fingerprint, the settings, versions and creation time (the last two are not part of the config
// hash).
nlohmann::json newRunConfig(const std::string& modelPath, const std::string& dataPath, bool demo,
                            const TrainRunSettings& settings);

// FNV-1a 64 of a file's bytes as "fnv1a64:<hex>" (the data file's fingerprint in config.json).
std::string fileFingerprint(const std::string& path);

}  // namespace lorascope::job
