// LaunchControl.cpp — the launch settings and the process-wide instance.
#include "runtime/LaunchControl.h"

namespace lorascope::runtime {

LaunchControl::LaunchControl(std::shared_ptr<EventApi> events, FaultConfig faults, NowMs nowMs)
    : faults_(std::move(faults)), queues_(std::move(events), nowMs), watchdog_({}, nowMs) {}

void LaunchControl::setPolicy(LaunchPolicy policy) {
  serialize_.store(policy.serialize);
  blocking_.store(policy.blocking);
}

LaunchPolicy LaunchControl::policy() const {
  return {serialize_.load(std::memory_order_relaxed), blocking_.load(std::memory_order_relaxed)};
}

void LaunchControl::enterOp(const char* op) {
  watchdog_.noteHostOp(op);
  faults_.atLaunch(op);
}

void LaunchControl::beginStep(std::int64_t step) {
  watchdog_.noteProgress();
  faults_.atStep(step);
}

std::optional<HangReport> LaunchControl::checkHang() const {
  return watchdog_.check(queues_.lastCompletionMs(), queues_.oldestPending());
}

LaunchControl& launchControl() {
  static LaunchControl control(platformEventApi(), faultConfigFromEnvironment());
  return control;
}

}  // namespace lorascope::runtime
