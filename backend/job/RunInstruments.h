// job/RunInstruments.h — the run job's instruments: the readings the engine's sampler thread takes
// while steps run or hang (queue depth per stream, memory, the watchdog's hang report), the
// allocator's snapshot, and the step cycle's timing (LORASCOPE_STEP_TIMING).
//
// Memory is three readings kept apart: our allocator's (GPU runs), the driver's and the host's,
// the last two from the telemetry sampler's latest refresh, so that a slow vendor library never
// delays a step.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "engine/Engine.h"  // defines: InstrumentEvents, EventSink
#include "job/DevicePlacement.h"
#include "runtime/Watchdog.h"  // defines: HangReport
#include "telemetry/Sampler.h"
#include "train/TrainLoop.h"

namespace lorascope::job {

// The watchdog's report as the engine's sticky hang error; `advice` says what happens next.
engine::ErrorEvent hangErrorEvent(const runtime::HangReport& hang, const std::string& advice);

class RunInstruments {
 public:
  // Over the system's telemetry providers (started here).
  explicit RunInstruments(const DevicePlacement& placement);
  // Over `sampler` (tests: providers of their own), which must be started.
  RunInstruments(const DevicePlacement& placement, std::unique_ptr<telemetry::Sampler> sampler);

  // On the sampler thread: queue depth per stream (a CPU run has no queue and sends none),
  // memory, whether the run made progress since the last call, and the watchdog's report when an
  // op of the running step is over its budget.
  engine::InstrumentEvents sample();
  // Between readings: the queue tracker pops completed launches towards the next reading's peak.
  void poll();
  // Also on the sampler thread; none when nothing is readable.
  std::optional<engine::MemoryEvent> memory() const;
  // The driver's readings of GPU `device` (a rank of a group: its own card) instead of the first
  // GPU the provider lists. The provider's index is taken for the runtime's: they agree where the
  // runtime orders the GPUs by PCI bus, as CUDA does for identical cards and ROCm does. Call
  // before the sampler thread reads.
  void readCard(int device) { card_ = device; }
  // The device allocator's segments and blocks (PyTorch's snapshot layout); a CPU run has none.
  std::optional<engine::SnapshotEvent> snapshot() const;

 private:
  const DevicePlacement& placement_;
  std::unique_ptr<telemetry::Sampler> sampler_;
  std::int64_t lastActivitySeenMs_ = 0;  // sample()'s (the sampler thread's) last reading
  std::optional<int> card_;              // readCard's; none: the first GPU listed
};

// What ran between the last completed step and the next one's compute, in milliseconds; with
// LORASCOPE_STEP_TIMING=1 (scripts/bench_engine_loop.py reads it) each step cycle's breakdown is
// logged: the step's own time and its parts, then what ran between the previous step's completion
// and this step (the engine's share is the rest: publishing events, the memory reading after a
// step, commands).
struct StepTiming {
  double beginMs = 0.0;  // the next step's boundary: watchdog, fault rules, peak statistics
  double mirrorWaitMs = 0.0;
  double evaluationMs = 0.0;
  double metricsMs = 0.0;
  double snapshotMs = 0.0;  // the state's copy queued and its writer started
  double checkpointMs = 0.0;

  // Times `work` into `slot` and marks the stage's end as the run's progress for the supervisor's
  // hang watchdog (LaunchControl::noteActivity).
  template <typename Work>
  static void timed(double& slot, Work&& work) {
    const auto start = std::chrono::steady_clock::now();
    std::forward<Work>(work)();
    slot +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    noteActivity();
  }
  // The debug log line of step `m`'s cycle, when LORASCOPE_STEP_TIMING is set.
  void report(const train::StepMetrics& m, const engine::EventSink& sink) const;

 private:
  static void noteActivity();
};

}  // namespace lorascope::job
