// test_hosts.cpp — the in-process host delivers events on the owner's thread and never blocks
// send(); the isolated host reports a child that cannot start, and malformed lines, as events.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

#include "engine/InProcessHost.h"
#include "engine/IsolatedHost.h"

using namespace lorascope::engine;

namespace {

// Steps forever until stopped; each step takes about 20 ms.
class SlowJob : public EngineJob {
 public:
  std::optional<StepEvent> runStep(const CancelFlag& cancel) override {
    for (int op = 0; op < 100; ++op) {
      if (cancel.raised())
        return std::nullopt;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return StepEvent{++done_, 1.0, 1e-3, 1.0, 10.0, 1, 1};
  }
  bool finished() const override { return false; }
  std::int64_t completedSteps() const override { return done_; }
  std::string applyToggle(Toggle, const nlohmann::json&) override { return {}; }
  CheckpointEvent checkpoint() override { return {"ckpt", done_}; }
  std::optional<SnapshotEvent> snapshot() override { return std::nullopt; }
  std::optional<MemoryEvent> memory() override { return std::nullopt; }

 private:
  std::int64_t done_ = 0;
};

}  // namespace

class TestHosts : public QObject {
  Q_OBJECT

 private slots:
  void inProcessEventsArriveOnTheOwnersThread() {
    InProcessHost host(
        [](const nlohmann::json&, const EventSink&) { return std::make_unique<SlowJob>(); },
        HelloEvent{kProtocolVersion, "test", "cpu", {}});
    QThread* owner = QThread::currentThread();
    int steps = 0;
    bool allOnOwner = true;
    connect(&host, &EngineHost::eventReceived, this, [&](const TimedEvent& e) {
      allOnOwner = allOnOwner && QThread::currentThread() == owner;
      steps += std::holds_alternative<StepEvent>(e.event) ? 1 : 0;
    });
    QTRY_VERIFY(host.isConnected());
    QElapsedTimer timer;
    timer.start();
    host.send(StartCommand{nlohmann::json::object()});
    host.send(SetToggleCommand{Toggle::Serialize, true});
    QVERIFY2(timer.elapsed() < 20, "send() waited on the trainer");
    QTRY_VERIFY(steps >= 3);
    QVERIFY(allOnOwner);
    host.send(StopCommand{});
  }

  void isolatedHostReportsAnEngineThatCannotStart() {
    IsolatedHost host(QStringLiteral("/nonexistent/lorascope-train"), {});
    QSignalSpy events(&host, &EngineHost::eventReceived);
    QSignalSpy exited(&host, &IsolatedHost::exited);
    host.start();
    QTRY_VERIFY(!exited.isEmpty());
    bool sawError = false;
    for (const QList<QVariant>& args : events) {
      const auto e = args.at(0).value<TimedEvent>();
      if (const auto* error = std::get_if<ErrorEvent>(&e.event)) {
        sawError = error->message.find("cannot start the engine") != std::string::npos;
      }
    }
    QVERIFY(sawError);
    QVERIFY(!host.isConnected());
  }

  // A stand-in engine (a shell script) prints one valid event and one malformed line, writes to
  // stderr and dies by SIGSEGV, as a GPU memory fault would end the real one.
  void isolatedHostDecodesLinesAndReportsACrash() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("fake-engine"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(
        "#!/bin/sh\n"
        "echo '{\"v\":1,\"type\":\"log\",\"t_ms\":3,\"level\":\"info\",\"text\":\"hi\"}'\n"
        "echo 'garbage'\n"
        "echo 'Memory access fault by GPU node-1' >&2\n"
        "kill -SEGV $$\n");
    file.close();
    file.setPermissions(QFileDevice::ReadOwner | QFileDevice::ExeOwner);

    IsolatedHost host(path, {{QStringLiteral("AMD_SERIALIZE_KERNEL"), QStringLiteral("3")}});
    QSignalSpy events(&host, &EngineHost::eventReceived);
    QSignalSpy exited(&host, &IsolatedHost::exited);
    host.start();
    QTRY_VERIFY(!exited.isEmpty());
    const auto exit = exited.at(0).at(0).value<EngineExit>();
    QVERIFY(exit.crashed);
    QVERIFY(exit.stderrTail.contains(QStringLiteral("Memory access fault")));

    int logs = 0, protocolErrors = 0;
    for (const QList<QVariant>& args : events) {
      const auto e = args.at(0).value<TimedEvent>();
      if (const auto* log = std::get_if<LogEvent>(&e.event)) {
        logs += log->text == "hi" ? 1 : 0;
      } else if (const auto* error = std::get_if<ErrorEvent>(&e.event)) {
        protocolErrors += error->category == "protocol" ? 1 : 0;
      }
    }
    QCOMPARE(logs, 1);
    QCOMPARE(protocolErrors, 1);
  }
};

QTEST_MAIN(TestHosts)
#include "test_hosts.moc"
