// train/RunDirectory.h — writing the folder of a training run (runs/RunFolder.h lays it out and
// reads it): config.json once, metrics.jsonl and the TensorBoard events per step, checkpoints
// with their rotation, Hugging Face's trainer_state.json, the final adapter and its model card,
// all under the folder's writer lock. A crash at any moment leaves complete checkpoints and at
// most a torn last metrics line.
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
#include "runs/RunFolder.h"  // defines: the folder's names, checkOutputFolder, runModelPath,
                             // RunFolder
#include "train/Checkpoint.h"
#include "train/TrainLoop.h"  // defines: StepMetrics

namespace lorascope::train {

using runs::checkOutputFolder;
using runs::kCheckpointsDir;
using runs::kFinalAdapterDir;
using runs::kMetricsFile;
using runs::kRunConfigFile;
using runs::kRunLockFile;

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
  // A writer takes the lock itself, unless its supervisor holds it for it: an engine whose
  // supervisor keeps the run locked across engine restarts (engine/RunFolderLock.h) is given the
  // supervisor's process id, `lockHolder`. The lock must then be held by that process and that
  // process must be this one's parent; a lock held by anyone else is refused as a second writer
  // is, and a lock no one holds is taken as without a supervisor. Should the supervisor end while
  // this writer lives (the system then drops its lock), the next write takes the lock over, or,
  // when another process took it first, is refused with CheckpointError naming that process.
  using LockHolderPid = std::optional<std::uint32_t>;

  // Creates `dir` (and parents) and writes config.json, for writing (Access::Write). `config`
  // must be an object holding "model_path" (recorded as base_model_name_or_path of every
  // adapter). Throws CheckpointError when dir is no folder for a run (checkOutputFolder), already
  // holds a run with progress (resume it or choose another folder), or is locked.
  static RunDirectory create(const std::filesystem::path& dir, const nlohmann::json& config,
                             LockHolderPid lockHolder = std::nullopt);
  // Opens an existing run (reads config.json). Throws CheckpointError when it is not one, or
  // (Access::Write) when another writer holds it.
  static RunDirectory open(const std::filesystem::path& dir, Access access = Access::Read,
                           LockHolderPid lockHolder = std::nullopt);

  const std::filesystem::path& dir() const { return folder_.dir(); }
  const nlohmann::json& config() const { return folder_.config(); }
  const std::string& configHash() const { return configHash_; }
  std::string baseModel() const;  // the model folder (config.json's model_path)
  // What adapters record as base_model_name_or_path: the Hugging Face id the run's model was
  // given as (config.json's model_id), else the folder.
  std::string baseModelName() const;

  // Appends one line and hands it to the kernel (one write(), so a crash tears at most it), and
  // the step's TensorBoard event to the event file.
  void appendMetrics(const StepMetrics& metrics) const;
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
  std::vector<std::int64_t> checkpointSteps() const { return folder_.checkpointSteps(); }
  std::filesystem::path checkpointDir(std::int64_t step) const {
    return folder_.checkpointDir(step);
  }
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
  std::filesystem::path finalAdapterDir() const { return folder_.finalAdapterDir(); }

 private:
  struct Writer;  // the writer's hold on the folder: its lock, or its supervisor's
  RunDirectory(runs::RunFolder folder, std::shared_ptr<Writer> writer);
  // The writer's hold on `dir`: its own lock, or (`lockHolder`) its supervisor's; none for a
  // folder no one may write. Throws CheckpointError naming who holds it otherwise.
  static std::shared_ptr<Writer> lockForWriting(const std::filesystem::path& dir,
                                                LockHolderPid lockHolder);
  // Before each write: a writer whose supervisor held the lock for it and has ended takes the
  // lock over (or throws CheckpointError when another process holds it now).
  void checkWriter() const;

  runs::RunFolder folder_;
  std::shared_ptr<Writer> writer_;  // for Access::Write; shared by copies
  std::string configHash_;
};

}  // namespace lorascope::train
