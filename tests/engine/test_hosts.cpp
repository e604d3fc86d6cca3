// test_hosts.cpp — the in-process host never blocks send() and reports from its engine thread;
// the isolated host reports a child that cannot start, malformed lines and a crash as events and
// an exit; the GUI's adapter hands a host's events to the owner's thread as signals.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <mutex>
#include <thread>

#include "EventLog.h"
#include "engine/InProcessHost.h"
#include "engine/IsolatedHost.h"
#include "gui/EngineAdapter.h"

using namespace lorascope::engine;
using lorascope::testing::EventLog;

namespace {

// Steps forever until stopped; each step is `ops` ops of at least 200 µs (100: 20 ms), and a
// stop ends one within an op.
class SlowJob : public EngineJob {
 public:
  explicit SlowJob(int ops) : ops_(ops) {}
  std::optional<StepEvent> runStep(const CancelFlag& cancel) override {
    for (int op = 0; op < ops_; ++op) {
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
  int ops_;
  std::int64_t done_ = 0;
};

JobFactory slowJobs(int ops = 100) {
  return [ops](const nlohmann::json&, const EventSink&) { return std::make_unique<SlowJob>(ops); };
}

// Records how an isolated host's child ended.
struct ExitLog {
  std::mutex mutex;
  std::vector<EngineExit> exits;
  IsolatedHost::ExitListener listener() {
    return [this](const EngineExit& exit) {
      const std::lock_guard lock(mutex);
      exits.push_back(exit);
    };
  }
  std::size_t count() {
    const std::lock_guard lock(mutex);
    return exits.size();
  }
};

}  // namespace

class TestHosts : public QObject {
  Q_OBJECT

