// job/RunOpening.h — the run job's opening stage: the start command's config made into a run.
// A new run's folder is created with its config.json (the settings from the command's options);
// a resumed one is opened for writing, its settings read back, its data checked against the
// fingerprint it started with, and its state taken from the newest of its state mirror and its
// newest checkpoint (or the checkpoint asked for), the metrics cut back to it.
//
// The start command's config is job/EngineJob.h's; every malformed field is a UsageError naming
// it ("start: \"demo\" must be true or false, got \"yes\"").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "compute/Backend.h"
#include "engine/Engine.h"  // defines: EventSink
#include "group/Collective.h"
#include "job/RunDevice.h"  // defines: DeviceLog
#include "job/TrainRunConfig.h"
#include "model/ModelConfig.h"
#include "train/RunDirectory.h"
#include "train/TrainingData.h"

namespace lorascope::job {

// A rank of a data-parallel group, as the supervisor that formed the group tells each engine it
// starts (the start command's "group": {"rank", "size", "device", "rendezvous"}).
struct RankSpec {
  int rank = 0;
  int size = 1;
  int device = 0;          // the GPU this rank computes on
  std::string rendezvous;  // the group's rendezvous file (group/NcclCollective.h); size > 1
};

// How a rank gets its device and joins its group: the GPU's backend and the NCCL/RCCL group by
// default (defaultRankOpener); CPU backends and an in-process group in the CI tests.
struct RankOpener {
  std::function<std::unique_ptr<compute::Backend>(const RankSpec&)> backend;
  std::function<std::unique_ptr<group::Collective>(const RankSpec&)> join;
};
// The GPU of the spec (its error names the GPU and the remedy) and openNcclGroup with a time-out
// of kCollectiveTimeoutMs.
const RankOpener& defaultRankOpener();
// A collective that waits longer than this is a hang (CollectiveError, timed out): under the
// supervisor's hang time-out (engine/Supervisor.h: 120 s), so that the rank stuck in it names
// the collective before the supervisor ends it for making no progress.
inline constexpr std::int64_t kCollectiveTimeoutMs = 90'000;

// What the start command asks besides the run: whether it resumes, and from where.
struct StartRequest {
  bool resume = false;            // "resume": from the newest checkpoint
  bool resumeFromMirror = false;  // "resume_from_mirror" (the supervisor's): the mirror if newer
  std::optional<std::int64_t> checkpoint;        // "checkpoint": that step's instead
  std::optional<std::int64_t> announcedThrough;  // "announced_through" (the supervisor's)
  // "run_lock_holder" (the supervisor's): the process that holds the run folder's lock for this
  // engine, its parent (train/RunDirectory.h checks both); none: the engine takes the lock.
  std::optional<std::uint32_t> runLockHolder;
  // "group" (the supervisor's): this engine is a rank of a data-parallel group.
  std::optional<RankSpec> group;

  bool resumes() const { return resume || resumeFromMirror; }
  static StartRequest of(const nlohmann::json& config);  // throws UsageError naming the field
};

// The run a start command names, opened: its settings, the device it computes on (opened before a
// new run's folder is made, so that a start that cannot get its device leaves none behind) and its
// folder, held for writing (the lock taken, or held by the supervisor the command names).
//
// A rank of a group (the start's "group") computes on its GPU. Rank 0 opens the run as one engine
// does, then joins the group; the other ranks join first (the group forms once rank 0 has made or
// opened the folder), then open the run to read (Note [rank 0 writes] in group/RankPlan.h): its
// settings come from the config.json rank 0 wrote.
struct OpenedRun {
  TrainRunSettings settings;
  std::unique_ptr<compute::Backend> backend;
  train::RunDirectory run;
  int rank = 0;
  std::unique_ptr<group::Collective> group;  // a group of two or more ranks; else none
  bool writes() const { return rank == 0; }
};
OpenedRun openRun(const nlohmann::json& config, const DeviceLog& log,
                  const RankOpener& opener = defaultRankOpener());

// The run's training data, checked against the model (its vocabulary, its positions); what was
// lost or is doubtful goes to `sink` as warnings.
train::TrainingData loadRunData(const OpenedRun& opened, const model::ModelConfig& model,
                                const engine::EventSink& sink);

// The state a resumed run continues from (none: a fresh run, or a resumed one without a
// checkpoint), the run's metrics cut back to it (by rank 0 only). A damaged newest checkpoint falls
// back to an older one, said through `sink`.
std::optional<train::TrainerState> resumeState(const StartRequest& request, const OpenedRun& opened,
                                               const engine::EventSink& sink);

}  // namespace lorascope::job
