// test_cli_events.cpp — lorascope-train as scripts and shells see it: `train --json` and
// `export --json` print only event lines (train's in the engine's protocol, decoded strictly by
// engine::decodeEvent), `export --merge` reports its progress, and Ctrl-C stops a run with exit
// status 130 once its checkpoint is written (README: "The command line").
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "engine/Engine.h"  // defines: kStoppedByUser
#include "engine/Protocol.h"

using nlohmann::json;
using namespace lorascope;

namespace {

const QString kTrainExe = QString::fromStdString(lstest::trainProgram());
constexpr int kTimeoutMs = 240000;

QStringList outputLines(QProcess& process) {
  return QString::fromUtf8(process.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
}

}  // namespace

class TestCliEvents : public QObject {
  Q_OBJECT

  QTemporaryDir home_;

  QString path(const QString& name) const { return home_.filePath(name); }

  // Runs lorascope-train to completion: its stdout lines, none when it did not exit 0.
  QStringList run(const QStringList& args) {
    QProcess process;
    process.start(kTrainExe, args);
    if (!process.waitForFinished(kTimeoutMs)) {
      process.kill();
      qWarning("lorascope-train %s did not finish", qPrintable(args.join(' ')));
      return {};
    }
    const QByteArray errors = process.readAllStandardError();
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
      qWarning("exit %d: %s", process.exitCode(), errors.constData());
      return {};
    }
    return outputLines(process);
  }

 private slots:
  void initTestCase() {
    QVERIFY(home_.isValid());
    qputenv("LORASCOPE_CACHE_DIR", path(QStringLiteral("cache")).toUtf8());
  }

  // Every stdout line is one protocol event: logs, running, a step per step, the final
  // checkpoint, then finished.
  void trainJsonPrintsProtocolEvents() {
    const QStringList lines = run({"train", "--demo", "--steps", "3", "--checkpoint-every", "2",
                                   "--json", "--out", path(QStringLiteral("json-run"))});
    QVERIFY(!lines.isEmpty());
    QStringList types;
    std::vector<std::int64_t> steps;
    std::vector<std::int64_t> checkpoints;
    std::int64_t lastTimeMs = 0;
    for (const QString& line : lines) {
      engine::TimedEvent timed;
      try {
        timed = engine::decodeEvent(line.toStdString());
      } catch (const engine::ProtocolError& e) {
        QFAIL(qPrintable(QStringLiteral("not an event: %1 (%2)").arg(line, e.what())));
      }
      QVERIFY(timed.timeMs >= lastTimeMs);
      lastTimeMs = timed.timeMs;
      types << QString::fromLatin1(engine::eventType(timed.event));
      if (const auto* step = std::get_if<engine::StepEvent>(&timed.event)) {
        steps.push_back(step->step);
        QVERIFY(step->loss > 0 && step->tokensPerS > 0);
      }
      if (const auto* checkpoint = std::get_if<engine::CheckpointEvent>(&timed.event)) {
        checkpoints.push_back(checkpoint->step);
        QVERIFY(QFileInfo::exists(QString::fromStdString(checkpoint->path)));
      }
    }
    QCOMPARE(steps, (std::vector<std::int64_t>{1, 2, 3}));
    QVERIFY(!checkpoints.empty());
    QCOMPARE(checkpoints.back(), std::int64_t{3});  // the run's last step, checkpointed
    QVERIFY2(types.contains(QStringLiteral("log")), qPrintable(types.join(',')));
    const auto last = engine::decodeEvent(lines.last().toStdString());
    const auto* finished = std::get_if<engine::StateEvent>(&last.event);
    QVERIFY(finished != nullptr);
    QCOMPARE(finished->state, engine::RunState::Finished);
    QCOMPARE(finished->step, std::int64_t{3});
  }

  // export --json on that run: the adapter, the merge's progress up to every byte, what was
  // written.
  void exportJsonReportsAdapterProgressAndResult() {
    const QString merged = path(QStringLiteral("merged"));
    const QStringList lines = run({"export", path(QStringLiteral("json-run")), "--out",
                                   path(QStringLiteral("adapter")), "--merge", merged, "--json"});
    QVERIFY(!lines.isEmpty());
    std::vector<json> events;
    for (const QString& line : lines) {
      const json event = json::parse(line.toStdString(), nullptr, false);
      QVERIFY2(event.is_object() && event.value("v", 0) == 1, qPrintable(line));
      events.push_back(event);
    }
    QCOMPARE(events.front()["type"], "adapter");
    QCOMPARE(events.front()["rank"], 8);
    QCOMPARE(events[1]["type"], "written");
    QCOMPARE(events[1]["kind"], "adapter");
    std::uint64_t done = 0;
    std::uint64_t total = 0;
    int progressEvents = 0;
    for (const json& event : events) {
      if (event["type"] == "progress") {
        QVERIFY(event["done_bytes"].get<std::uint64_t>() > done);  // strictly growing
        done = event["done_bytes"];
        total = event["total_bytes"];
        ++progressEvents;
      }
    }
    QVERIFY(progressEvents >= 2);
    QVERIFY(total > 0);
    QCOMPARE(done, total);
    QCOMPARE(events.back()["type"], "written");
    QCOMPARE(events.back()["kind"], "merged");
    QCOMPARE(events.back()["merged_tensors"], 28);  // 4 layers × 7 projections
    QVERIFY(QFileInfo::exists(merged + QStringLiteral("/model.safetensors")));
  }

