// group/GroupRecovery.h — what a group does when one of its ranks fails (pure logic; the engine
// supervisor acts on it).
//
// - One rank's fault is the group's fault: the other ranks would wait in their next collective
//   for a peer that is gone, so every rank is ended and the group restarts from the newest state
//   (rank 0's state mirror, Note [rank 0 writes] in group/RankPlan.h). No completed step is lost.
// - The first fault is the cause. A peer's collective that failed or timed out because that rank
//   died is a consequence and decides nothing; a collective error with no other fault is the
//   cause itself: a hung collective is a hang naming the collective, a library error (NCCL/RCCL:
//   the transport, a peer's abort) restarts the group on the same rung, since no rung of the
//   ladder changes the transport.
// - The ladder applies to every rank: the group restarts with all its ranks on the rung the fault
//   calls for (runtime::nextRung), so that every rank computes the same way (the same GEMM, the
//   same launch policy, the same micro-batch).
// - The ladder's CPU rung (Note [the CPU rung of a group]): the group becomes one rank on the CPU,
//   continuing from the same state with the same effective batch. Micro-batches keep their global
//   index (Note [micro-batches are the unit of work]), so the one rank continues the group's loss
//   curve; the run is slow but not lost, as for one GPU.
// - A GPU that disappears (the category no_device on one rank): the run stops with a choice,
//   carried in the answer: continue on the remaining GPUs (the same curve, fewer ranks) or stop.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "group/Collective.h"
#include "runtime/ErrorClassifier.h"

namespace lorascope::group {

// One rank's failure as its supervisor saw it.
struct RankFault {
  int rank = 0;
  runtime::ErrorClass error;
  // Set when the failure was a collective of this rank that failed or timed out.
  std::optional<CollectiveOp> collective;
  bool collectiveTimedOut = false;
};

// A collective error as a rank's fault: a time-out is a hang naming the collective; a library
// error is classified by its text (runtime::classifyError: an out-of-memory of NCCL's buffers is
// out_of_memory) and otherwise stays unknown.
RankFault collectiveFault(int rank, const CollectiveError& error);

enum class GroupAction {
  Restart,              // every rank restarts on `rung` with `devices`
  ContinueWithoutLost,  // a GPU disappeared: ask whether to continue on `devices` (the others)
  Stop,                 // the ladder is exhausted
};
const char* groupActionName(GroupAction action);  // "restart", "continue_without_lost", "stop"

struct GroupRecovery {
  GroupAction action = GroupAction::Restart;
  runtime::RecoveryRung rung = runtime::RecoveryRung::VendorBlas;
  std::vector<int> devices;     // GPU indices of the next group; empty: one rank on the CPU
  int cause = 0;                // the rank whose fault decided it
  std::vector<int> ranksToEnd;  // every other rank of the failed group, ended before the restart
  std::string reason;           // for the incident and the ladder event
};

// The fault that decides among `faults` (in the order the supervisor saw them): the first that is
// not a collective error; the first of all when every one is. nullptr for none.
const RankFault* causeOf(std::span<const RankFault> faults);

// What the group of `devices` (rank r on devices[r]) on rung `current` does after `faults`.
// Throws std::invalid_argument when `faults` is empty or names a rank outside the group.
GroupRecovery planGroupRecovery(const std::vector<int>& devices, runtime::RecoveryRung current,
                                std::span<const RankFault> faults);

}  // namespace lorascope::group
