// test_supervised_run_lock.cpp — one writer per run folder across an engine restart (issue 31):
// the supervisor holds the run's run.lock from its start to its end, so when its engine dies no
// other trainer, resume or export takes the folder before the next engine resumes the run. The
// real `lorascope-train engine` trains the demo under a SupervisorHost (this process, as in the
// window and `train`); the engines are started through a stand-in program that waits while a gate
// file exists and then becomes lorascope-train, so the gap between an engine's death and the next
// one's start lasts as long as the test needs, with no race. Also: the engine refuses a holder
// that is not its parent, a start the engine refuses leaves no folder behind, and a second start
// it refuses while a run trains is not what the supervisor resumes after a crash.
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <filesystem>
#include <map>
#include <optional>

#include "CpuOnlyProfile.h"
#include "DemoRun.h"
#include "EventLog.h"
#include "TestPaths.h"
#include "common/FileLock.h"
#include "common/Platform.h"
#include "engine/SupervisorHost.h"

using namespace lorascope::engine;
namespace common = lorascope::common;
namespace fs = std::filesystem;

namespace {

constexpr int kSteps = 8;

nlohmann::json demoRun(const QString& out) {
  return lstest::demoRun(out.toStdString(), kSteps, 2);
}

// Who holds the lock of `folder` now: nullopt when no one (it is then taken and let go at once).
std::optional<common::LockHolder> holderOf(const QString& folder) {
  try {
    const common::FileLock probe(fs::path(folder.toStdString()) / common::kRunLockFile);
    return std::nullopt;
  } catch (const common::LockBusy& e) {
    return e.holder();
  }
}

// `lorascope-train ARGS`: its exit code and its stderr.
std::pair<int, QString> runCli(const QStringList& arguments) {
  QProcess cli;
  cli.start(QString::fromStdString(lstest::trainProgram()), arguments);
  if (!cli.waitForFinished(300'000))
    return {-1, "did not finish"};
  return {cli.exitCode(), QString::fromUtf8(cli.readAllStandardError())};
}

}  // namespace

class TestSupervisedRunLock : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(scratch_.isValid());
    qputenv("XDG_CONFIG_HOME", scratch_.filePath("config").toUtf8());
    qputenv("LORASCOPE_CACHE_DIR", scratch_.filePath("cache").toUtf8());  // the demo, once
    qunsetenv("LORASCOPE_FAULTS");
    // The stand-in: waits while the gate exists, then becomes lorascope-train (exec: the same
    // process, so the engine is still the supervisor's child).
    gate_ = scratch_.filePath("gate");
    stage_ = scratch_.filePath("gated-engine.sh");
    QFile script(stage_);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(QString("#!/bin/sh\nwhile [ -e '%1' ]; do sleep 0.05; done\nexec '%2' \"$@\"\n")
                     .arg(gate_, QString::fromStdString(lstest::trainProgram()))
                     .toUtf8());
    script.close();
    QVERIFY(script.setPermissions(script.permissions() | QFile::ExeOwner));
  }

