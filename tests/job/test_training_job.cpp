// test_training_job.cpp — the engine's training job (job/EngineJob.h) resumed by a supervisor:
// the completed steps the supervisor has not passed on are announced again, marked replayed; an
// evaluation a stop cut short runs before the next step.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <vector>

#include "common/DurableFile.h"
#include "job/EngineJob.h"
#include "train/RunDirectory.h"

using namespace lorascope;
using nlohmann::json;

namespace {

json demoRun(const QString& out) {
  return {{"demo", true},
          {"out", out.toStdString()},
          {"options", {{"steps", 6}, {"batch-size", 2}, {"max-seq-len", 80}, {"lora-r", 4}}}};
}

// The step and evaluation events a job sends through its sink, in order (shared with the job's
// sink, which outlives the call that made it).
struct Events {
  std::vector<engine::StepEvent> steps;
  std::vector<std::string> order;  // "step N" / "eval N"
};

struct Replay {
  std::shared_ptr<Events> events = std::make_shared<Events>();
  std::unique_ptr<engine::EngineJob> job;
};

Replay resume(const json& config) {
  Replay replay;
  replay.job =
      job::createTrainingJob(config, [events = replay.events](const engine::TimedEvent& timed) {
        if (const auto* step = std::get_if<engine::StepEvent>(&timed.event)) {
          events->steps.push_back(*step);
          events->order.push_back("step " + std::to_string(step->step));
        } else if (const auto* eval = std::get_if<engine::EvalEvent>(&timed.event)) {
          events->order.push_back("eval " + std::to_string(eval->step));
        }
      });
  return replay;
}

}  // namespace

class TestTrainingJob : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(cache_.isValid());
    qputenv("LORASCOPE_CACHE_DIR", cache_.path().toUtf8());  // the demo's model and data
  }

  void aResumedEngineReplaysEveryStepTheSupervisorHasNotPassedOn() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString out = dir.filePath("run");
    // Four steps, every one announced (the last once its mirror is written), then the engine goes.
    std::vector<engine::StepEvent> announced;
    {
      auto job = job::createTrainingJob(demoRun(out), [](const engine::TimedEvent&) {});
      engine::CancelFlag cancel;
      while (job->completedSteps() < 4) {
        if (auto step = job->runStep(cancel)) {
          announced.push_back(*step);
        }
      }
      if (auto step = job->settle()) {
        announced.push_back(*step);
      }
    }
    QCOMPARE(announced.size(), std::size_t{4});

    // The supervisor passed on step 1 only (the engine died with 2..4 written but their events
    // not out): the next engine announces 2, 3 and 4, in order, as they were.
    json config = demoRun(out);
    config["resume_from_mirror"] = true;
    config["announced_through"] = 1;
    // Each engine ends before the next starts (the run's lock has one holder at a time).
    {
      const Replay fromOne = resume(config);
      QCOMPARE(fromOne.events->steps.size(), std::size_t{3});
      for (std::size_t i = 0; i < fromOne.events->steps.size(); ++i) {
        const engine::StepEvent& step = fromOne.events->steps[i];
        QCOMPARE(step.step, announced[i + 1].step);
        QCOMPARE(step.loss, announced[i + 1].loss);
        QVERIFY(step.replayed);
      }
      QCOMPARE(fromOne.job->completedSteps(), std::int64_t{4});
    }

    // All passed on: nothing to replay but the step it resumes at, which the supervisor drops.
    config["announced_through"] = 4;
    QCOMPARE(resume(config).events->steps.size(), std::size_t{0});
    config.erase("announced_through");  // a supervisor that does not say: the resumed step
    {
      const Replay unsaid = resume(config);
      QCOMPARE(unsaid.events->steps.size(), std::size_t{1});
      QCOMPARE(unsaid.events->steps[0].step, std::int64_t{4});
    }

    config["announced_through"] = "two";
    try {
      resume(config);
      QFAIL("a malformed announced_through was accepted");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("\"announced_through\"") != std::string::npos, e.what());
    }
  }

  void anEvaluationTheStopCutShortRunsBeforeTheNextStep() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString out = dir.filePath("run");
    json config = demoRun(out);
    config["options"]["eval-split"] = 0.25;
    config["options"]["eval-every"] = 3;
    {
      auto job = job::createTrainingJob(config, [](const engine::TimedEvent&) {});
      engine::CancelFlag cancel;
      while (job->completedSteps() < 3) {
        job->runStep(cancel);
      }
      job->settle();
    }
    // The run as a stop during the evaluation after step 3 leaves it: step 3's line written
    // without its evaluation.
    const std::filesystem::path metricsPath =
        std::filesystem::path(out.toStdString()) / "metrics.jsonl";
    std::vector<train::StepMetrics> lines = runs::readStepRecords(metricsPath);
    QCOMPARE(lines.size(), std::size_t{3});
    QVERIFY(lines[2].eval.has_value());
    const double evalLoss = lines[2].eval->loss;
    std::string cut;
    for (train::StepMetrics& m : lines) {
      m.eval.reset();
      cut += runs::toJson(m).dump() + "\n";
    }
    common::writeFileDurably(metricsPath, cut);

    config["resume_from_mirror"] = true;
    config["announced_through"] = 3;
    Replay resumed = resume(config);
    QVERIFY(resumed.events->order.empty());
    engine::CancelFlag cancel;
    std::optional<engine::StepEvent> announced;
    while (!announced) {
      announced = resumed.job->runStep(cancel);
    }
    // The evaluation of step 3 first (as it was: the same loss), once, recorded; then step 4.
    QCOMPARE(resumed.events->order.size(), std::size_t{1});
    QCOMPARE(resumed.events->order.front(), std::string("eval 3"));
    QCOMPARE(announced->step, std::int64_t{4});
    lines = runs::readStepRecords(metricsPath);
    QVERIFY(lines.size() >= 4);  // step 4 is announced once step 5 has run (the async mirror)
    QVERIFY(lines[2].eval.has_value());
    QCOMPARE(lines[2].eval->loss, evalLoss);
    QVERIFY(!lines[3].eval.has_value());
  }

 private:
  QTemporaryDir cache_;
};

QTEST_GUILESS_MAIN(TestTrainingJob)
#include "test_training_job.moc"