 private slots:
  void inProcessHostNeverBlocksSendAndReportsFromItsThread() {
    EventLog log;
    {
      InProcessHost host(slowJobs(2000), HelloEvent{kProtocolVersion, "test", "cpu", {}},
                         log.listener());
      QTRY_VERIFY(host.isConnected());
      host.send(StartCommand{nlohmann::json::object()});
      QTRY_VERIFY_WITH_TIMEOUT(log.all<StepEvent>().size() >= 1, 30'000);
      // The second step is under way and lasts at least 0.4 s (2000 ops): a send() that waited for
      // the trainer's next boundary would take about that long. One that only queues takes
      // microseconds; 0.2 s leaves room for a busy machine to hold this thread off.
      QElapsedTimer timer;
      timer.start();
      host.send(SetToggleCommand{Toggle::Serialize, true});
      QVERIFY2(timer.elapsed() < 200, "send() waited on the trainer");
      QTRY_VERIFY_WITH_TIMEOUT(log.all<StepEvent>().size() >= 3, 30'000);
      host.send(StopCommand{});
      QTRY_VERIFY(log.hasState(RunState::Finished));
    }
    // One engine thread, not this one, reported everything; connected, then disconnected.
    const std::vector<std::thread::id> threads = log.threads();
    QVERIFY(!threads.empty());
    QVERIFY(threads.front() != std::this_thread::get_id());
    QVERIFY(std::all_of(threads.begin(), threads.end(),
                        [&](std::thread::id id) { return id == threads.front(); }));
    QCOMPARE(log.connectedChanges(), (std::vector<bool>{true, false}));
    QCOMPARE(log.all<CheckpointEvent>().size(), std::size_t{1});
  }

  void adapterEmitsOnTheOwnersThread() {
    lorascope::app::EngineAdapter adapter([](HostListener listener) {
      return std::make_unique<InProcessHost>(
          slowJobs(), HelloEvent{kProtocolVersion, "test", "cpu", {}}, std::move(listener));
    });
    QThread* owner = QThread::currentThread();
    int steps = 0;
    bool allOnOwner = true;
    bool sawConnected = false;
    connect(&adapter, &lorascope::widgets::EngineClient::eventReceived, this,
            [&](const TimedEvent& e) {
              allOnOwner = allOnOwner && QThread::currentThread() == owner;
              steps += std::holds_alternative<StepEvent>(e.event) ? 1 : 0;
            });
    connect(&adapter, &lorascope::widgets::EngineClient::connectedChanged, this,
            [&](bool connected) {
              allOnOwner = allOnOwner && QThread::currentThread() == owner;
              sawConnected |= connected;
            });
    QTRY_VERIFY(adapter.isConnected());
    adapter.send(StartCommand{nlohmann::json::object()});
    QTRY_VERIFY(steps >= 3);
    QVERIFY(allOnOwner);
    QVERIFY(sawConnected);
    QVERIFY(adapter.host<InProcessHost>().isConnected());
    adapter.send(StopCommand{});
  }

  void isolatedHostReportsAnEngineThatCannotStart() {
    EventLog log;
    ExitLog exits;
    IsolatedHost host("/nonexistent/lorascope-train", {}, log.listener(), exits.listener());
    host.start();
    QTRY_VERIFY(exits.count() == 1);
    QVERIFY(exits.exits[0].failedToStart);
    bool sawError = false;
    for (const ErrorEvent& error : log.all<ErrorEvent>()) {
      sawError |= error.message.find("cannot start the engine /nonexistent/lorascope-train") !=
                  std::string::npos;
    }
    QVERIFY(sawError);
    QVERIFY(!host.isConnected());
    QCOMPARE(host.processId(), std::int64_t{0});
  }

  // A stand-in engine (a shell script) prints one valid event and one malformed line, writes to
  // stderr and dies by SIGSEGV, as a GPU memory fault would end the real one. It also prints the
  // environment variable it was given.
  void isolatedHostDecodesLinesAndReportsACrash() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("fake-engine"));
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(
        "#!/bin/sh\n"
        "echo '{\"v\":1,\"type\":\"log\",\"t_ms\":3,\"level\":\"info\",\"text\":\"hi\"}'\n"
        "echo 'garbage'\n"
        "echo \"{\\\"v\\\":1,\\\"type\\\":\\\"log\\\",\\\"t_ms\\\":4,\\\"level\\\":\\\"info\\\","
        "\\\"text\\\":\\\"serialize=$AMD_SERIALIZE_KERNEL\\\"}\"\n"
        "echo 'Memory access fault by GPU node-1' >&2\n"
        "kill -SEGV $$\n");
    file.close();
    file.setPermissions(QFileDevice::ReadOwner | QFileDevice::ExeOwner);

    EventLog log;
    ExitLog exits;
    IsolatedHost host(path.toStdString(), {{"AMD_SERIALIZE_KERNEL", "3"}}, log.listener(),
                      exits.listener());
    host.start();
    QTRY_VERIFY(exits.count() == 1);
    const EngineExit exit = exits.exits[0];
    QVERIFY(exit.crashed);
    QCOMPARE(exit.signal, std::string("SIGSEGV"));
    QVERIFY(exit.stderrTail.find("Memory access fault") != std::string::npos);

    int logs = 0, protocolErrors = 0, stderrLines = 0;
    bool sawEnvironment = false;
    for (const TimedEvent& e : log.events()) {
      if (const auto* line = std::get_if<LogEvent>(&e.event)) {
        logs += line->text == "hi" ? 1 : 0;
        sawEnvironment |= line->text == "serialize=3";
        stderrLines += line->text == "engine: Memory access fault by GPU node-1" ? 1 : 0;
      } else if (const auto* error = std::get_if<ErrorEvent>(&e.event)) {
        protocolErrors += error->category == "protocol" ? 1 : 0;
      }
    }
    QCOMPARE(logs, 1);
    QCOMPARE(protocolErrors, 1);
    QCOMPARE(stderrLines, 1);
    QVERIFY(sawEnvironment);
    QCOMPARE(log.connectedChanges(), (std::vector<bool>{true, false}));
    // A command to a child that is gone is answered, not lost.
    host.send(PauseCommand{});
    QVERIFY(log.all<ErrorEvent>().back().message.find("not running") != std::string::npos);
  }
};

QTEST_MAIN(TestHosts)
#include "test_hosts.moc"
