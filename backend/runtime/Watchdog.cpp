// Watchdog.cpp — the hang rule and its report.
#include "runtime/Watchdog.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace lorascope::runtime {
namespace {
std::string seconds(std::int64_t ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms) / 1000.0);
  return text;
}
}  // namespace

Watchdog::Watchdog(WatchdogConfig config, NowMs nowMs)
    : nowMs_(std::move(nowMs)), lastProgressMs_(nowMs_()) {
  setConfig(config);
}

void Watchdog::setConfig(WatchdogConfig config) {
  if (config.hangAfterMs <= 0) {
    throw std::invalid_argument("watchdog: the hang timeout must be positive, got " +
                                std::to_string(config.hangAfterMs) + " ms");
  }
  const std::lock_guard lock(mutex_);
  config_ = config;
}

WatchdogConfig Watchdog::config() const {
  const std::lock_guard lock(mutex_);
  return config_;
}

void Watchdog::noteProgress() {
  const std::int64_t now = nowMs_();
  const std::lock_guard lock(mutex_);
  lastProgressMs_ = now;
}

std::optional<HangReport> Watchdog::check(std::int64_t lastCompletionMs,
                                          const std::optional<PendingOp>& head) const {
  const std::int64_t now = nowMs_();
  const std::lock_guard lock(mutex_);
  const std::int64_t idle = now - std::max(lastCompletionMs, lastProgressMs_);
  if (idle < config_.hangAfterMs) {
    return std::nullopt;
  }
  HangReport report;
  report.idleMs = idle;
  report.error = classifyHang();
  if (head) {
    report.op = head->op;
    report.opIsQueued = true;
    report.waitingMs = now - head->submittedAtMs;
  } else {
    const char* hostOp = hostOp_.load(std::memory_order_relaxed);
    report.op = hostOp != nullptr ? hostOp : "(unknown)";
    report.waitingMs = now - lastProgressMs_;
  }
  report.message = "hang: nothing completed on the GPU and no step progress for " + seconds(idle) +
                   " (limit " + seconds(config_.hangAfterMs) + "); " +
                   (report.opIsQueued ? "the op at the head of the queue is '" + report.op +
                                            "' (submission #" + std::to_string(head->sequence) +
                                            ", waiting " + seconds(report.waitingMs) + ")"
                                      : "no GPU work is queued; the host is in '" + report.op +
                                            "' since " + seconds(report.waitingMs)) +
                   ". " + report.error.advice;
  return report;
}

}  // namespace lorascope::runtime
