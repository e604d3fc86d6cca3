// test_runs_eval.cpp — a run that evaluated (metrics.jsonl with eval_loss) on the runs page: its
// summary holds the best eval loss and its step, and "Show charts" gets the evaluations back as
// eval events beside the steps.
#include <QtTest>

#include <QTemporaryDir>

#include "TestPaths.h"
#include "engine/Protocol.h"
#include "gui/RunsPage.h"
#include "train/RunDirectory.h"

using namespace lorascope;

class TestRunsEval : public QObject {
  Q_OBJECT

 private slots:
  void summaryAndChartsCarryTheEvalLoss() {
    QTemporaryDir dir;
    const std::string runDir = dir.filePath(QStringLiteral("run")).toStdString();
    const train::RunDirectory run = train::RunDirectory::create(
        runDir,
        {{"model_path", std::string(lstest::sourcePath("tests/model/data")) + "/mistral_f32"},
         {"training", {{"max_steps", 3}}}});
    const double evalLosses[] = {2.5, 2.0, 2.25};
    for (int step = 1; step <= 3; ++step) {
      train::StepMetrics m;
      m.step = step;
      m.loss = 3.0 - 0.1 * step;
      m.seconds = 1.0;
      train::EvalMetrics eval;
      eval.step = step;
      eval.loss = evalLosses[step - 1];
      eval.predictedTokens = 50;
      eval.seconds = 0.5;
      m.eval = eval;
      run.appendMetrics(m);
    }
    const std::optional<app::RunSummary> summary =
        app::readRunSummary(QString::fromStdString(runDir));
    QVERIFY(summary && summary->bestEvalLoss);
    QCOMPARE(*summary->bestEvalLoss, 2.0);
    QCOMPARE(summary->bestEvalStep, std::int64_t{2});
    const auto events = app::metricsAsEvents(QString::fromStdString(runDir));
    QCOMPARE(events.size(), std::size_t{6});  // step, eval, step, eval, ...
    const auto& last = std::get<engine::EvalEvent>(events[5].event);
    QCOMPARE(last.step, std::int64_t{3});
    QCOMPARE(last.loss, 2.25);
    QCOMPARE(last.bestLoss, 2.0);
    QCOMPARE(last.bestStep, std::int64_t{2});
    QVERIFY(events[5].timeMs > events[4].timeMs);
    // Lines without cycles: the steps' and evaluations' own times, one after the other.
    QCOMPARE(events[0].timeMs, std::int64_t{1000});
    QCOMPARE(events[1].timeMs, std::int64_t{1500});
    QCOMPARE(events[2].timeMs, std::int64_t{2500});
  }

  // The time axis of a saved run is the run's wall-clock time, as the live dashboard showed it:
  // the steps' cycles (an evaluation between two steps is in the second one's cycle), not their
  // compute time alone.
  void aSavedRunsTimeIsItsStepCycles() {
    QTemporaryDir dir;
    const std::string runDir = dir.filePath(QStringLiteral("run")).toStdString();
    const train::RunDirectory run = train::RunDirectory::create(
        runDir,
        {{"model_path", std::string(lstest::sourcePath("tests/model/data")) + "/mistral_f32"},
         {"training", {{"max_steps", 3}}}});
    for (int step = 1; step <= 3; ++step) {
      train::StepMetrics m;
      m.step = step;
      m.loss = 3.0 - 0.1 * step;
      m.seconds = 1.0;
      m.cycleSeconds = step == 3 ? 2.0 : 1.5;  // step 3's cycle holds step 2's evaluation
      if (step == 2) {
        train::EvalMetrics eval;
        eval.step = 2;
        eval.loss = 2.0;
        eval.predictedTokens = 50;
        eval.seconds = 0.4;
        m.eval = eval;
      }
      run.appendMetrics(m);
    }
    const auto events = app::metricsAsEvents(QString::fromStdString(runDir));
    QCOMPARE(events.size(), std::size_t{4});  // step, step, eval, step
    QCOMPARE(events[0].timeMs, std::int64_t{1500});
    QCOMPARE(events[1].timeMs, std::int64_t{3000});
    QVERIFY(std::holds_alternative<engine::EvalEvent>(events[2].event));
    QCOMPARE(events[2].timeMs, std::int64_t{3400});
    QCOMPARE(events[3].timeMs, std::int64_t{5000});
  }
};

QTEST_GUILESS_MAIN(TestRunsEval)
#include "test_runs_eval.moc"
