// test_evaluation_schedule.cpp — the evaluation stage (job/EvaluationSchedule.h): when the run
// evaluates, what a resumed run takes over from its metrics, and early stopping's announcements.
#include "StageFixture.h"

#include "job/EvaluationSchedule.h"

using namespace lorascope;
using stagetest::Sink;

namespace {

job::TrainRunSettings scheduleSettings(std::int64_t evalEvery, std::int64_t patience) {
  job::TrainRunSettings settings;
  settings.evalEvery = evalEvery;
  settings.earlyStoppingPatience = patience;
  return settings;
}

// A held-out set of one sequence (the schedule only counts it).
std::vector<train::Sequence> oneSequence() {
  return {train::Sequence{}};
}

train::StepMetrics stepWithEval(std::int64_t step, std::optional<double> evalLoss) {
  train::StepMetrics m;
  m.step = step;
  if (evalLoss)
    m.eval = train::EvalMetrics{step, *evalLoss, 1, 1, 10, 0.1};
  return m;
}

}  // namespace

TEST_CASE(theRunEvaluatesEveryNStepsAndAfterTheLastOnlyWithAHeldOutSet) {
  const Sink sink;
  const job::EvaluationSchedule every3(scheduleSettings(3, 0), oneSequence(), sink.sink());
  VERIFY(every3.enabled());
  VERIFY(every3.evaluatesAfter(3, false) && every3.evaluatesAfter(6, false));
  VERIFY(!every3.evaluatesAfter(4, false));
  VERIFY(every3.evaluatesAfter(7, true));  // the last step
  const job::EvaluationSchedule lastOnly(scheduleSettings(0, 0), oneSequence(), sink.sink());
  VERIFY(!lastOnly.evaluatesAfter(3, false) && lastOnly.evaluatesAfter(5, true));
  const job::EvaluationSchedule off(scheduleSettings(3, 0), {}, sink.sink());
  VERIFY(!off.enabled() && !off.evaluatesAfter(3, true));
}

TEST_CASE(aResumedRunFindsItsPendingEvaluationAndItsEarlyStopping) {
  const Sink sink;
  // Step 4 was due (every 2) and its line has no evaluation: a stop cut it short.
  job::EvaluationSchedule cut(scheduleSettings(2, 0), oneSequence(), sink.sink());
  const std::vector<train::StepMetrics> history = {stepWithEval(2, 1.5), stepWithEval(3, {}),
                                                   stepWithEval(4, {})};
  cut.resume(history, job::RunProgress{4, 10, false});
  VERIFY(cut.pending());
  job::EvaluationSchedule done(scheduleSettings(2, 0), oneSequence(), sink.sink());
  done.resume(std::vector{stepWithEval(2, 1.5), stepWithEval(4, 1.4)},
              job::RunProgress{4, 10, false});
  VERIFY(!done.pending());
  job::EvaluationSchedule notDue(scheduleSettings(2, 0), oneSequence(), sink.sink());
  notDue.resume(history, job::RunProgress{3, 10, false});
  VERIFY(!notDue.pending());
  // Patience 2: two evaluations after the best without improvement stop the run, as before.
  job::EvaluationSchedule patient(scheduleSettings(1, 2), oneSequence(), sink.sink());
  patient.resume(std::vector{stepWithEval(1, 1.0), stepWithEval(2, 1.1), stepWithEval(3, 1.2)},
                 job::RunProgress{3, 10, false});
  VERIFY(patient.stoppedEarly());
  job::EvaluationSchedule improving(scheduleSettings(1, 2), oneSequence(), sink.sink());
  improving.resume(std::vector{stepWithEval(1, 1.0), stepWithEval(2, 0.9), stepWithEval(3, 1.0)},
                   job::RunProgress{3, 10, false});
  VERIFY(!improving.stoppedEarly());
}

TEST_CASE(anEvaluationIsAnnouncedWithTheBestAndMayStopTheRun) {
  const Sink sink;
  job::EvaluationSchedule schedule(scheduleSettings(1, 1), oneSequence(), sink.sink());
  schedule.announce(train::EvalMetrics{1, 2.0, 8, 2, 20, 0.5}, job::RunProgress{1, 6, false});
  schedule.announce(train::EvalMetrics{2, 2.5, 8, 2, 20, 0.5}, job::RunProgress{2, 6, false});
  const std::vector<engine::EvalEvent> evals = sink.all<engine::EvalEvent>();
  COMPARE(evals.size(), std::size_t{2});
  COMPARE(evals[1].step, std::int64_t{2});
  COMPARE(evals[1].loss, 2.5);
  COMPARE(evals[1].bestLoss, 2.0);
  COMPARE(evals[1].bestStep, std::int64_t{1});
  COMPARE(evals[1].predictedTokens, std::int64_t{20});
  VERIFY(schedule.stoppedEarly());
  VERIFY2(lstest::Message{sink.logText()}.contains(
              "early stopping: the eval loss has not improved on 2.0000 (step 1) for 1 "
              "evaluations; the run ends at step 2 of 6"),
          sink.logText().c_str());
}
