// LaunchControl.h — the process-wide launch settings every kernel/BLAS launch consults: the
// launch policy (serialize, blocking; live toggles), the fault injector, the queue tracker and the
// watchdog's view of the host. compute/hip/launch.h reaches it through runtime/hip/GpuLaunch.h;
// CPU code paths call enterOp() so that faults and hang reports work in cpu builds too.
#pragma once

#include <atomic>
#include <memory>

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

class LaunchControl {
 public:
  LaunchControl(std::shared_ptr<EventApi> events, FaultConfig faults,
                NowMs nowMs = steadyClockMs());

  // Live: the next launch sees it. The engine calls it at a step boundary.
  void setPolicy(LaunchPolicy policy);
  LaunchPolicy policy() const;

  // Before an op runs: notes it for the watchdog, then lets the fault injector act (may throw
  // InjectedFault or block in an injected hang). `op` must be a string literal.
  void enterOp(const char* op);
  // The step boundary: step-progress for the watchdog, then step fault rules (may throw
  // InjectedFault or block in an injected hang). Call with the step about to run.
  void beginStep(std::int64_t step);

  FaultInjector& faults() { return faults_; }
  QueueTracker& queues() { return queues_; }
  Watchdog& watchdog() { return watchdog_; }
  // watchdog().check() fed with this tracker's queue state.
  std::optional<HangReport> checkHang() const;

 private:
  std::atomic<bool> serialize_{false};
  std::atomic<bool> blocking_{false};
  FaultInjector faults_;
  QueueTracker queues_;
  Watchdog watchdog_;
};

// The process-wide instance: HIP events in the hip flavours (none in cpu builds), faults from
// LORASCOPE_FAULTS. The first call throws FaultSpecError when that variable is malformed.
LaunchControl& launchControl();

// The platform's events for the queue tracker: HIP events in the hip flavours, nullptr in cpu.
std::shared_ptr<EventApi> platformEventApi();

}  // namespace lorascope::runtime
