// runs/RunFolder.h — the read side of a training run's folder: its names, the rule for a new
// run's --out folder, and reading what a run wrote (config.json, metrics.jsonl, which checkpoints
// are complete). The window's pages read runs through it; writing a run (the lock, checkpoints,
// the final adapter) is train/RunDirectory.h's. The folder, as the design lays it out:
//   config.json            everything needed to reproduce the run (written once, atomically)
//   metrics.jsonl          one StepRecord line per optimizer step (runs/StepRecord.h)
//   events.out.tfevents.*  the same steps as TensorBoard scalars (train/TfEvents.h)
//   trainer_state.json     Hugging Face Trainer's state and log_history (train/HfLogs.h)
//   checkpoints/step-N/    checkpoint folders, assembled under a temp name and renamed when
//                          complete; the last K are kept
//   adapter/               the final adapter in PEFT's format, with a README.md model card
//   run.lock               the writer's lock (common/FileLock.h): who trains the run now
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/FileLock.h"  // defines: kRunLockFile
#include "runs/StepRecord.h"

namespace lorascope::runs {

inline constexpr const char* kRunConfigFile = "config.json";
inline constexpr const char* kMetricsFile = "metrics.jsonl";
inline constexpr const char* kCheckpointsDir = "checkpoints";
inline constexpr const char* kFinalAdapterDir = "adapter";
inline constexpr const char* kRunLockFile = common::kRunLockFile;

// The rule of a new run's folder (--out): it is new, empty, or a LoRAscope run folder (one whose
// config.json is a run config: what RunDirectory::create reuses or refuses to overwrite, and the
// window offers to resume); and it is neither the model's folder `modelDir` nor inside it (empty:
// no model to keep out of). Anything else is refused, since the run writes config.json and
// folders into it: throws RunFileError naming the folder and what it holds.
void checkOutputFolder(const std::filesystem::path& dir, const std::filesystem::path& modelDir);

// `wanted` when nothing is there, or else the first of wanted-2, wanted-3, ... with nothing
// there: the folder of a new run or command named by the time of its start, so that one started
// within the same second as the one before gets a folder of its own (the first's would otherwise
// be resumed, taken over or refused by the folder rule).
std::filesystem::path unusedFolder(const std::filesystem::path& wanted);

// Whether `configPath` is a LoRAscope run's config.json (a JSON object with a "model_path"
// string), not a model's or anything else's.
bool isRunConfig(const std::filesystem::path& configPath);
// The model a run folder trained on (its config.json's model_path), read without opening the run;
// none when `dir` is not a run's folder (a model's, an adapter's, nothing).
std::optional<std::string> runModelPath(const std::filesystem::path& dir);

// "step-120" → 120: a complete checkpoint's folder name; anything else (the temp folders of one
// being written, stray files) → none.
std::optional<std::int64_t> checkpointStepOfName(const std::string& name);
std::string checkpointFolderName(std::int64_t step);  // 120 → "step-120"

// A run folder as it is on disk, read: its config.json (read once, at open) and, on each call,
// its steps and checkpoints.
class RunFolder {
 public:
  // Reads config.json. Throws RunFileError when it is missing or not a run config.
  static RunFolder open(const std::filesystem::path& dir);
  // The folder whose config.json its writer has just written as `config`.
  RunFolder(std::filesystem::path dir, nlohmann::json config)
      : dir_(std::move(dir)), config_(std::move(config)) {}

  const std::filesystem::path& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }
  std::filesystem::path metricsFile() const { return dir_ / kMetricsFile; }
  std::vector<StepRecord> readSteps() const { return readStepRecords(metricsFile()); }
  std::vector<std::int64_t> checkpointSteps() const;  // complete ones, ascending
  std::filesystem::path checkpointDir(std::int64_t step) const;
  std::filesystem::path finalAdapterDir() const { return dir_ / kFinalAdapterDir; }

 private:
  std::filesystem::path dir_;
  nlohmann::json config_;
};

}  // namespace lorascope::runs