  // The engine is SIGKILLed mid-run; until the next one runs, the folder stays locked by the
  // supervisor: a lock, an export and a `train --resume` are refused, naming the supervisor's pid
  // and since when it holds the lock. The next engine resumes, every step is done once, and once
  // the run has ended the folder is free.
  void theFolderStaysLockedBetweenAnEnginesDeathAndTheNextOne() {
    const QString out = scratch_.filePath("run");
    const std::uint32_t self = common::currentProcessId();
    SupervisorPolicy policy;
    policy.climbLadder = false;  // the ladder's rungs are GPU settings
    lorascope::testing::EventLog log;
    SupervisorHost supervisor(stage_.toStdString(), lstest::cpuOnlyProfile(), policy,
                              log.listener());
    QTRY_VERIFY_WITH_TIMEOUT(supervisor.isConnected(), 60'000);
    supervisor.send(StartCommand{demoRun(out)});
    QTRY_VERIFY_WITH_TIMEOUT(log.all<StepEvent>().size() >= 3, 300'000);
    QVERIFY(!log.hasState(RunState::Failed));

    // While it trains, the holder is the supervisor (this process), not the engine.
    const std::optional<common::LockHolder> training = holderOf(out);
    QVERIFY2(training.has_value(), "the run's folder is not locked while it trains");
    QCOMPARE(training->pid, self);

    // The gap: the engine dies, the supervisor records the incident and starts the next one,
    // which waits at the gate.
    QFile gate(gate_);
    QVERIFY(gate.open(QIODevice::WriteOnly));
    gate.close();
    const std::int64_t engine = supervisor.engineProcessId();
    QVERIFY(engine != 0);
    QCOMPARE(::kill(pid_t(engine), SIGKILL), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!log.all<IncidentEvent>().empty(), 60'000);
    QTRY_VERIFY_WITH_TIMEOUT(supervisor.engineProcessId() != engine, 60'000);

    const std::optional<common::LockHolder> between = holderOf(out);
    QVERIFY2(between.has_value(), "the folder was free between the engine's death and its restart");
    QCOMPARE(between->pid, self);
    QVERIFY(!between->started.empty());
    const QString named =
        QString("is in use: pid %1, since %2").arg(self).arg(between->started.c_str());
    const auto [exportCode, exportSaid] = runCli({"export", out});
    QVERIFY2(exportCode != 0 && exportSaid.contains(named), qPrintable(exportSaid));
    const auto [resumeCode, resumeSaid] = runCli({"train", "--resume", out});
    QVERIFY2(resumeCode != 0 && resumeSaid.contains(named), qPrintable(resumeSaid));

    QVERIFY(QFile::remove(gate_));
    QTRY_VERIFY_WITH_TIMEOUT(log.hasState(RunState::Finished) || log.hasState(RunState::Failed),
                             300'000);
    QVERIFY(log.hasState(RunState::Finished));
    std::map<std::int64_t, int> times;
    for (const StepEvent& s : log.all<StepEvent>())
      ++times[s.step];
    QCOMPARE(int(times.size()), kSteps);
    for (const auto& [step, count] : times)
      QVERIFY2(count == 1, qPrintable(QString("step %1 completed %2 times").arg(step).arg(count)));
    QCOMPARE(supervisor.restarts(), 1);

    // Ended: the folder is free while the supervisor and its idle engine live on.
    QVERIFY(supervisor.engineProcessId() != 0);
    QVERIFY(!holderOf(out).has_value());
  }

  // An engine told that its supervisor holds the lock checks that the holder is its parent: here
  // the holder is this test, and the engine's parent a shell between the two.
  void anEngineRefusesAHolderThatIsNotItsParent() {
    const QString out = scratch_.filePath("not-mine");
    QVERIFY(QDir().mkpath(out));
    const common::FileLock held(fs::path(out.toStdString()) / common::kRunLockFile);
    QProcess engine;
    engine.start("sh",
                 {"-c", "\"$0\" engine; exit $?", QString::fromStdString(lstest::trainProgram())});
    QVERIFY(engine.waitForStarted());
    nlohmann::json start = demoRun(out);
    start["run_lock_holder"] = common::currentProcessId();
    engine.write(QByteArray::fromStdString(encodeCommand(StartCommand{start}) + "\n"));
    QByteArray said;
    QTRY_VERIFY_WITH_TIMEOUT((said += engine.readAllStandardOutput()).contains("\"failed\""),
                             120'000);
    engine.closeWriteChannel();
    QVERIFY(engine.waitForFinished(60'000));
    QVERIFY2(said.contains(QString("is in use: pid %1").arg(common::currentProcessId()).toUtf8()) &&
                 said.contains("is not this engine's supervisor"),
             said.constData());
    QVERIFY(!QFile::exists(out + "/config.json"));
  }

  // A second start while run A trains, into another folder: the engine refuses it. The engine is
  // then SIGKILLed: the supervisor resumes A (its folder, its steps, each once), not the refused
  // start's folder, which is never made.
  void aStartRefusedWhileARunTrainsIsNotWhatACrashResumes() {
    const QString out = scratch_.filePath("first");
    const QString other = scratch_.filePath("second");
    SupervisorPolicy policy;
    policy.climbLadder = false;  // the ladder's rungs are GPU settings
    lorascope::testing::EventLog log;
    SupervisorHost supervisor(lstest::trainProgram(), lstest::cpuOnlyProfile(), policy,
                              log.listener());
    QTRY_VERIFY_WITH_TIMEOUT(supervisor.isConnected(), 60'000);
    supervisor.send(StartCommand{lstest::demoRun(out.toStdString(), 1000, 2)});  // stopped below
    QTRY_VERIFY_WITH_TIMEOUT(log.all<StepEvent>().size() >= 2, 300'000);
    supervisor.send(StartCommand{demoRun(other)});
    const auto refused = [&log] {
      for (const ErrorEvent& e : log.all<ErrorEvent>()) {
        if (e.category == "command" && e.op == "start")
          return e.message.find("a run is already in progress") != std::string::npos;
      }
      return false;
    };
    QTRY_VERIFY_WITH_TIMEOUT(refused(), 120'000);
    const std::int64_t engine = supervisor.engineProcessId();
    QVERIFY(engine != 0);
    QCOMPARE(::kill(pid_t(engine), SIGKILL), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!log.all<IncidentEvent>().empty(), 60'000);
    const IncidentEvent incident = log.all<IncidentEvent>().front();
    QVERIFY2(incident.action.find("resumed the run") != std::string::npos, incident.action.c_str());
    // A's steps go on after the kill; then it is stopped.
    const std::size_t before = log.all<StepEvent>().size();
    QTRY_VERIFY_WITH_TIMEOUT(
        log.all<StepEvent>().size() >= before + 2 || log.hasState(RunState::Failed), 300'000);
    QVERIFY2(!log.hasState(RunState::Failed), "the run resumed after the kill failed");
    supervisor.send(StopCommand{});
    QTRY_VERIFY_WITH_TIMEOUT(log.hasState(RunState::Finished) || log.hasState(RunState::Failed),
                             300'000);
    QVERIFY(!log.hasState(RunState::Failed));
    std::map<std::int64_t, int> times;
    for (const StepEvent& s : log.all<StepEvent>())
      ++times[s.step];
    QCOMPARE(times.rbegin()->first, std::int64_t(times.size()));  // 1..N, none missing
    for (const auto& [step, count] : times)
      QVERIFY2(count == 1, qPrintable(QString("step %1 completed %2 times").arg(step).arg(count)));
    QCOMPARE(supervisor.restarts(), 1);
    QVERIFY(QFileInfo::exists(out + "/config.json"));
    QVERIFY(!QFileInfo::exists(other));
  }

  // A start the engine refuses (no such model) leaves no folder behind, though the supervisor
  // made it to lock it.
  void aRefusedStartLeavesNoFolderBehind() {
    const QString out = scratch_.filePath("refused/deeper/run");
    lorascope::testing::EventLog log;
    SupervisorHost supervisor(lstest::trainProgram(), lstest::cpuOnlyProfile(), SupervisorPolicy{},
                              log.listener());
    QTRY_VERIFY_WITH_TIMEOUT(supervisor.isConnected(), 60'000);
    supervisor.send(StartCommand{{{"model", scratch_.filePath("no-model").toStdString()},
                                  {"data", scratch_.filePath("no-data.jsonl").toStdString()},
                                  {"out", out.toStdString()}}});
    QTRY_VERIFY_WITH_TIMEOUT(log.hasState(RunState::Failed), 120'000);
    QVERIFY(!QFileInfo::exists(scratch_.filePath("refused")));
  }

 private:
  QTemporaryDir scratch_;
  QString gate_;
  QString stage_;
};

QTEST_MAIN(TestSupervisedRunLock)
#include "test_supervised_run_lock.moc"
