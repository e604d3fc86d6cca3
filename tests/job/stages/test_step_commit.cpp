// test_step_commit.cpp — the commit stage (job/StepCommit.h): a step's metrics line, its state in
// the mirror before it is announced, and the replay of steps a restarted engine did not announce.
#include "StageFixture.h"

#include <future>

#include "engine/StateMirror.h"
#include "job/DevicePlacement.h"
#include "job/EngineJob.h"  // defines: kStateMirrorFile
#include "job/StepCommit.h"
#include "train/StateCodec.h"

using namespace lorascope;

namespace {

train::StepMetrics stepOf(std::int64_t step, double loss) {
  train::StepMetrics m;
  m.step = step;
  m.loss = loss;
  return m;
}

}  // namespace

TEST_CASE(aStepIsAnnouncedOnceItsStateIsMirrored) {
  stagetest::PlacedRun run;
  stagetest::DemoRun& demo = run.demo;
  const std::unique_ptr<train::TrainLoop>& loop = run.loop;
  job::StepCommit commit(demo.opened.run, loop->state(), /*rewriteMirror=*/false,
                         demo.events.sink());
  VERIFY(commit.take(6).empty());  // nothing held yet
  train::StepMetrics m = loop->step();
  m.nonFinite = "loss is nan";
  commit.record(m);
  commit.mirror(*loop, m);
  const std::vector<engine::StepEvent> announced = commit.take(6);
  COMPARE(announced.size(), std::size_t{1});
  COMPARE(announced[0].step, std::int64_t{1});
  COMPARE(announced[0].totalSteps, std::int64_t{6});
  VERIFY(!announced[0].replayed);
  commit.announceIncident(announced[0]);  // its incident goes out before it
  COMPARE(demo.events.all<engine::IncidentEvent>().size(), std::size_t{1});
  // The mirror holds that step's state, and the metrics its line.
  const auto mirrored =
      engine::StateMirror::readLatest(demo.opened.run.dir() / job::kStateMirrorFile);
  VERIFY(mirrored.has_value());
  COMPARE(train::decodeTrainerState(mirrored->payload).step, std::int64_t{1});
  COMPARE(runs::readStepRecords(demo.opened.run.dir() / runs::kMetricsFile).size(), std::size_t{1});
  VERIFY(commit.take(6).empty());  // announced once
}

// The engine never waits for the writer at a boundary: a step completed while it still writes an
// earlier state is held uncopied, and a later write covers it. The steps come out once each, in
// order, each after a state that holds it is in the mirror.
TEST_CASE(stepsCompletedWhileTheWriterRunsAreAnnouncedAfterALaterWrite) {
  stagetest::PlacedRun run;
  stagetest::DemoRun& demo = run.demo;
  const std::unique_ptr<train::TrainLoop>& loop = run.loop;
  job::StepCommit commit(demo.opened.run, loop->state(), /*rewriteMirror=*/false,
                         demo.events.sink());
  std::promise<void> open;
  commit.setWriterGate(open.get_future().share());  // the writer waits until the test opens it
  const auto mirroredStep = [&] {
    const auto mirrored =
        engine::StateMirror::readLatest(demo.opened.run.dir() / job::kStateMirrorFile);
    return mirrored ? train::decodeTrainerState(mirrored->payload).step : std::int64_t{-1};
  };
  const auto stepAndMirror = [&] {
    const train::StepMetrics m = loop->step();
    commit.record(m);
    commit.mirror(*loop, m);
  };
  stepAndMirror();  // step 1's state: its write waits at the gate
  VERIFY(commit.takeWritten(6).empty());
  stepAndMirror();  // the writer is busy: step 2 is held, not copied
  stepAndMirror();  // step 3 too
  VERIFY(commit.takeWritten(6).empty());
  VERIFY(mirroredStep() < 1);  // no step's state written yet
  open.set_value();
  std::vector<std::int64_t> announced;
  for (const engine::StepEvent& step : commit.take(6)) {  // waits, then writes step 3's state
    announced.push_back(step.step);
  }
  COMPARE(announced, (std::vector<std::int64_t>{1, 2, 3}));
  COMPARE(mirroredStep(), std::int64_t{3});
  VERIFY(commit.takeWritten(6).empty() && commit.take(6).empty());
  // With the writer free, a boundary's step is written while the next one computes.
  stepAndMirror();
  stepAndMirror();  // the writer is done with step 4 (or this waits in take below)
  announced.clear();
  for (const engine::StepEvent& step : commit.take(6)) {
    announced.push_back(step.step);
  }
  COMPARE(announced, (std::vector<std::int64_t>{4, 5}));
  COMPARE(mirroredStep(), std::int64_t{5});
}

TEST_CASE(aRestartedEngineReplaysTheStepsNotPassedOnTheLastOfEachCounting) {
  stagetest::DemoRun demo;
  train::TrainerState initial;
  initial.step = 0;
  stagetest::Sink replayed;
  const job::StepCommit commit(demo.opened.run, initial, /*rewriteMirror=*/true, replayed.sink());
  // Steps 1-4 recorded, step 3 twice (redone after a kill: the later line counts).
  const std::vector<train::StepMetrics> history = {stepOf(1, 4.0), stepOf(2, 3.0), stepOf(3, 2.5),
                                                   stepOf(3, 2.0), stepOf(4, 1.5), stepOf(5, 1.0)};
  commit.replay(history, /*completed=*/4, /*announcedThrough=*/1, /*totalSteps=*/6);
  const std::vector<engine::StepEvent> steps = replayed.all<engine::StepEvent>();
  COMPARE(steps.size(), std::size_t{3});  // 2, 3, 4: not 1 (passed on), not 5 (not completed)
  COMPARE(steps[0].step, std::int64_t{2});
  COMPARE(steps[1].loss, 2.0);
  COMPARE(steps[2].step, std::int64_t{4});
  for (const engine::StepEvent& s : steps)
    VERIFY(s.replayed && s.totalSteps == 6);
  // The mirror starts as the state given: a resume from a checkpoint replaces what it held.
  const auto mirrored =
      engine::StateMirror::readLatest(demo.opened.run.dir() / job::kStateMirrorFile);
  VERIFY(mirrored.has_value());
  COMPARE(train::decodeTrainerState(mirrored->payload).step, std::int64_t{0});
}
