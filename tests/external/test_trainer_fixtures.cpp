// test_trainer_fixtures.cpp — every fixture of tests/external/fixtures (recorded on the GPU
// machine from real trainers, or reconstructed from a trainer's source; fixtures/README.md says
// which) through the ExternalSupervisor as CommandHost feeds it: its stdout and stderr split into
// lines at '\n' and '\r', in either order (two pipes: their interleaving is not known), then the
// command's exit. The steps announced must be the trainer's own log_history: the same steps, the
// same losses (within the fixture's tolerance for rounded prints), none twice; evaluations at
// their steps.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "external/ExternalSupervisor.h"
#include "profiles/Builtins.h"

using namespace lorascope;
using namespace lorascope::external;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = lstest::sourcePath("tests/external/fixtures");

struct NullRun : CommandRun {
  void terminate() override {}
  void kill() override {}
  void requestSnapshot() override {}
};

struct NullLauncher : CommandLauncher {
  std::unique_ptr<CommandRun> launch(int, const LaunchSpec&) override {
    return std::make_unique<NullRun>();
  }
};

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Lines as CommandHost cuts them: at '\n' or '\r', blank ones dropped.
std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  for (const char c : text) {
    if (c == '\n' || c == '\r') {
      if (line.find_first_not_of(" \t") != std::string::npos)
        out.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (line.find_first_not_of(" \t") != std::string::npos)
    out.push_back(line);
  return out;
}

struct Outcome {
  std::vector<engine::StepEvent> steps;
  std::vector<engine::EvalEvent> evals;
};

Outcome supervise(const json& fixture, bool stdoutFirst) {
  QTemporaryDir dir;
  SupervisedCommand command;
  command.program = "/usr/bin/python3";
  command.parser = fixture.at("parser").get<std::string>();
  if (fixture.contains("resume_from")) {
    const std::string checkpoint =
        "checkpoint-" + std::to_string(fixture.at("resume_from").get<int>());
    fs::create_directories(fs::path(dir.path().toStdString()) / checkpoint);
    command.resumeArgument = "--resume {checkpoint_dir}";
    command.checkpointGlob = dir.filePath("checkpoint-*").toStdString();
    command.resumeFirst = true;
  }
  NullLauncher launcher;
  Outcome outcome;
  ExternalSupervisor supervisor(launcher, command, profiles::defaultProfile(),
                                [&](const engine::TimedEvent& e) {
                                  if (const auto* step = std::get_if<engine::StepEvent>(&e.event))
                                    outcome.steps.push_back(*step);
                                  if (const auto* eval = std::get_if<engine::EvalEvent>(&e.event))
                                    outcome.evals.push_back(*eval);
                                });
  supervisor.start();
  const fs::path base =
      kFixtures / fixture.at("dir").get<std::string>() / fixture.at("name").get<std::string>();
  const auto out = lines(readFile(base.string() + ".stdout"));
  const auto err = lines(readFile(base.string() + ".stderr"));
  for (const bool errorStream : {!stdoutFirst, stdoutFirst}) {
    for (const std::string& line : errorStream ? err : out)
      supervisor.outputLine(1, errorStream, line);
  }
  supervisor.exited(1, CommandExit{false, fixture.value("exit_code", 0), ""});
  return outcome;
}

}  // namespace

class TestTrainerFixtures : public QObject {
  Q_OBJECT
 private slots:
  void stepsEqualTheTrainersLogHistory_data() {
    QTest::addColumn<QString>("fixture");
    QTest::addColumn<bool>("stdoutFirst");
    const json manifest = json::parse(readFile(kFixtures / "manifest.json"));
    for (const json& f : manifest.at("fixtures")) {
      const std::string dump = f.dump();
      const std::string name = f.at("name").get<std::string>();
      QTest::newRow((name + ", stdout first").c_str()) << QString::fromStdString(dump) << true;
      QTest::newRow((name + ", stderr first").c_str()) << QString::fromStdString(dump) << false;
    }
  }
  void stepsEqualTheTrainersLogHistory() {
    QFETCH(QString, fixture);
    QFETCH(bool, stdoutFirst);
    const json f = json::parse(fixture.toStdString());
    const fs::path truthFile =
        kFixtures / f.at("dir").get<std::string>() / f.at("truth").get<std::string>();
    const json history = json::parse(readFile(truthFile)).at("log_history");
    const std::int64_t first = f.at("first");
    const std::int64_t last = f.at("last");
    const double tolerance = f.at("tolerance");
    std::map<std::int64_t, double> losses;
    std::map<std::int64_t, double> evalLosses;
    for (const json& entry : history) {
      const std::int64_t step = entry.at("step");
      if (step < first || step > last)
        continue;
      if (entry.contains("loss"))
        losses[step] = entry.at("loss").get<double>();
      if (entry.contains("eval_loss"))
        evalLosses[step] = entry.at("eval_loss").get<double>();
    }
    QVERIFY2(!losses.empty(), truthFile.string().c_str());
    const Outcome outcome = supervise(f, stdoutFirst);
    std::vector<std::int64_t> announced;
    double worst = 0;
    for (const engine::StepEvent& s : outcome.steps) {
      announced.push_back(s.step);
      const auto truth = losses.find(s.step);
      QVERIFY2(truth != losses.end(),
               ("step " + std::to_string(s.step) + " is not in " + truthFile.filename().string())
                   .c_str());
      worst = std::max(worst, std::abs(s.loss - truth->second) / std::abs(truth->second));
      QVERIFY2(s.microBatch == 0, "a batch nothing reported");
    }
    std::vector<std::int64_t> expected;
    for (const auto& [step, loss] : losses)
      expected.push_back(step);
    QCOMPARE(announced, expected);  // the same steps, in order, none twice
    QVERIFY2(worst <= tolerance, ("relative loss difference " + std::to_string(worst)).c_str());
    QCOMPARE(outcome.evals.size(), evalLosses.size());
    for (const engine::EvalEvent& e : outcome.evals) {
      QVERIFY(evalLosses.count(e.step) == 1);
      QVERIFY(std::abs(e.loss - evalLosses.at(e.step)) / evalLosses.at(e.step) <= tolerance);
    }
  }
};

QTEST_GUILESS_MAIN(TestTrainerFixtures)
#include "test_trainer_fixtures.moc"
