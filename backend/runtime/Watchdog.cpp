// Watchdog.cpp — the hang rule, the op budgets and the report.
#include "runtime/Watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace lorascope::runtime {
namespace {
// Shorter op times print as "0.0 s": below this the report says "within 0.1 s" instead.
constexpr std::int64_t kShortestShownMs = 100;

std::string seconds(std::int64_t ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms) / 1000.0);
  return text;
}

}  // namespace

WatchdogConfig watchdogConfigFromEnvironment() {
  const char* spec = std::getenv(kWatchdogEnvVar);
  return spec == nullptr || *spec == '\0' ? WatchdogConfig{} : parseWatchdogSpec(spec);
}

Watchdog::Watchdog(WatchdogConfig config, NowMs nowMs)
    : nowMs_(std::move(nowMs)), lastProgressMs_(nowMs_()) {
  setConfig(config);
  hostOpSinceMs_.store(lastProgressMs_, std::memory_order_relaxed);
}

void Watchdog::setConfig(WatchdogConfig config) {
  if (config.graceMs <= 0 || config.firstStepsMs <= 0) {
    throw std::invalid_argument("watchdog: the hang budgets must be positive, got " +
                                std::to_string(config.graceMs) + " ms grace and " +
                                std::to_string(config.firstStepsMs) + " ms for the first steps");
  }
  const std::lock_guard lock(mutex_);
  config_ = config;
}

WatchdogConfig Watchdog::config() const {
  const std::lock_guard lock(mutex_);
  return config_;
}

void Watchdog::noteHostOp(const char* op, StreamHandle stream) {
  hostOpSinceMs_.store(nowMs_(), std::memory_order_relaxed);
  hostStream_.store(stream, std::memory_order_relaxed);
  hostOp_.store(op, std::memory_order_relaxed);
}

void Watchdog::noteProgress() {
  const std::int64_t now = nowMs_();
  const std::lock_guard lock(mutex_);
  lastProgressMs_ = now;
  if (const char* op = hostOp_.load(std::memory_order_relaxed)) {
    std::int64_t& longest = longestHostMs_[op];
    longest = std::max(longest, now - hostOpSinceMs_.load(std::memory_order_relaxed));
  }
}

void Watchdog::noteStepBegun(std::int64_t step) {
  const std::int64_t now = nowMs_();
  const std::lock_guard lock(mutex_);
  lastProgressMs_ = now;
  step_ = step;
  ++stepsBegun_;
}

std::int64_t Watchdog::lastActivityMs() const {
  const std::int64_t entered = hostOpSinceMs_.load(std::memory_order_relaxed);
  const std::lock_guard lock(mutex_);
  return std::max(lastProgressMs_, entered);
}

std::int64_t Watchdog::longestHostMs(const char* op) const {
  std::int64_t longest = 0;
  for (const auto& [name, ms] : longestHostMs_) {
    if (std::strcmp(name, op) == 0) {
      longest = std::max(longest, ms);  // the same name may be more than one literal
    }
  }
  return longest;
}

std::optional<HangReport> Watchdog::check(std::int64_t lastCompletionMs,
                                          const std::optional<PendingOp>& head) const {
  QueueView view;
  view.lastCompletionMs = lastCompletionMs;
  view.head = head;
  view.headStream = head ? "stream 1" : "";
  return check(view);
}

std::optional<HangReport> Watchdog::check(const QueueView& queues) const {
  const std::int64_t now = nowMs_();
  const std::lock_guard lock(mutex_);
  const std::int64_t idle = now - std::max(queues.lastCompletionMs, lastProgressMs_);
  HangReport report;
  report.idleMs = idle;
  report.step = step_;
  report.queues = queues.state;
  if (queues.head) {
    report.op = queues.head->op;
    report.stream = queues.headStream;
    report.opIsQueued = true;
    report.waitingMs = now - queues.head->submittedAtMs;
    report.expectedMs = queues.headExpectedMs;
  } else {
    const char* hostOp = hostOp_.load(std::memory_order_relaxed);
    report.op = hostOp != nullptr ? hostOp : "(unknown)";
    report.stream = queues.hostStream;
    report.waitingMs = now - hostOpSinceMs_.load(std::memory_order_relaxed);
    report.expectedMs = hostOp != nullptr ? longestHostMs(hostOp) : 0;
  }
  report.budgetMs = report.expectedMs + config_.graceMs;
  const bool firstSteps = stepsBegun_ >= 1 && stepsBegun_ <= config_.firstSteps;
  if (firstSteps) {
    report.budgetMs = std::max(report.budgetMs, config_.firstStepsMs);
  }
  if (idle < report.budgetMs) {
    return std::nullopt;
  }
  report.error = classifyHang();
  if (step_ == 0) {  // a generation: no run, no micro-batch to make smaller
    report.error.advice =
        "The generation made no progress within the hang limit; the engine is restarted: "
        "generate again. Fewer new tokens or a shorter prompt shorten each op; serialized, "
        "blocking launches (AMD_SERIALIZE_KERNEL=3, or CUDA_LAUNCH_BLOCKING=1 on NVIDIA, in "
        "lorascope-train generate's environment) show which op hangs.";
  }
  // An op that always returned at once (an asynchronous launch) or was never seen has the grace
  // alone as its budget: "the longest it took before, 0.0 s" would read as a measurement.
  const std::string budget =
      firstSteps
          ? "the first " + std::to_string(config_.firstSteps) +
                (step_ > 0 ? " steps'" : " generations'") + " budget of " + seconds(report.budgetMs)
      : report.expectedMs >= kShortestShownMs
          ? "its budget of " + seconds(report.budgetMs) + " (the longest it took before, " +
                seconds(report.expectedMs) + ", + " + seconds(config_.graceMs) + ")"
          : "its budget of " + seconds(report.budgetMs) + " (the grace alone: it has not taken " +
                seconds(kShortestShownMs) + " before)";
  const std::string where =
      report.opIsQueued
          ? "the op at the head of the queue, which the GPU has not finished, is '" + report.op +
                "' (submission #" + std::to_string(queues.head->sequence) + ", waiting " +
                seconds(report.waitingMs) + ") on stream " + report.stream
          // Nothing queued: the GPU is idle and waits for the host, which is stuck in the op.
          : "no GPU work is queued, so the GPU is idle: the host is in '" + report.op + "'" +
                (report.stream == "host" ? std::string(" (a host op)")
                                         : " (which launches on stream " + report.stream + ")") +
                " and has not returned for " + seconds(report.waitingMs) +
                " (a host computation, a driver call or a lock that does not return)";
  // The way out when the op was only slow (a first step on a small or busy GPU): the budgets are
  // the user's to raise, and the report says how.
  const std::string slowOnly = " If the op is only slow, " + std::string(kWatchdogEnvVar) + "=" +
                               settings::watchdogSpec(config_) +
                               " (GRACE_S,FIRST_STEPS_S, today's budgets) with larger values, in "
                               "the profile's environment or LoRAscope's, gives it longer.";
  report.message = "hang" + (step_ > 0 ? " in step " + std::to_string(step_) : std::string()) +
                   ": no progress for " + seconds(idle) + ", over " + budget + "; " + where +
                   (queues.state.empty() ? "" : "; queues: " + queues.state) + ". " +
                   report.error.advice + slowOnly;
  return report;
}

}  // namespace lorascope::runtime
