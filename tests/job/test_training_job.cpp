// test_training_job.cpp — the engine's training job (job/EngineJob.h) resumed by a supervisor:
// the completed steps the supervisor has not passed on are announced again, marked replayed.
#include <QTemporaryDir>
#include <QtTest>

#include <vector>

#include "job/EngineJob.h"

using namespace lorascope;
using nlohmann::json;

namespace {

json demoRun(const QString& out) {
  return {{"demo", true},
          {"out", out.toStdString()},
          {"options", {{"steps", 6}, {"batch-size", 2}, {"max-seq-len", 80}, {"lora-r", 4}}}};
}

// The step events a job sends through its sink while it is created.
struct Replay {
  std::vector<engine::StepEvent> steps;
  std::unique_ptr<engine::EngineJob> job;
};

Replay resume(json config) {
  Replay replay;
  replay.job = job::createTrainingJob(config, [&replay](const engine::TimedEvent& timed) {
    if (const auto* step = std::get_if<engine::StepEvent>(&timed.event)) {
      replay.steps.push_back(*step);
    }
  });
  return replay;
}

}  // namespace

class TestTrainingJob : public QObject {
  Q_OBJECT

 private slots:
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
    const Replay fromOne = resume(config);
    QCOMPARE(fromOne.steps.size(), std::size_t{3});
    for (std::size_t i = 0; i < fromOne.steps.size(); ++i) {
      const engine::StepEvent& step = fromOne.steps[i];
      QCOMPARE(step.step, announced[i + 1].step);
      QCOMPARE(step.loss, announced[i + 1].loss);
      QVERIFY(step.replayed);
    }
    QCOMPARE(fromOne.job->completedSteps(), std::int64_t{4});

    // All passed on: nothing to replay but the step it resumes at, which the supervisor drops.
    config["announced_through"] = 4;
    QCOMPARE(resume(config).steps.size(), std::size_t{0});
    config.erase("announced_through");  // a supervisor that does not say: the resumed step
    const Replay unsaid = resume(config);
    QCOMPARE(unsaid.steps.size(), std::size_t{1});
    QCOMPARE(unsaid.steps[0].step, std::int64_t{4});

    config["announced_through"] = "two";
    try {
      resume(config);
      QFAIL("a malformed announced_through was accepted");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("\"announced_through\"") != std::string::npos, e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestTrainingJob)
#include "test_training_job.moc"