  // Without --json, a merge prints its progress as lines ending at 100 %.
  void exportMergeShowsProgress() {
    const QStringList lines = run({"export", path(QStringLiteral("json-run")), "--merge",
                                   path(QStringLiteral("merged-text"))});
    const QStringList progress = lines.filter(QRegularExpression(QStringLiteral("^merging: ")));
    QVERIFY2(progress.size() >= 2, qPrintable(lines.join('\n')));
    QVERIFY2(progress.last().startsWith(QStringLiteral("merging: 100%")),
             qPrintable(progress.last()));
  }

  // Ctrl-C: the last completed step is checkpointed, then exit 130.
  void ctrlCCheckpointsAndExits130() {
    const QString runDir = path(QStringLiteral("interrupted"));
    QProcess process;
    process.start(kTrainExe, {"train", "--demo", "--steps", "500", "--json", "--out", runDir});
    QVERIFY(process.waitForStarted());
    QByteArray seen;
    while (!seen.contains("\"type\":\"step\"")) {
      QVERIFY2(process.waitForReadyRead(kTimeoutMs), seen.constData());
      seen += process.readAllStandardOutput();
    }
    QVERIFY(::kill(static_cast<pid_t>(process.processId()), SIGINT) == 0);
    QVERIFY(process.waitForFinished(kTimeoutMs));
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);
    QCOMPARE(process.exitCode(), 130);
    seen += process.readAllStandardOutput();
    std::optional<engine::CheckpointEvent> lastCheckpoint;
    std::optional<engine::StateEvent> lastState;
    for (const QByteArray& line : seen.trimmed().split('\n')) {
      const engine::TimedEvent timed = engine::decodeEvent(line.toStdString());
      if (const auto* checkpoint = std::get_if<engine::CheckpointEvent>(&timed.event)) {
        lastCheckpoint = *checkpoint;
      } else if (const auto* state = std::get_if<engine::StateEvent>(&timed.event)) {
        lastState = *state;
      }
    }
    // The checkpoint came before the exit, and the run ended as stopped by the user.
    QVERIFY(lastCheckpoint.has_value());
    QVERIFY(lastCheckpoint->step >= 1 && lastCheckpoint->step < 500);
    QVERIFY(QFileInfo::exists(QString::fromStdString(lastCheckpoint->path) +
                              QStringLiteral("/adapter_model.safetensors")));
    QVERIFY(lastState.has_value());
    QCOMPARE(lastState->state, engine::RunState::Finished);
    QCOMPARE(lastState->detail, std::string(engine::kStoppedByUser));
  }

  // With --json, stdin takes the window's commands: a toggle set after the first step is applied
  // at a step boundary, a line that is no command is named on stderr and ignored, and stop ends
  // the run as the window's Stop does (its checkpoint, exit 130).
  void trainJsonTakesTheWindowsCommandsOnStdin() {
    QProcess process;
    process.start(kTrainExe, {"train", "--demo", "--steps", "100000", "--json", "--out",
                              path(QStringLiteral("driven"))});
    QVERIFY(process.waitForStarted());
    QByteArray seen;
    while (!seen.contains("\"type\":\"step\"")) {
      QVERIFY2(process.waitForReadyRead(kTimeoutMs), seen.constData());
      seen += process.readAllStandardOutput();
    }
    process.write(
        "{\"v\":1,\"type\":\"set\",\"toggle\":\"serialize\",\"value\":true}\n"
        "not a command\n"
        "{\"v\":1,\"type\":\"stop\"}\n");
    QVERIFY(process.waitForFinished(kTimeoutMs));
    QCOMPARE(process.exitCode(), 130);
    seen += process.readAllStandardOutput();
    bool applied = false;
    std::optional<engine::StateEvent> lastState;
    for (const QByteArray& line : seen.trimmed().split('\n')) {
      const engine::TimedEvent timed = engine::decodeEvent(line.toStdString());
      if (const auto* toggle = std::get_if<engine::ToggleAppliedEvent>(&timed.event)) {
        applied = applied || (toggle->toggle == engine::Toggle::Serialize && toggle->step >= 1 &&
                              toggle->value == nlohmann::json(true));
      } else if (const auto* state = std::get_if<engine::StateEvent>(&timed.event)) {
        lastState = *state;
      }
    }
    QVERIFY2(applied, seen.constData());
    QVERIFY(lastState.has_value());
    QCOMPARE(lastState->state, engine::RunState::Finished);
    QCOMPARE(lastState->detail, std::string(engine::kStoppedByUser));
    QVERIFY(lastState->step < 100000);
    const QByteArray errors = process.readAllStandardError();
    QVERIFY2(errors.contains("stdin: not an engine command") && errors.contains("not a command"),
             errors.constData());
  }
};

QTEST_MAIN(TestCliEvents)
#include "test_cli_events.moc"
