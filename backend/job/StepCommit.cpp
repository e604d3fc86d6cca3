// job/StepCommit.cpp — a completed step recorded, mirrored and announced.
#include "job/StepCommit.h"

#include <chrono>
#include <map>

#include "job/EngineJob.h"  // defines: kStateMirrorFile
#include "train/StateCodec.h"

namespace lorascope::job {

namespace {

// How often the state mirror waits for the disk (a machine that goes down loses at most the steps
// since, which are then redone from the mirror's last durable state or the newest checkpoint).
constexpr std::chrono::milliseconds kMirrorDurableEvery{2000};

}  // namespace

StepCommit::StepCommit(const train::RunDirectory& run, const train::TrainerState& initial,
                       bool rewriteMirror, const engine::EventSink& sink)
    : run_(run), sink_(sink) {
  const std::vector<std::byte> state = train::encodeTrainerState(initial);
  mirror_ = std::make_unique<engine::StateMirror>(
      run.dir() / kStateMirrorFile, state.size() + state.size() / 8 + 4096, state.size());
  // Steps are mirrored for an engine that dies (Note [asynchronous state mirror]); at most every
  // kMirrorDurableEvery a write is also synced to the disk, for a machine that goes down, on a
  // thread of the mirror's own (Note [durable in the background], engine/StateMirror.h). Two msyncs
  // of the whole state took 74 ms of a 44 ms Qwen-shaped step on the H200, so a durable write after
  // every step kept the engine waiting for the writer, and one every 2 s still did.
  mirror_->setDurableEvery(kMirrorDurableEvery);
  if (rewriteMirror)
    mirror_->write(state);
}

StepCommit::~StepCommit() {
  if (write_.valid())
    write_.wait();
}

void StepCommit::record(const train::StepMetrics& step) const {
  run_.appendMetrics(step);
}

void StepCommit::mirror(train::TrainLoop& loop, train::StepMetrics step) {
  loop_ = &loop;
  uncovered_.push_back(std::move(step));
  if (write_.valid() && write_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    return;  // the writer is on an earlier state: a later write covers this step
  collectWrite();
  startWrite(loop);
}

void StepCommit::startWrite(train::TrainLoop& loop) {
  // The state as the last step left it, downloading while the next step runs; the writer waits
  // for it, encodes it into payload_ and writes it.
  write_ = std::async(std::launch::async, [this, pending = loop.snapshotState()]() mutable {
    if (gate_.valid())
      gate_.wait();
    pending.waitEncoded(payload_);
    mirror_->write(payload_);
  });
  writing_.insert(writing_.end(), std::make_move_iterator(uncovered_.begin()),
                  std::make_move_iterator(uncovered_.end()));
  uncovered_.clear();
}

void StepCommit::collectWrite() {
  if (!write_.valid())
    return;
  std::vector<train::StepMetrics> steps = std::move(writing_);
  writing_.clear();
  write_.get();  // its error drops its steps: a restart redoes them
  written_.insert(written_.end(), std::make_move_iterator(steps.begin()),
                  std::make_move_iterator(steps.end()));
}

std::vector<engine::StepEvent> StepCommit::announcements(std::int64_t totalSteps) {
  std::vector<engine::StepEvent> out;
  for (const train::StepMetrics& m : written_)
    out.push_back(announcement(m, false, totalSteps));
  written_.clear();
  return out;
}

std::vector<engine::StepEvent> StepCommit::takeWritten(std::int64_t totalSteps) {
  if (!write_.valid() || write_.wait_for(std::chrono::seconds(0)) == std::future_status::ready)
    collectWrite();
  return announcements(totalSteps);
}

std::vector<engine::StepEvent> StepCommit::take(std::int64_t totalSteps) {
  collectWrite();
  if (!uncovered_.empty()) {
    startWrite(*loop_);
    collectWrite();
  }
  return announcements(totalSteps);
}

void StepCommit::announceIncident(const engine::StepEvent& step) const {
  if (!step.nonFinite.empty())
    sink_(
        engine::TimedEvent{0, engine::IncidentEvent{step.nonFinite, "update skipped", step.step}});
}

void StepCommit::announce(std::int64_t totalSteps) {
  for (const engine::StepEvent& step : take(totalSteps)) {
    announceIncident(step);
    sink_(engine::TimedEvent{0, step});
  }
}

void StepCommit::replay(std::span<const train::StepMetrics> history, std::int64_t completed,
                        std::int64_t announcedThrough, std::int64_t totalSteps) const {
  const std::int64_t after = std::min(announcedThrough, completed);
  // A step redone after a kill appears more than once, with the same numbers: the last counts.
  std::map<std::int64_t, const train::StepMetrics*> steps;
  for (const train::StepMetrics& m : history) {
    if (m.step > after && m.step <= completed)
      steps.insert_or_assign(m.step, &m);
  }
  for (const auto& [number, m] : steps)
    sink_(engine::TimedEvent{0, announcement(*m, true, totalSteps)});
}

engine::StepEvent StepCommit::announcement(const train::StepMetrics& step, bool replayed,
                                           std::int64_t totalSteps) {
  engine::StepEvent announced = step;
  announced.replayed = replayed;
  announced.totalSteps = totalSteps;
  return announced;
}

}  // namespace lorascope::job
