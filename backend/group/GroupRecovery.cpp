// group/GroupRecovery.cpp — the fault fan-out of a group (the rules are in the header).
#include "group/GroupRecovery.h"

#include <stdexcept>

#include "group/RankPlan.h"  // defines: gpuListText

namespace lorascope::group {

using runtime::ErrorCategory;
using runtime::RecoveryRung;

RankFault collectiveFault(int rank, const CollectiveError& error) {
  RankFault fault;
  fault.rank = rank;
  fault.collective = error.op();
  fault.collectiveTimedOut = error.timedOut();
  const std::string what = collectiveOpName(error.op());
  if (error.timedOut()) {
    fault.error = runtime::classifyHang();
    fault.error.signature = what;
    fault.error.advice = "the collective " + what + " of rank " + std::to_string(rank) +
                         " hung: a rank never arrived (" + error.what() +
                         "). The group restarts from its newest state";
    return fault;
  }
  fault.error = runtime::classifyError("", error.what(), what);
  if (fault.error.category == ErrorCategory::Unknown) {
    fault.error.signature = what;
    fault.error.advice = "the collective " + what + " failed on rank " + std::to_string(rank) +
                         " (" + error.what() + "). The group restarts on the same rung";
  }
  return fault;
}

const char* groupActionName(GroupAction action) {
  switch (action) {
    case GroupAction::Restart:
      return "restart";
    case GroupAction::ContinueWithoutLost:
      return "continue_without_lost";
    case GroupAction::Stop:
      return "stop";
  }
  return "unknown";
}

const RankFault* causeOf(std::span<const RankFault> faults) {
  for (const RankFault& f : faults) {
    if (!f.collective) {
      return &f;
    }
  }
  return faults.empty() ? nullptr : &faults.front();
}

GroupRecovery planGroupRecovery(const std::vector<int>& devices, RecoveryRung current,
                                std::span<const RankFault> faults) {
  const RankFault* cause = causeOf(faults);
  if (cause == nullptr) {
    throw std::invalid_argument("planGroupRecovery: no fault");
  }
  const int size = static_cast<int>(devices.size());
  for (const RankFault& f : faults) {
    if (f.rank < 0 || f.rank >= size) {
      throw std::invalid_argument("planGroupRecovery: rank " + std::to_string(f.rank) +
                                  " is outside the group of " + std::to_string(size));
    }
  }
  GroupRecovery plan;
  plan.cause = cause->rank;
  for (int r = 0; r < size; ++r) {
    if (r != cause->rank) {
      plan.ranksToEnd.push_back(r);
    }
  }
  const std::string who = "rank " + std::to_string(cause->rank) + " (GPU " +
                          std::to_string(devices[static_cast<std::size_t>(cause->rank)]) +
                          "): " + runtime::categoryName(cause->error.category);
  if (cause->error.category == ErrorCategory::NoDevice) {
    plan.action = GroupAction::ContinueWithoutLost;
    plan.rung = current;
    plan.devices = devices;
    plan.devices.erase(plan.devices.begin() + cause->rank);
    plan.reason = who + ": the GPU is gone; continue on GPU(s) " + gpuListText(plan.devices) +
                  " from the newest state (the same loss curve), or stop";
    if (plan.devices.empty()) {
      plan.action = GroupAction::Stop;
      plan.reason = who + ": the run's only GPU is gone";
    }
    return plan;
  }
  const bool libraryError = cause->collective && !cause->collectiveTimedOut &&
                            cause->error.category == ErrorCategory::Unknown;
  const std::optional<RecoveryRung> next =
      libraryError ? std::optional(current) : runtime::nextRung(current, cause->error);
  if (!next) {
    plan.action = GroupAction::Stop;
    plan.rung = current;
    plan.reason = who + ": the recovery ladder is exhausted";
    return plan;
  }
  plan.action = GroupAction::Restart;
  plan.rung = *next;
  if (*next == RecoveryRung::Cpu) {
    plan.reason = who + ": every rank restarts as one rank on the CPU (the ladder's last rung)";
    return plan;  // Note [the CPU rung of a group]: devices empty
  }
  plan.devices = devices;
  plan.reason = who + ": all " + std::to_string(size) + " ranks restart on rung " +
                runtime::rungName(*next) + " from the newest state";
  return plan;
}

}  // namespace lorascope::group
