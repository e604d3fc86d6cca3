// train/RunDirectory.h — the folder a training run writes, as the design lays it out:
//   config.json            everything needed to reproduce the run (written once, atomically)
//   metrics.jsonl          one JSON line per optimizer step, appended with one write() each
//   events.out.tfevents.*  the same steps as TensorBoard scalars (train/TfEvents.h)
//   trainer_state.json     Hugging Face Trainer's state and log_history, as of the newest
//                          checkpoint (train/HfLogs.h)
//   checkpoints/step-N/    checkpoint folders (train/Checkpoint.h), assembled under a temp
//                          name and renamed when complete; the last K are kept
//   adapter/               the final adapter in PEFT's format, with a README.md model card
//   run.lock               the writer's lock (common/FileLock.h): who trains the run now
// A crash at any moment leaves complete checkpoints and at most a torn last metrics line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/FileLock.h"
#include "train/Checkpoint.h"
#include "train/TrainLoop.h"  // defines: StepMetrics

namespace lorascope::train {

inline constexpr const char* kRunConfigFile = "config.json";
inline constexpr const char* kMetricsFile = "metrics.jsonl";
inline constexpr const char* kCheckpointsDir = "checkpoints";
inline constexpr const char* kFinalAdapterDir = "adapter";
inline constexpr const char* kRunLockFile = "run.lock";

// The rule of a new run's folder (--out): it is new, empty, or a LoRAscope run folder (one whose
// config.json is a run config: what RunDirectory::create reuses or refuses to overwrite, and the
// window offers to resume); and it is neither the model's folder `modelDir` nor inside it (empty:
// no model to keep out of). Anything else is refused, since the run writes config.json and
// folders into it: throws CheckpointError naming the folder and what it holds.
void checkOutputFolder(const std::filesystem::path& dir, const std::filesystem::path& modelDir);

// One line of metrics.jsonl.
nlohmann::json toJson(const StepMetrics& m);
StepMetrics stepMetricsFromJson(const nlohmann::json& j);  // throws nlohmann::json::exception

// FNV-1a, 64 bit: a stable fingerprint (not a security measure). Pass the previous result as
// `hash` to continue over several pieces.
inline constexpr std::uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash = kFnv1a64Offset);
std::string fnv1a64Text(std::uint64_t hash);  // "fnv1a64:<16 hex digits>"

// Hash of the config fields that decide the training trajectory: the whole config.json except
// "versions" and "created" (tool versions and wall time do not change the numbers).
std::string runConfigHash(const nlohmann::json& config);

class RunDirectory {
 public:
  // Who may use the run: any number of readers (the window's pages, `generate`), or one writer
  // at a time (a trainer, an export), which holds the folder's run.lock while it and its copies
  // live. A second writer is refused with CheckpointError naming the holder's process id and
  // start time; a lock left by a process that was killed is taken over (the system dropped it).
  enum class Access { Read, Write };

  // Creates `dir` (and parents) and writes config.json, for writing (Access::Write). `config`
  // must be an object holding "model_path" (recorded as base_model_name_or_path of every
  // adapter). Throws CheckpointError when dir is no folder for a run (checkOutputFolder), already
  // holds a run with progress (resume it or choose another folder), or is locked.
  static RunDirectory create(const std::filesystem::path& dir, const nlohmann::json& config);
  // Opens an existing run (reads config.json). Throws CheckpointError when it is not one, or
  // (Access::Write) when another writer holds it.
  static RunDirectory open(const std::filesystem::path& dir, Access access = Access::Read);

  const std::filesystem::path& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }
  const std::string& configHash() const { return configHash_; }
  std::string baseModel() const;  // the model folder (config.json's model_path)
  // What adapters record as base_model_name_or_path: the Hugging Face id the run's model was
  // given as (config.json's model_id), else the folder.
  std::string baseModelName() const;

  // Appends one line and hands it to the kernel (one write(), so a crash tears at most it), and
  // the step's TensorBoard event to the event file.
  void appendMetrics(const StepMetrics& metrics) const;
  // Lines of a metrics file; a torn (unparseable, unterminated) last line is skipped. Throws
  // CheckpointError naming the line for a malformed line elsewhere.
  static std::vector<StepMetrics> readMetrics(const std::filesystem::path& file);
  // Adds an evaluation run after its step's line was written (one cut short by a pause or stop,
  // run again before the next step): the step's last line gains it (the file rewritten durably),
  // and the event file an eval/loss event at that step. Throws CheckpointError when no line holds
  // that step.
  void recordEvaluation(const EvalMetrics& eval) const;
  // Drops lines and events after `step` (and a torn tail), so a resumed run continues both
  // files cleanly.
  void truncateMetricsAfter(std::int64_t step) const;

  // Writes checkpoints/step-N (N = state.step) and then deletes all but the newest `keepLast`
  // complete checkpoints (keepLast ≤ 0 keeps all). Returns the folder.
  std::filesystem::path saveCheckpoint(const TrainerState& state, int keepLast) const;
  std::vector<std::int64_t> checkpointSteps() const;  // complete ones, ascending
  std::filesystem::path checkpointDir(std::int64_t step) const;
  // The newest intact checkpoint, or the one of `step`; checks the config hash against
  // config.json, and the checksums and values of every file. Without `step`, a damaged newest
  // checkpoint falls back to the newest intact one and `onFallback` hears which were skipped
  // and why. Throws CheckpointError when there is none (or not that one), naming what exists.
  TrainerState loadCheckpoint(std::optional<std::int64_t> step = std::nullopt,
                              const std::function<void(const std::string&)>& onFallback = {}) const;

  // Writes adapter/ (PEFT format and README.md), replacing an older final adapter atomically.
  void saveFinalAdapter(const LoraAdapter& adapter) const;
  // Writes dir/README.md, the model card of `adapter` as trained by this run up to `step` (the
  // last step of metrics.jsonl when unset): base model, LoRA settings, dataset, steps, loss.
  void writeModelCard(const std::filesystem::path& dir, const LoraAdapter& adapter,
                      std::optional<std::int64_t> step = std::nullopt) const;
  std::filesystem::path finalAdapterDir() const { return dir_ / kFinalAdapterDir; }

 private:
  RunDirectory(std::filesystem::path dir, nlohmann::json config,
               std::shared_ptr<const common::FileLock> lock);

  std::filesystem::path dir_;
  std::shared_ptr<const common::FileLock> lock_;  // held for Access::Write; shared by copies
  nlohmann::json config_;
  std::string configHash_;
};

}  // namespace lorascope::train
