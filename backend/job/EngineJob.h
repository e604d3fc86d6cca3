// job/EngineJob.h — the training run as the engine drives it (`lorascope-train engine`, the
// in-process host): one optimizer step per call, the run directory kept as `train` keeps it,
// and the trainer state mirrored after every step (or, when the writer is slower than a step,
// every step it is free for) so a crashed engine resumes without losing an announced step.
//
// The start command's config:
//   {"model": DIR, "data": FILE, "out": RUN_DIR, "options": {"lr": 1e-4, "lora-r": 16, ...}}
//   {"demo": true, "out": RUN_DIR}                the built-in demo model and dataset
//   {"out": RUN_DIR, "resume": true}              continue a run from its newest checkpoint
//     "checkpoint": N                             ... from the checkpoint of step N instead
//     "device": "cpu"|"gpu"|"auto"                ... on another device (this session only)
//   "resume_from_mirror": true                    (added by the supervisor) continue from the
//                                                 state mirror when it is newer
//   "announced_through": N                        (added by the supervisor) the last step it
//                                                 passed on: completed steps after it are replayed
//   "run_lock_holder": PID                        (added by the supervisor) it holds the run
//                                                 folder's lock for this engine, its child
//   "group": {"rank": R, "size": N,               (added by the supervisor) this engine is rank R
//             "device": D, "rendezvous": FILE}    of a data-parallel group of N, on GPU D, the
//                                                 group's id passed through FILE; ranks other
//                                                 than 0 write nothing to the run (Note [rank 0
//                                                 writes] in group/RankPlan.h) and announce no
//                                                 steps; a failed or hung collective, and out of
//                                                 memory, are sticky errors that restart the group
// Option names are those of `lorascope-train train` (see its --help).
#pragma once

#include <memory>

#include "engine/Engine.h"
#include "job/RunOpening.h"  // defines: RankOpener

namespace lorascope::job {

// The engine's job factory for training runs. Throws std::exception with a user-facing message.
std::unique_ptr<engine::EngineJob> createTrainingJob(const nlohmann::json& config,
                                                     const engine::EventSink& sink);
// The same with the rank's device and group from `opener` (tests: CPU backends, in-process group).
std::unique_ptr<engine::EngineJob> createRankJob(const nlohmann::json& config,
                                                 const engine::EventSink& sink,
                                                 const RankOpener& opener);

// The state mirror of a run directory.
inline constexpr const char* kStateMirrorFile = "state.mirror";
// The LORASCOPE_FAULTS rules that fired in this run (runtime::FaultLedger).
inline constexpr const char* kFaultLedgerFile = "faults.ledger";

}  // namespace lorascope::job
