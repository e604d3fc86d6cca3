// Watchdog.h — hang detection: no GPU event completed and no step progress for N seconds means
// the run hangs. The report names the op at the head of the queue (or the op the host is stuck
// in, when nothing is queued) and how long it has waited, so the supervisor can restart the
// engine with something to say. Pure logic with an injectable clock; the engine's sampler calls
// check() while training runs (not while paused).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/ErrorClassifier.h"
#include "runtime/QueueTracker.h"

namespace lorascope::runtime {

struct WatchdogConfig {
  std::int64_t hangAfterMs = 120'000;  // long enough for a first-step kernel compile or autotune
};

struct HangReport {
  std::string op;
  bool opIsQueued = false;     // true: the head of a GPU queue; false: the host's current op
  std::int64_t waitingMs = 0;  // since the op was submitted (queued) or since the last progress
  std::int64_t idleMs = 0;     // since the last completed event or step progress
  std::string message;
  ErrorClass error;  // classifyHang()
};

class Watchdog {
 public:
  explicit Watchdog(WatchdogConfig config = {}, NowMs nowMs = steadyClockMs());

  void setConfig(WatchdogConfig config);  // throws std::invalid_argument for hangAfterMs <= 0
  WatchdogConfig config() const;
  // The trainer made progress (an op returned on the host, a step finished).
  void noteProgress();
  // The op the host is about to run; `op` must outlive the run (launch passes string literals).
  void noteHostOp(const char* op) { hostOp_.store(op, std::memory_order_relaxed); }

  std::optional<HangReport> check(std::int64_t lastCompletionMs,
                                  const std::optional<PendingOp>& head) const;

 private:
  const NowMs nowMs_;
  mutable std::mutex mutex_;
  WatchdogConfig config_;
  std::int64_t lastProgressMs_ = 0;
  std::atomic<const char*> hostOp_{nullptr};
};

}  // namespace lorascope::runtime
