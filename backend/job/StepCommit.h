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
// engine/StateMirror.h) while the next step computes: no step waits for a state download. That
// step's end (or the engine settling: a pause, a stop, a toggle, a checkpoint, an error) announces
// it, with its incident event. An evaluation is announced at once (it may stop the run early),
// after the step before. A crash while it is downloaded or written leaves the mirror at the step
// before (it never overwrites the newest state), and the step is redone; a crash after it is
// written but before it is announced is the case replay() covers. A failed download (a device
// error) is the write's error: the step is not announced.
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
  // Starts writing the state `loop` is in (the step just completed) to the mirror; `step` is
  // then held, completed and not yet announced, until take() hands it out.
  void mirror(train::TrainLoop& loop, train::StepMetrics step);

  // Waits for the write in flight and returns the step it holds as its announcement (with the
  // run's `totalSteps`), announcing its incident first; none when no step is held. Rethrows the
  // write's error (StateMirrorError, or the download's device error).
  std::optional<engine::StepEvent> take(std::int64_t totalSteps);
  // take()'s step, through the sink (for calls that return other events).
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
  // The write in flight, and the step it holds (completed, not yet announced). Declared after
  // mirror_, so that it is waited for before mirror_ goes.
  std::future<void> write_;
  std::vector<std::byte> payload_;  // the writer's encoding buffer, reused every step
  std::optional<train::StepMetrics> held_;
};

}  // namespace lorascope::job
