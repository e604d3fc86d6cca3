// job/RunInstruments.cpp — readings for the sampler thread, and the step cycle's timing.
#include "job/RunInstruments.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "memory/DeviceAllocator.h"
#include "runtime/LaunchControl.h"
#include "runtime/OpTiming.h"  // defines: setOpTiming, takeOpTimes
#include "telemetry/Providers.h"

namespace lorascope::job {

namespace {

std::unique_ptr<telemetry::Sampler> openSampler() {
  telemetry::ProviderSet providers = telemetry::openProviders();
  std::vector<std::shared_ptr<telemetry::Provider>> all = providers.gpu;
  if (providers.host)
    all.push_back(providers.host);
  auto sampler = std::make_unique<telemetry::Sampler>(std::move(all));
  sampler->start();
  return sampler;
}

// The allocator's part of a memory reading; false for a backend without one.
bool readAllocator(compute::Backend& backend, engine::MemoryEvent& event) {
  memory::DeviceAllocator* allocator = backend.deviceAllocator();
  if (allocator == nullptr)
    return false;
  const memory::AllocatorStats stats = allocator->stats();
  event.allocatedBytes = static_cast<std::uint64_t>(stats.allocatedBytes.current);
  event.reservedBytes = static_cast<std::uint64_t>(stats.reservedBytes.current);
  event.largestFreeBytes = stats.largestFreeBlockBytes;
  event.fragmentation = stats.externalFragmentation;
  event.largestRequestBytes = stats.largestRequestBytes;
  event.inactiveSplitBytes = stats.inactiveSplitBytes;
  event.largestFreeAtPeakBytes = stats.largestFreeAtPeakBytes;
  event.inactiveSplitAtPeakBytes = stats.inactiveSplitAtPeakBytes;
  return true;
}

}  // namespace

engine::ErrorEvent hangErrorEvent(const runtime::HangReport& hang, const std::string& advice) {
  return engine::ErrorEvent{runtime::categoryName(hang.error.category),
                            hang.op,
                            0,
                            hang.message,
                            advice,
                            true,
                            hang.step};
}

RunInstruments::RunInstruments(const DevicePlacement& placement)
    : RunInstruments(placement, openSampler()) {}

RunInstruments::RunInstruments(const DevicePlacement& placement,
                               std::unique_ptr<telemetry::Sampler> sampler)
    : placement_(placement), sampler_(std::move(sampler)) {}

engine::InstrumentEvents RunInstruments::sample() {
  engine::InstrumentEvents out;
  const runtime::InstrumentReading reading = runtime::launchControl().sample();
  if (!reading.queues.empty()) {
    engine::QueueEvent queue;
    for (const runtime::StreamQueueSample& s : reading.queues) {
      queue.streams.push_back(
          {s.name, static_cast<std::int64_t>(s.depth), static_cast<std::int64_t>(s.peak)});
    }
    out.queue = std::move(queue);
  }
  out.memory = memory();
  const std::int64_t activity = runtime::launchControl().lastActivityMs();
  out.progressed = activity > lastActivitySeenMs_;
  lastActivitySeenMs_ = activity;
  if (reading.hang) {
    out.hang = hangErrorEvent(*reading.hang, "the engine restarts from the last completed step");
  }
  return out;
}

void RunInstruments::poll() {
  runtime::launchControl().queues().poll();
}

std::optional<engine::MemoryEvent> RunInstruments::memory() const {
  engine::MemoryEvent event;
  bool any = false;
  placement_.readBackend([&](compute::Backend& backend) { any = readAllocator(backend, event); });
  for (const telemetry::ProviderStatus& status : sampler_->status()) {
    const std::optional<telemetry::Snapshot> snapshot = sampler_->latest(status.provider);
    if (!snapshot || status.stale)
      continue;
    if (snapshot->host) {
      event.hostRssBytes = snapshot->host->processRssBytes;
      event.hostAvailableBytes = snapshot->host->ramAvailableBytes;
      any = true;
    }
    // The first device a GPU provider lists (the one a single-GPU run uses), or the rank's card.
    const auto device = std::find_if(
        snapshot->devices.begin(), snapshot->devices.end(),
        [&](const telemetry::DeviceReading& d) { return !card_ || d.index == *card_; });
    if (device != snapshot->devices.end() && !event.driverUsedBytes) {
      event.driverUsedBytes = device->vramUsedBytes;
      event.driverTotalBytes = device->vramTotalBytes;
      if (device->vramUsedBytes && event.reservedBytes) {
        event.heldOutsideBytes =
            *device->vramUsedBytes - std::min(*device->vramUsedBytes, *event.reservedBytes);
      }
      any = true;
    }
  }
  return any ? std::optional(event) : std::nullopt;
}

std::optional<engine::SnapshotEvent> RunInstruments::snapshot() const {
  std::optional<engine::SnapshotEvent> out;
  placement_.readBackend([&](compute::Backend& backend) {
    if (memory::DeviceAllocator* allocator = backend.deviceAllocator())
      out = engine::SnapshotEvent{allocator->snapshot()};
  });
  return out;
}

void StepTiming::noteActivity() {
  runtime::launchControl().noteActivity();
}

namespace {

bool environmentFlag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

// LORASCOPE_OP_TIMING: the device time of every op launched since the last step's line, summed
// per op (runtime/OpTiming.h), after the step's own time. Timing starts at the first step's
// report, so the first line covers the second step's cycle. A CPU run launches nothing.
void reportOpTimes(const train::StepMetrics& m, const engine::EventSink& sink) {
  if (!runtime::gpu::opTimingEnabled()) {
    runtime::gpu::setOpTiming(true);
    return;
  }
  const std::vector<runtime::gpu::OpTime> times = runtime::gpu::takeOpTimes();
  double total = 0.0;
  std::string ops;
  for (const runtime::gpu::OpTime& t : times) {
    total += t.milliseconds;
    char op[160];
    std::snprintf(op, sizeof op, "%s%s %.3f/%lld", ops.empty() ? "" : ", ", t.op.c_str(),
                  t.milliseconds, static_cast<long long>(t.launches));
    ops += op;
  }
  char head[160];
  std::snprintf(head, sizeof head, "op timing %lld: %.2f ms in ops, the step %.2f ms (",
                static_cast<long long>(m.step), total, m.seconds * 1000.0);
  sink(engine::TimedEvent{
      0, engine::LogEvent{engine::LogLevel::Debug,
                          head + (ops.empty() ? std::string("no device ops") : ops) + ")"}});
}

}  // namespace

void StepTiming::report(const train::StepMetrics& m, const engine::EventSink& sink) const {
  static const bool opTiming = environmentFlag("LORASCOPE_OP_TIMING");
  if (opTiming) {
    reportOpTimes(m, sink);
  }
  static const bool enabled = environmentFlag("LORASCOPE_STEP_TIMING");
  if (!enabled) {
    return;
  }
  const double cycleMs = m.cycleSeconds * 1000.0;
  const double stepMs = m.seconds * 1000.0;
  const double measured =
      beginMs + mirrorWaitMs + evaluationMs + metricsMs + snapshotMs + checkpointMs;
  char line[640];
  std::snprintf(line, sizeof line,
                "step timing %lld: cycle %.2f ms = step %.2f ms (batches %.2f, passes %.2f, "
                "clip %.2f, update %.2f) + between steps %.2f ms (mirror wait %.2f, "
                "evaluation %.2f, metrics %.2f, snapshot %.2f, checkpoint %.2f, step begin "
                "%.2f, engine %.2f); %lld real tokens, %.0f tokens/s, compute %.0f tokens/s",
                static_cast<long long>(m.step), cycleMs, stepMs, m.stages.batchesMs,
                m.stages.passesMs, m.stages.clipMs, m.stages.updateMs, cycleMs - stepMs,
                mirrorWaitMs, evaluationMs, metricsMs, snapshotMs, checkpointMs, beginMs,
                std::max(0.0, cycleMs - stepMs - measured), static_cast<long long>(m.tokens),
                m.tokensPerS, m.computeTokensPerS);
  sink(engine::TimedEvent{0, engine::LogEvent{engine::LogLevel::Debug, line}});
}

}  // namespace lorascope::job
