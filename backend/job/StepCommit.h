// job/StepCommit.h — the run job's commit stage: what happens to a completed step. Its metrics
// line (and TensorBoard event) is written, its trainer state goes into the state mirror on a
// writer thread while the next step computes, and it is announced once mirrored; an engine that
// resumed from the mirror announces again the steps completed but not passed on.
//
// Note [asynchronous state mirror]: a step is announced only once its state is in the mirror,
// so that a crash never loses an announced step (the recovery guarantee). At the step boundary
// the engine thread only queues the state's copy (TrainLoop::snapshotState: on a GPU, the three
// flat buffers copied on the device in stream order, then downloaded into pinned memory on a
// side stream; on the CPU, a host copy), and a writer thread waits for the download, encodes
// the state straight from it into a buffer it reuses (PendingTrainerState::waitEncoded) and
// writes it (checksum, copy into the mapping; at most every 2 s an msync, in the background:
// engine/StateMirror.h) while the next step computes: no step waits for a state download. The
// next boundary announces the steps whose write has ended (takeWritten), with their incident
// events, and never waits for the writer: when it is still writing (a state written more slowly
// than a step computes), the step just completed is not copied but held, and the next write, of a
// later state, covers it too; its announcement comes a step or two late instead of the engine
// waiting. Settling (a pause, a stop, a toggle, a checkpoint, an error, the last step) waits for
// the writer and writes the newest state if a held step is not yet covered (take). An evaluation
// is announced at once (it may stop the run early), after the steps announced before. A crash
// while a state is downloaded or written leaves the mirror at an earlier state (it never
// overwrites the newest), and the steps after it are redone; a crash after it is written but
// before its steps are announced is the case replay() covers. A failed download (a device error)
// is the write's error: its steps are not announced.
//
// On the H200 machine the writer took 25-34 ms for the Qwen2.5-0.5B shape's 53 MB of state
// (bench_gpu_train --mirror: 8.9 ms waiting for the download and encoding, 16.6 ms writing
// without the disk), about one 31 ms step: waiting for it at every boundary had made the engine's
// step cycle 1.12x the step (2.5 ms a step, the median).
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/Engine.h"  // defines: EventSink, StepEvent
#include "engine/StateMirror.h"
#include "train/RunDirectory.h"
#include "train/TrainLoop.h"

namespace lorascope::job {

class StepCommit {
 public:
  // The mirror of the run in `run`, sized for states like `initial` (the state the run starts
  // with). `rewriteMirror`: a run resumed from a checkpoint, whose mirror (maybe further on, when
  // an older checkpoint was chosen) must not be what a crash in this session resumes from: it
  // starts as `initial`.
  StepCommit(const train::RunDirectory& run, const train::TrainerState& initial, bool rewriteMirror,
             const engine::EventSink& sink);
  ~StepCommit();  // waits for the write in flight (it uses the mirror)

  // The step's metrics line and TensorBoard event (before its mirror: replay() reads the line).
  void record(const train::StepMetrics& step) const;
  // Holds `step`, completed and not yet announced, and starts writing the state `loop` is in (the
  // step just completed) to the mirror when the writer is free; when it is still writing an
  // earlier state, a later write covers `step`. `loop` must stay until the held steps are taken.
  void mirror(train::TrainLoop& loop, train::StepMetrics step);

  // The held steps whose state is in the mirror, oldest first (each as its announcement, with the
  // run's `totalSteps`), without waiting: none while the write that covers them runs. Rethrows
  // the write's error (StateMirrorError, or the download's device error); its steps are dropped.
  std::vector<engine::StepEvent> takeWritten(std::int64_t totalSteps);
  // Every held step, oldest first: waits for the write in flight and, when held steps completed
  // after it began, writes the loop's current state and waits for that too. Rethrows as
  // takeWritten.
  std::vector<engine::StepEvent> take(std::int64_t totalSteps);
  // Each write waits for `gate` before it starts (tests: a writer slower than the steps).
  void setWriterGate(std::shared_future<void> gate) { gate_ = std::move(gate); }
  // A taken step's incident (a non-finite step's skipped update), to go out before the step.
  void announceIncident(const engine::StepEvent& step) const;
  // take()'s steps through the sink, each after its incident (for calls that return other events).
  void announce(std::int64_t totalSteps);

  // An engine killed after mirroring step N but before announcing it leaves step N done and
  // unannounced, and with the asynchronous mirror the step before it may be too. A restarted
  // engine announces again, from the run's metrics (`history`) and marked replayed, every
  // completed step (up to `completed`) after `announcedThrough`, the last one the supervisor
  // passed on. The supervisor drops a replayed step it has seen.
  void replay(std::span<const train::StepMetrics> history, std::int64_t completed,
              std::int64_t announcedThrough, std::int64_t totalSteps) const;

  // A step's record as the engine announces it.
  static engine::StepEvent announcement(const train::StepMetrics& step, bool replayed,
                                        std::int64_t totalSteps);

 private:
  const train::RunDirectory& run_;
  engine::EventSink sink_;
  std::unique_ptr<engine::StateMirror> mirror_;
  // Waits for the write in flight (none: returns) and moves its steps to written_; rethrows its
  // error, dropping them.
  void collectWrite();
  void startWrite(train::TrainLoop& loop);
  std::vector<engine::StepEvent> announcements(std::int64_t totalSteps);

  // The write in flight. Declared after mirror_, so that it is waited for before mirror_ goes.
  std::future<void> write_;
  std::vector<std::byte> payload_;  // the writer's encoding buffer, reused every step
  // Held steps (completed, not yet announced), oldest first: covered by the write in flight; in
  // the mirror (that write ended); completed after it began, covered by none yet.
  std::vector<train::StepMetrics> writing_, written_, uncovered_;
  train::TrainLoop* loop_ = nullptr;  // whose state the held steps are (mirror()'s)
  std::shared_future<void> gate_;     // setWriterGate's
};

}  // namespace lorascope::job
