// LaunchControl.cpp — the launch settings, the sampler's reading and the process-wide instance.
#include "runtime/LaunchControl.h"

#include <algorithm>

namespace lorascope::runtime {

LaunchControl::LaunchControl(std::shared_ptr<EventApi> events, FaultConfig faults, NowMs nowMs,
                             WatchdogConfig watchdog)
    : nowMs_(nowMs),
      faults_(std::move(faults)),
      queues_(std::move(events), nowMs),
      watchdog_(watchdog, nowMs) {}

void LaunchControl::setPolicy(LaunchPolicy policy) {
  serialize_.store(policy.serialize);
  blocking_.store(policy.blocking);
}

LaunchPolicy LaunchControl::policy() const {
  return {serialize_.load(std::memory_order_relaxed), blocking_.load(std::memory_order_relaxed)};
}

void LaunchControl::enterOp(const char* op, StreamHandle stream) {
  watchdog_.noteHostOp(op, stream);
  faults_.atLaunch(op);
}

void LaunchControl::exitOp() {
  watchdog_.noteProgress();
}

void LaunchControl::beginStep(std::int64_t step) {
  watchdog_.noteStepBegun(step);
  inStep_.store(true, std::memory_order_relaxed);
  watchdog_.noteHostOp("step_begin");
  faults_.atStep(step);
  watchdog_.noteProgress();
}

void LaunchControl::endStep() {
  inStep_.store(false, std::memory_order_relaxed);
  watchdog_.noteProgress();
}

void LaunchControl::beginGeneration() {
  watchdog_.noteStepBegun(0);
  inStep_.store(true, std::memory_order_relaxed);
  watchdog_.noteHostOp("generation_begin");
  watchdog_.noteProgress();
}

void LaunchControl::noteActivity() {
  stageEndedMs_.store(nowMs_(), std::memory_order_relaxed);
}

std::int64_t LaunchControl::lastActivityMs() const {
  return std::max({watchdog_.lastActivityMs(), queues_.lastCompletionMs(),
                   stageEndedMs_.load(std::memory_order_relaxed)});
}

InstrumentReading LaunchControl::sample() {
  InstrumentReading reading;
  reading.queues = queues_.sample();
  if (!inStep()) {
    return reading;
  }
  QueueView view;
  view.lastCompletionMs = queues_.lastCompletionMs();
  const StreamHandle hostStream = watchdog_.hostStream();
  for (const StreamQueueSample& s : reading.queues) {
    view.state +=
        (view.state.empty() ? "" : ", ") + s.name + " " + std::to_string(s.depth) + " in flight";
    if (s.head && (!view.head || s.head->submittedAtMs < view.head->submittedAtMs)) {
      view.head = s.head;
      view.headStream = s.name;
    }
    if (hostStream != 0 && s.stream == hostStream) {
      view.hostStream = s.name;
    }
  }
  if (view.head) {
    view.headExpectedMs = queues_.longestServiceMs(view.head->op);
  }
  reading.hang = watchdog_.check(view);
  return reading;
}

std::optional<HangReport> LaunchControl::checkHang() {
  return sample().hang;
}

HostOpScope::HostOpScope(const char* op) {
  launchControl().enterOp(op);
}

HostOpScope::~HostOpScope() {
  launchControl().exitOp();
}

LaunchControl& launchControl() {
  static LaunchControl control(platformEventApi(), faultConfigFromEnvironment(), steadyClockMs(),
                               watchdogConfigFromEnvironment());
  return control;
}

}  // namespace lorascope::runtime
