// Watchdog.h — hang detection: an op that makes no progress for its budget means the run hangs.
// Progress is a completed GPU event, an op returning on the host, or a step beginning. The budget
// of an op is the longest it has been seen to take plus a grace period (10 s by default); while the
// first steps of an engine run (kernel compilation, GEMM autotuning) it is at least a longer one.
// The report names the op at the head of the queue (or the op the host is stuck in, when nothing
// is queued), its stream, the queues' state and the seconds stuck, so the engine can say what hung
// and the supervisor can restart it with something to say. Pure logic with an injectable clock;
// the engine's sampler thread calls check() while a step or a generation runs
// (runtime/LaunchControl.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "runtime/ErrorClassifier.h"
#include "runtime/QueueTracker.h"
#include "settings/WatchdogSpec.h"  // defines: WatchdogConfig, kWatchdogEnvVar, parseWatchdogSpec

namespace lorascope::runtime {

// The budgets and LORASCOPE_WATCHDOG, their one spelling, are the settings': a profile sets the
// variable too (profiles/Environment.cpp).
using settings::kWatchdogEnvVar;
using settings::parseWatchdogSpec;
using settings::WatchdogConfig;
// The budgets in LORASCOPE_WATCHDOG, or the defaults when it is unset or blank.
WatchdogConfig watchdogConfigFromEnvironment();

struct HangReport {
  std::string op;
  std::string stream;           // the op's stream ("host" for an op that runs on the host)
  bool opIsQueued = false;      // true: the head of a GPU queue; false: the host's current op
  std::int64_t waitingMs = 0;   // since the op was submitted (queued) or entered (host)
  std::int64_t idleMs = 0;      // seconds stuck: since the last completed event or progress
  std::int64_t budgetMs = 0;    // what the op was allowed
  std::int64_t expectedMs = 0;  // the longest the op had taken before (0: never seen)
  std::int64_t step = 0;        // the step that hangs (0: none begun)
  std::string queues;           // the queues' state: "compute 37 in flight"
  std::string message;
  ErrorClass error;  // classifyHang()
};

// What the watchdog is told about the queues when it checks.
struct QueueView {
  std::int64_t lastCompletionMs = 0;
  std::optional<PendingOp> head;    // the oldest op pending on any stream
  std::string headStream;           // its stream's name
  std::int64_t headExpectedMs = 0;  // QueueTracker::longestServiceMs of the head's op
  std::string hostStream = "host";  // the name of the stream the host's op launches on
  std::string state;                // for the report ("compute 37 in flight")
};

class Watchdog {
 public:
  explicit Watchdog(WatchdogConfig config = {}, NowMs nowMs = steadyClockMs());

  // Throws std::invalid_argument for a non-positive grace or first-steps budget.
  void setConfig(WatchdogConfig config);
  WatchdogConfig config() const;
  // The trainer made progress (an op returned on the host). The host's op, if any, has taken
  // as long as it has been in: its longest time is kept for its budget.
  void noteProgress();
  // A step begins (0: a generation, which has no step): progress, and the count of steps this
  // process has begun.
  void noteStepBegun(std::int64_t step);
  // The op the host is about to run and the stream it launches on (0: none, a host op);
  // `op` must outlive the run (launches pass string literals). Lock-free: called per launch.
  void noteHostOp(const char* op, StreamHandle stream = 0);
  StreamHandle hostStream() const { return hostStream_.load(std::memory_order_relaxed); }

  // The latest sign of life of the trainer's thread on the watchdog's clock: progress, a step
  // begun or an op entered (a GPU launch issued). Stuck in an op or a hang, it stays put.
  std::int64_t lastActivityMs() const;

  std::optional<HangReport> check(const QueueView& queues) const;
  // check() with nothing but the last completion and the head of the queue known.
  std::optional<HangReport> check(std::int64_t lastCompletionMs,
                                  const std::optional<PendingOp>& head) const;

 private:
  std::int64_t longestHostMs(const char* op) const;  // caller holds mutex_

  const NowMs nowMs_;
  mutable std::mutex mutex_;
  WatchdogConfig config_;
  std::int64_t lastProgressMs_ = 0;
  std::int64_t step_ = 0;
  std::int64_t stepsBegun_ = 0;
  std::unordered_map<const char*, std::int64_t> longestHostMs_;  // by op literal
  std::atomic<const char*> hostOp_{nullptr};
  std::atomic<std::int64_t> hostOpSinceMs_{0};
  std::atomic<StreamHandle> hostStream_{0};
};

}  // namespace lorascope::runtime
