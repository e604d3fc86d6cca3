// LaunchControl.h — the process-wide launch settings every kernel/BLAS launch consults: the
// launch policy (serialize, blocking; live toggles), the fault injector, the queue tracker and the
// watchdog's view of the host. compute/hip/launch.h reaches it through runtime/hip/GpuLaunch.h;
// the CPU backend wraps each op in a HostOpScope, so that faults, op budgets and hang reports work
// in cpu builds too. The engine's sampler thread reads it with sample() (queues + hang check).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "runtime/FaultInjection.h"
#include "runtime/QueueTracker.h"
#include "runtime/Watchdog.h"

namespace lorascope::runtime {

struct LaunchPolicy {
  // Device-synchronise before and after every launch (what AMD_SERIALIZE_KERNEL=3 does, but
  // switchable at a step boundary).
  bool serialize = false;
  // Wait for each launch to finish before returning, so an error is pinned to the op that
  // raised it (what HIP_LAUNCH_BLOCKING=1 does).
  bool blocking = false;
  bool operator==(const LaunchPolicy&) const = default;
};

// One reading of the sampler: the queues, and a hang report when a step (or a generation) runs
// and an op is over its budget.
struct InstrumentReading {
  std::vector<StreamQueueSample> queues;
  std::optional<HangReport> hang;
};

class LaunchControl {
 public:
  LaunchControl(std::shared_ptr<EventApi> events, FaultConfig faults, NowMs nowMs = steadyClockMs(),
                WatchdogConfig watchdog = {});

  // Live: the next launch sees it. The engine calls it at a step boundary.
  void setPolicy(LaunchPolicy policy);
  LaunchPolicy policy() const;

  // Before an op runs: notes it (and the stream it launches on) for the watchdog, then lets the
  // fault injector act (may throw InjectedFault or block in an injected hang). `op` must be a
  // string literal.
  void enterOp(const char* op, StreamHandle stream = 0);
  // After an op ran on the host (CPU backend): progress for the watchdog.
  void exitOp();
  // The step boundary: step-progress for the watchdog, then step fault rules (may throw
  // InjectedFault or block in an injected hang, reported as the host op "step_begin"). Call with
  // the step about to run; the watchdog checks from here to endStep().
  void beginStep(std::int64_t step);
  void endStep();
  // A generation (the Try it page's) begins: the watchdog checks from here to endStep() as in a
  // step, with the same budgets (an engine's first generations count as its first steps: their
  // kernels load), and its report names no step.
  void beginGeneration();
  bool inStep() const { return inStep_.load(std::memory_order_relaxed); }

  // While a backend captures a graph (train/StepGraphs.h), launches are recorded, not run: the
  // hooks around them skip what needs a running launch (queue events, op timing, the serialize
  // and blocking waits). The graph's replay is one launch, tracked as "step_graph".
  void setCapturing(bool capturing) { capturing_.store(capturing, std::memory_order_relaxed); }
  bool capturing() const { return capturing_.load(std::memory_order_relaxed); }

  FaultInjector& faults() { return faults_; }
  QueueTracker& queues() { return queues_; }
  Watchdog& watchdog() { return watchdog_; }
  // The queues now (completed events popped), and while a step runs the watchdog's verdict.
  InstrumentReading sample();
  // sample().hang.
  std::optional<HangReport> checkHang();
  // Work between steps ended a stage (the state mirror's write awaited, metrics written, a
  // checkpoint saved): a sign of life for lastActivityMs, no op's progress for the watchdog's
  // budgets.
  void noteActivity();
  // The latest sign that the trainer moves: an op entered or returned, a step begun or ended, a
  // GPU launch completed, a stage between steps ended (Watchdog::lastActivityMs,
  // QueueTracker::lastCompletionMs, noteActivity).
  std::int64_t lastActivityMs() const;

 private:
  std::atomic<bool> serialize_{false};
  std::atomic<bool> blocking_{false};
  std::atomic<bool> inStep_{false};
  std::atomic<bool> capturing_{false};
  NowMs nowMs_;
  std::atomic<std::int64_t> stageEndedMs_{0};
  FaultInjector faults_;
  QueueTracker queues_;
  Watchdog watchdog_;
};

// Reports a host-side op (the CPU backend's) to the process-wide LaunchControl: enterOp() when
// made (which may throw an injected fault), exitOp() when it ends.
class HostOpScope {
 public:
  explicit HostOpScope(const char* op);
  ~HostOpScope();
  HostOpScope(const HostOpScope&) = delete;
  HostOpScope& operator=(const HostOpScope&) = delete;
};

// The process-wide instance: HIP events in the hip flavours (none in cpu builds), faults from
// LORASCOPE_FAULTS, the watchdog's budgets from LORASCOPE_WATCHDOG. The first call throws
// FaultSpecError (std::invalid_argument for LORASCOPE_WATCHDOG) when one is malformed.
LaunchControl& launchControl();

// The platform's events for the queue tracker: HIP events in the hip flavours, nullptr in cpu.
std::shared_ptr<EventApi> platformEventApi();

}  // namespace lorascope::runtime
