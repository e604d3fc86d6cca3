// test_supervisor.cpp — crashes cost seconds, not runs: a stand-in engine is SIGKILLed, fails
// with a sticky BLAS error and hangs on schedule; the supervisor records each incident, climbs
// the ladder, restarts and resumes from the state mirror, and the run ends with every step done
// exactly once. Also: a profile whose environment differs restarts the engine and resumes.
// The SupervisorHost (plain C++, its own thread) with real child processes; test_recovery_ladder
// drives the same Supervisor logic with a manual clock.
#include <QTemporaryDir>
#include <QtTest>

#include "EventLog.h"
#include "TestPaths.h"
#include "engine/SupervisorHost.h"
#include "profiles/Builtins.h"

using namespace lorascope::engine;

namespace {

struct Recorder : lorascope::testing::EventLog {
  bool finished() const { return hasState(RunState::Finished); }
};

nlohmann::json runConfig(const QTemporaryDir& dir, int steps) {
  return {{"total_steps", steps},
          {"mirror", dir.filePath("mirror").toStdString()},
          {"fault_dir", dir.path().toStdString()}};
}

}  // namespace

class TestSupervisor : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("XDG_CONFIG_HOME", configDir_.path().toUtf8()); }

  void everyStepSurvivesKillsStickyErrorsAndHangs() {
    QTemporaryDir dir;
    SupervisorPolicy policy;
    policy.hangTimeoutMs = 1500;
    Recorder r;
    SupervisorHost supervisor(lstest::crashyEngine(), lorascope::profiles::defaultProfile(), policy,
                              r.listener());
    QTRY_VERIFY(supervisor.isConnected());

    nlohmann::json config = runConfig(dir, 30);
    config["kill_at"] = {4, 11, 19};
    config["sticky_at"] = {8};
    config["hang_at"] = {15};
    supervisor.send(StartCommand{config});
    QTRY_VERIFY_WITH_TIMEOUT(r.finished(), 30000);

    // Every step 1..30 completed exactly once, and the final state holds all of them.
    std::vector<std::int64_t> steps;
    for (const StepEvent& s : r.all<StepEvent>())
      steps.push_back(s.step);
    std::vector<std::int64_t> expected(30);
    std::iota(expected.begin(), expected.end(), 1);
    QCOMPARE(steps, expected);
    QCOMPARE(r.all<StepEvent>().back().loss, 30.0 * 31 / 2);  // the job's running sum
    QCOMPARE(r.all<CheckpointEvent>().back().step, std::int64_t{30});

    const auto incidents = r.all<IncidentEvent>();
    QCOMPARE(incidents.size(), std::size_t{5});
    QCOMPARE(supervisor.restarts(), 5);
    QVERIFY(incidents[0].what.find("killed by a signal (SIGKILL) after step 3") !=
            std::string::npos);
    QVERIFY(incidents[1].what.find("blas") != std::string::npos);
    QVERIFY(incidents[3].what.find("hang") != std::string::npos);
    // The ladder was climbed: the built-in GEMM and serialization were switched on.
    bool builtinGemm = false, serialized = false;
    for (const ToggleAppliedEvent& t : r.all<ToggleAppliedEvent>()) {
      builtinGemm |= t.toggle == Toggle::GemmBackend && t.value == "builtin";
      serialized |= t.toggle == Toggle::Serialize && t.value == true;
    }
    QVERIFY(builtinGemm);
    QVERIFY(serialized);
  }

  void givesUpAfterTheRestartLimit() {
    QTemporaryDir dir;
    SupervisorPolicy policy;
    policy.maxRestarts = 2;
    Recorder r;
    SupervisorHost supervisor(lstest::crashyEngine(), lorascope::profiles::defaultProfile(), policy,
                              r.listener());
    QTRY_VERIFY(supervisor.isConnected());
    nlohmann::json config = runConfig(dir, 20);
    config["kill_at"] = {2, 3, 4};
    supervisor.send(StartCommand{config});
    QTRY_VERIFY_WITH_TIMEOUT(r.hasState(RunState::Failed), 20000);
    QVERIFY(r.all<IncidentEvent>().back().action.find("gave up after 2 restarts") !=
            std::string::npos);
  }

  void aProfileWithAnotherEnvironmentRestartsAndResumes() {
    QTemporaryDir dir;
    Recorder r;
    SupervisorHost supervisor(lstest::crashyEngine(), lorascope::profiles::defaultProfile(),
                              SupervisorPolicy{}, r.listener());
    QTRY_VERIFY(supervisor.isConnected());
    supervisor.send(StartCommand{runConfig(dir, 400)});
    QTRY_VERIFY(r.all<StepEvent>().size() >= 5);
    supervisor.send(SwitchProfileCommand{"Debug: serialize + blocking"});
    QTRY_VERIFY_WITH_TIMEOUT(r.finished() && r.all<CheckpointEvent>().back().step == 400, 30000);
    bool sawNewEnvironment = false;
    for (const LogEvent& log : r.all<LogEvent>()) {
      sawNewEnvironment |= log.text.find("AMD_SERIALIZE_KERNEL=3") != std::string::npos;
    }
    QVERIFY(sawNewEnvironment);
    std::int64_t previous = 0;
    for (const StepEvent& s : r.all<StepEvent>()) {
      QCOMPARE(s.step, previous + 1);  // resumed where it stopped: no step lost or repeated
      previous = s.step;
    }
  }

 private:
  QTemporaryDir configDir_;
};

QTEST_MAIN(TestSupervisor)
#include "test_supervisor.moc"
