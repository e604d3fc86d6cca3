// test_window_runs.cpp — one run, one truth in the window (issue 27), on the main window driven
// through its controls with an engine client the test plays: a profile chosen during a run is
// Setup's and the next run's, and the next run starts with a fresh Controls dock and fresh axes; a
// resumed run is one selector entry with one curve from step 1 and one resume marker; events
// outside a run make no selector entry and the selector never disappears; the status bar says
// what the runs page says of a stopped run; the dock shows a recording's toggles while the
// recording is shown, and Setup's micro-batch, as Setup's, until the engine reports one (no number
// when Setup's is auto); and the smaller things a new user meets (the profile shown before the
// first run, "1 sequence", local creation times, plain recovery words, readable marker names and
// their legend, micro-batch changes in the log, Ctrl+Tab, the shortcuts list).
#include <QtTest>

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QLabel>
#include <QLineSeries>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QTreeWidget>
#include <QValueAxis>

#include "../widgets/RecordedStream.h"
#include "AppTestHome.h"
#include "TestPaths.h"
#include "gui/MainWindow.h"
#include "gui/RunSetupPage.h"
#include "gui/RunsPage.h"
#include "train/RunDirectory.h"
#include "widgets/ControlsPanel.h"
#include "widgets/Dashboard.h"
#include "widgets/EventLogModel.h"
#include "widgets/ProfileBar.h"
#include "widgets/TimeChart.h"

using namespace lorascope;
using namespace lorascope::engine;
using widgets::ControlsPanel;
using widgets::Dashboard;

namespace {

constexpr int kTimeoutMs = 120'000;  // the demo model is written on first use

StepEvent step(std::int64_t n, double loss, double tokensPerS = 1000.0) {
  StepEvent s;
  s.step = n;
  s.loss = loss;
  s.learningRate = 1e-4;
  s.gradNorm = 0.5;
  s.tokensPerS = tokensPerS;
  s.microBatch = 8;
  s.accumulation = 1;
  return s;
}

MemoryEvent reading(std::uint64_t hostRss, std::optional<std::uint64_t> largestFree = {}) {
  MemoryEvent m;
  m.hostRssBytes = hostRss;
  m.largestFreeBytes = largestFree;
  return m;
}

double axisMax(widgets::TimeChart* chart, int series) {
  for (QAbstractAxis* axis : chart->lineSeries(series)->attachedAxes()) {
    if (axis->orientation() == Qt::Vertical) {
      return static_cast<QValueAxis*>(axis)->max();
    }
  }
  return -1;
}

QString statusBarText(app::MainWindow& window) {
  QStringList texts;
  for (QLabel* label : window.statusBar()->findChildren<QLabel*>()) {
    texts << label->text();
  }
  return texts.join(QStringLiteral(" | "));
}

// A run folder as the engine leaves it: config.json, `steps` steps in metrics.jsonl and a
// complete checkpoint at `checkpoint`.
void writeRun(const QString& dir, std::int64_t steps, std::int64_t checkpoint,
              std::int64_t maxSteps) {
  const train::RunDirectory run = train::RunDirectory::create(
      dir.toStdString(),
      {{"model_path", std::string(lstest::sourcePath("tests/model/data")) + "/mistral_f32"},
       {"training", {{"max_steps", maxSteps}, {"profile", "Balanced"}}},
       {"created", "2026-11-28T23:44:01Z"}});  // UTC, as job::newRunConfig writes it
  for (std::int64_t n = 1; n <= steps; ++n) {
    train::StepMetrics m;
    m.step = n;
    m.loss = 3.0 - 0.01 * static_cast<double>(n);
    m.seconds = 0.5;
    m.tokensPerS = 1000;
    m.microBatch = 8;
    m.accumulation = 1;
    run.appendMetrics(m);
  }
  std::filesystem::create_directories(run.checkpointDir(checkpoint));
}

}  // namespace

class TestWindowRuns : public QObject {
  Q_OBJECT

 private:
  lstest::AppTestHome home_{QStringLiteral("test_window_runs")};

  // The window on the demo with `engine` connected, Start enabled.
  void prepare(app::MainWindow& window, testing::RecordingEngineClient& engine) {
    window.setEngineProgram(
        QString::fromStdString(lstest::trainProgram()));  // the demo's files (`demo`)
    window.setEngine(&engine);
    engine.setConnected(true);
    app::RunSetupPage* setup = window.setupPage();
    QTRY_VERIFY_WITH_TIMEOUT(!setup->isBusy(), kTimeoutMs);
    setup->setOutputDir(home_.filePath(QStringLiteral("runs")));
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);
  }

  static const StartCommand& lastStart(const testing::RecordingEngineClient& engine) {
    for (auto it = engine.sent.rbegin(); it != engine.sent.rend(); ++it) {
      if (const auto* start = std::get_if<StartCommand>(&*it)) {
        return *start;
      }
    }
    throw std::runtime_error("no start command sent");
  }

 private slots:
  void init() { QSettings().clear(); }

  // Item 1. The profile chosen on the bar during a run becomes Setup's and the next run's (its
  // start command, which config.json records); the toolbar shows it throughout; the next run starts
  // with a Controls dock that knows nothing yet, and axes that do not keep the last run's ranges.
  void aProfileChosenDuringARunIsTheNextRunsAndNothingElseLeaks() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    prepare(window, engine);
    widgets::ProfileBar* bar = window.profileBar();
    app::RunSetupPage* setup = window.setupPage();
    QCOMPARE(setup->profileName(), QStringLiteral("Balanced"));
    QVERIFY(bar->button(QStringLiteral("Balanced"))->isChecked());

    window.startAction()->trigger();
    QCOMPARE(lastStart(engine).runConfig["options"]["profile"].get<std::string>(), "Balanced");
    window.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    window.handleEvent({1, ToggleAppliedEvent{Toggle::MicroBatch, 8, 0}});
    window.handleEvent({2, ToggleAppliedEvent{Toggle::GemmBackend, "vendor", 0}});
    for (int n = 1; n <= 3; ++n) {
      window.handleEvent({100 * n, step(n, 9.0)});
      window.handleEvent({100 * n + 50, reading(std::uint64_t{1} << 30, std::uint64_t{40} << 30)});
    }
    // Low VRAM on the bar, mid-run: Setup follows, with what the profile sets over its options.
    bar->button(QStringLiteral("Low VRAM"))->click();
    QCOMPARE(std::get<SwitchProfileCommand>(engine.sent.back()).name, std::string("Low VRAM"));
    QCOMPARE(setup->profileName(), QStringLiteral("Low VRAM"));
    QVERIFY2(setup->profileNote().contains(QStringLiteral("micro-batch 1")),
             qPrintable(setup->profileNote()));
    // The memory estimate is the run's: at the profile's micro-batch, with checkpointing.
    QVERIFY2(setup->memoryEstimateText().contains(QStringLiteral("micro-batch 1 × ")) &&
                 setup->memoryEstimateText().contains(QStringLiteral("checkpointing")) &&
                 setup->memoryEstimateText().contains(QStringLiteral("Low VRAM's")),
             qPrintable(setup->memoryEstimateText()));
    window.handleEvent({400, ProfileSwitchEvent{"Low VRAM", "applied at the next step", 3}});
    window.handleEvent({401, ToggleAppliedEvent{Toggle::MicroBatch, 1, 3}});
    window.controls()->requestToggle(Toggle::GemmBackend, "builtin");
    window.handleEvent({402, ToggleAppliedEvent{Toggle::GemmBackend, "builtin", 3}});
    QCOMPARE(window.controls()->appliedValue(Toggle::MicroBatch)->dump(), nlohmann::json(1).dump());
    window.handleEvent({500, step(40, 8.0)});  // a long run: its step axis to 50
    window.handleEvent({600, StateEvent{RunState::Finished, 40, ""}});
    QVERIFY(bar->button(QStringLiteral("Low VRAM"))->isChecked());
    window.dashboard()->refresh();
    QVERIFY(window.dashboard()->allocatorChart()->decimator(0).sampleCount() > 0);
    QVERIFY(axisMax(window.dashboard()->allocatorChart(), 0) > 40.0);

    // Start again: the run starts from what Setup shows (Low VRAM; the Controls change is not
    // carried: the options are Setup's, and the dock shows them as Setup's until the engine
    // reports), and no switch is needed since the engine has it.
    const std::size_t sentBefore = engine.sent.size();
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);
    window.startAction()->trigger();
    QCOMPARE(engine.sent.size(), sentBefore + 1);
    const nlohmann::json options = lastStart(engine).runConfig["options"];
    QCOMPARE(options["profile"].get<std::string>(), "Low VRAM");
    QCOMPARE(options["gemm-backend"].get<std::string>(), "vendor");
    QVERIFY(bar->button(QStringLiteral("Low VRAM"))->isChecked());
    QCOMPARE(window.controls()->status(Toggle::MicroBatch), ControlsPanel::Status::Configured);
    QCOMPARE(window.controls()->status(Toggle::GemmBackend), ControlsPanel::Status::Configured);
    QCOMPARE(
        qobject_cast<QComboBox*>(window.controls()->editor(Toggle::GemmBackend))->currentText(),
        QStringLiteral("vendor"));
    QVERIFY(!window.controls()->appliedValue(Toggle::GemmBackend));
    // The new run reports memory without the allocator's readings (a CPU run): that axis is not
    // left at the last run's 40 GiB.
    window.handleEvent({700, StateEvent{RunState::Running, 0, ""}});
    window.handleEvent({800, reading(std::uint64_t{1} << 29)});
    window.handleEvent({900, step(1, 2.0)});
    window.dashboard()->refresh();
    QCOMPARE(window.dashboard()->allocatorChart()->decimator(0).sampleCount(), 0);
    // Nor the step axis at the last run's end.
    auto* steps = static_cast<QValueAxis*>(
        window.dashboard()->lossChart()->view()->chart()->axes(Qt::Horizontal).first());
    QVERIFY2(steps->max() <= 12.0, qPrintable(QString::number(steps->max())));
    QVERIFY2(axisMax(window.dashboard()->allocatorChart(), 0) <= 1.0,
             qPrintable(QString::number(axisMax(window.dashboard()->allocatorChart(), 0))));
  }

  // Item 3. A run stopped at step 44 and resumed from the runs page is one entry: its curve runs
  // from step 1 (the earlier steps from metrics.jsonl), the resume is one marker at step 44, the
  // toggles the resumed engine reports as its start state draw no lines, and the readings after
  // the resume continue from step 44 rather than from 0.
  void aResumedRunIsOneRunWithOneCurve() {
    const QString runs = home_.filePath(QStringLiteral("resume-runs"));
    const QString runDir = runs + QStringLiteral("/stopped");
    writeRun(runDir, 44, 44, 60);
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    window.setupPage()->setOutputDir(runs);
    window.pages()->setCurrentWidget(window.runsPage());
    window.runsPage()->selectRun(runDir);
    QTRY_VERIFY(window.runsPage()->resumeButton()->isEnabled());
    window.runsPage()->resumeButton()->click();
    QCOMPARE(lastStart(engine).runConfig["resume"].get<bool>(), true);
    // It starts from its own config.json, not from Setup's options: the dock claims no value.
    QCOMPARE(window.controls()->status(Toggle::MicroBatch), ControlsPanel::Status::NotReported);
    Dashboard* dashboard = window.dashboard();
    QCOMPARE(dashboard->runCount(), 1);
    QCOMPARE(dashboard->runName(0), QStringLiteral("stopped"));
    // The resumed engine, on a clock of its own: its start state, then steps 45 to 50.
    window.handleEvent({10, HelloEvent{kProtocolVersion, "test", "cpu", {}}});
    window.handleEvent({20, StateEvent{RunState::Starting, 44, ""}});
    for (Toggle t : {Toggle::MicroBatch, Toggle::Serialize, Toggle::GemmBackend}) {
      const nlohmann::json value = t == Toggle::MicroBatch  ? nlohmann::json(8)
                                   : t == Toggle::Serialize ? nlohmann::json(false)
                                                            : nlohmann::json("vendor");
      window.handleEvent({30, ToggleAppliedEvent{t, value, 44}});
      window.handleEvent({31, ToggleAppliedEvent{t, value, 44}});  // the profile's, again
    }
    window.handleEvent({40, StateEvent{RunState::Running, 44, ""}});
    window.handleEvent({50, reading(std::uint64_t{1} << 28)});
    for (int n = 45; n <= 50; ++n) {
      window.handleEvent({100 * (n - 44), step(n, 2.5)});
    }
    dashboard->refresh();
    QCOMPARE(dashboard->runCount(), 1);
    QCOMPARE(dashboard->runSelector()->count(), 1);
    QLineSeries* loss = dashboard->lossChart()->lineSeries(Dashboard::Loss);
    QCOMPARE(loss->count(), 50);
    QCOMPARE(loss->at(0).x(), 1.0);
    QCOMPARE(loss->at(49).x(), 50.0);
    int resumes = 0;
    for (const widgets::ChartMarker& m : dashboard->markers()) {
      QVERIFY2(m.kind != widgets::MarkerKind::Toggle, qPrintable(m.text));
      if (m.kind == widgets::MarkerKind::Resume) {
        ++resumes;
        QCOMPARE(m.x, 44.0);
        QVERIFY2(m.text.contains(QStringLiteral("step 44")), qPrintable(m.text));
      }
    }
    QCOMPARE(resumes, 1);
    QLineSeries* host = dashboard->memoryChart()->lineSeries(Dashboard::HostRss);
    QVERIFY(host->count() > 0);
    QVERIFY2(host->at(0).x() >= 44.0, qPrintable(QString::number(host->at(0).x())));
    // On the time axis the resumed steps follow the earlier ones.
    dashboard->setXAxis(Dashboard::XAxis::Time);
    QVERIFY(loss->at(44).x() > loss->at(43).x());
  }

  // Item 4. The engine's hello, state and log lines before any run make no selector entry; a run
  // that has reported nothing yet keeps the selector in view, so the other runs stay reachable.
  void eventsOutsideARunMakeNoEntryAndTheSelectorStays() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.show();
    prepare(window, engine);
    window.handleEvent({0, HelloEvent{kProtocolVersion, "test", "cpu", {}}});
    window.handleEvent({1, StateEvent{RunState::Idle, 0, ""}});
    window.handleEvent({2, LogEvent{LogLevel::Info, "engine ready"}});
    QCOMPARE(window.dashboard()->runCount(), 0);
    window.openRecording(testing::fixturePath(QStringLiteral("synthetic_cpu_run.jsonl")));
    QCOMPARE(window.dashboard()->runCount(), 1);
    window.startAction()->trigger();  // a run that has not reported yet
    QCOMPARE(window.dashboard()->runCount(), 2);
    window.pages()->setCurrentWidget(window.dashboard());
    QVERIFY(!window.dashboard()->showsCharts());
    QVERIFY(window.dashboard()->runSelector()->isVisible());
    window.dashboard()->showRun(0);
    QVERIFY(window.dashboard()->showsCharts());
    QVERIFY(window.dashboard()->runSelector()->isVisible());
  }

  // Item 7. After Stop the status bar says what the runs page says of the run.
  void afterStopTheStatusBarSaysWhatTheRunsPageSays() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    const QString runDir = home_.filePath(QStringLiteral("stop-runs/stopped"));
    window.setRunConfig({{"demo", true}, {"out", runDir.toStdString()}});
    window.startAction()->trigger();
    window.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    window.handleEvent({100, step(44, 2.0)});
    writeRun(runDir, 44, 44, 60);  // what the engine leaves when it stops
    window.stopAction()->trigger();
    QVERIFY(std::holds_alternative<StopCommand>(engine.sent.back()));
    window.handleEvent({200, CheckpointEvent{runDir.toStdString() + "/checkpoints/step-44", 44}});
    window.handleEvent({300, StateEvent{RunState::Finished, 44, "stopped by the user"}});
    const std::optional<app::RunSummary> run = app::readRunSummary(runDir);
    QVERIFY(run.has_value());
    QCOMPARE(app::statusText(*run), QStringLiteral("stopped · checkpoint at step 44"));
    QVERIFY2(statusBarText(window).contains(QStringLiteral("stopped · checkpoint at step 44")),
             qPrintable(statusBarText(window)));
    QVERIFY(!statusBarText(window).contains(QStringLiteral("finished")));
  }

  // Item 12. While a recording is shown the Controls dock shows its toggles, read only; the live
  // run's come back with the live run.
  void theDockShowsTheShownRecordingsToggles() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    prepare(window, engine);
    window.startAction()->trigger();
    window.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    window.handleEvent({1, ToggleAppliedEvent{Toggle::AllocatorPolicy, "caching", 0}});
    window.handleEvent({2, step(1, 2.0)});
    ControlsPanel* controls = window.controls();
    QVERIFY(controls->editor(Toggle::AllocatorPolicy)->isEnabled());
    QCOMPARE(window.openRecording(testing::fixturePath(QStringLiteral("h100_gpu_run.jsonl"))),
             QString());
    QCOMPARE(controls->appliedValue(Toggle::AllocatorPolicy)->dump(),
             nlohmann::json("arena").dump());
    QCOMPARE(controls->appliedValue(Toggle::MicroBatch)->dump(), nlohmann::json(8).dump());
    QVERIFY(!controls->editor(Toggle::AllocatorPolicy)->isEnabled());
    QVERIFY(controls->shownRecording().contains(QStringLiteral("h100_gpu_run.jsonl")));
    // The live run goes on meanwhile, into its own state.
    window.handleEvent({3, ToggleAppliedEvent{Toggle::Serialize, true, 1}});
    QCOMPARE(controls->appliedValue(Toggle::Serialize)->dump(),
             nlohmann::json(false).dump());  // recorded
    window.dashboard()->showRun(window.dashboard()->liveRun());
    QCOMPARE(controls->appliedValue(Toggle::AllocatorPolicy)->dump(),
             nlohmann::json("caching").dump());
    QCOMPARE(controls->appliedValue(Toggle::Serialize)->dump(), nlohmann::json(true).dump());
    QVERIFY(controls->editor(Toggle::AllocatorPolicy)->isEnabled());
    QVERIFY(controls->shownRecording().isEmpty());
  }

  // Before a run the Controls dock shows the micro-batch the run starts with, Setup's (the demo's
  // 8), not its spin box's minimum, and says it is Setup's, not the engine's; it follows Setup
  // until the engine reports, and then shows what the engine reported.
  void theDockShowsSetupsMicroBatchUntilTheEngineReports() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    prepare(window, engine);
    ControlsPanel* controls = window.controls();
    app::RunSetupPage* setup = window.setupPage();
    auto* dockBatch = qobject_cast<QSpinBox*>(controls->editor(Toggle::MicroBatch));
    QVERIFY(dockBatch != nullptr);
    QCOMPARE(setup->microBatchEditor()->value(), 8);
    QCOMPARE(dockBatch->value(), 8);
    QCOMPARE(controls->status(Toggle::MicroBatch), ControlsPanel::Status::Configured);
    QCOMPARE(controls->statusText(Toggle::MicroBatch), QStringLiteral("from Setup"));
    QVERIFY(!controls->appliedValue(Toggle::MicroBatch));
    setup->microBatchEditor()->setValue(6);
    QCOMPARE(dockBatch->value(), 6);
    for (const Command& sent : engine.sent) {
      QVERIFY(!std::holds_alternative<SetToggleCommand>(sent));  // shown, not sent
    }
    // The profile Setup shows sets its toggles over Setup's options when the run starts.
    auto* dockSerialize = qobject_cast<QCheckBox*>(controls->editor(Toggle::Serialize));
    QVERIFY(dockSerialize != nullptr);
    setup->setProfile(QStringLiteral("Debug: serialize + blocking"));
    QVERIFY(dockSerialize->isChecked());
    QCOMPARE(controls->statusText(Toggle::Serialize), QStringLiteral("from the profile"));
    QCOMPARE(controls->statusText(Toggle::MicroBatch), QStringLiteral("from Setup"));
    setup->setProfile(QStringLiteral("Balanced"));
    QVERIFY(!dockSerialize->isChecked());
    // auto: the engine chooses when the run starts, so the dock shows no value as Setup's.
    setup->microBatchEditor()->setValue(setup->microBatchEditor()->minimum());
    QCOMPARE(controls->status(Toggle::MicroBatch), ControlsPanel::Status::NotReported);
    setup->microBatchEditor()->setValue(6);
    // The run Start sends: Setup's value until the engine reports, then the engine's.
    window.startAction()->trigger();
    QCOMPARE(lastStart(engine).runConfig["options"]["batch-size"].get<std::string>(), "6");
    QCOMPARE(controls->status(Toggle::MicroBatch), ControlsPanel::Status::Configured);
    QCOMPARE(dockBatch->value(), 6);
    window.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    window.handleEvent({1, ToggleAppliedEvent{Toggle::MicroBatch, 3, 0}});
    QCOMPARE(controls->status(Toggle::MicroBatch), ControlsPanel::Status::Applied);
    QCOMPARE(controls->statusText(Toggle::MicroBatch), QStringLiteral("applied at step 0"));
    QCOMPARE(dockBatch->value(), 3);
    setup->microBatchEditor()->setValue(5);  // the next run's: the engine's value stays
    QCOMPARE(dockBatch->value(), 3);
  }

  // A rung the recovery ladder took in one run stays for the next (the supervisor starts it on
  // the rung): after Start, until the engine reports, the dock shows the rung's values as the
  // ladder's, the micro-batch half of Setup's, not Setup's own.
  void theNextRunsDockShowsTheRungTheLadderHolds() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    prepare(window, engine);
    ControlsPanel* controls = window.controls();
    auto* dockBatch = qobject_cast<QSpinBox*>(controls->editor(Toggle::MicroBatch));
    auto* dockSerialize = qobject_cast<QCheckBox*>(controls->editor(Toggle::Serialize));
    QVERIFY(dockBatch != nullptr && dockSerialize != nullptr);
    window.startAction()->trigger();
    window.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    window.handleEvent({10, step(3, 2.0)});
    window.handleEvent(
        {20, LadderEvent{"smaller_micro_batch", "vendor_blas", "out of memory", 3, 3}});
    window.handleEvent({30, ToggleAppliedEvent{Toggle::MicroBatch, 4, 3}});
    window.handleEvent({40, StateEvent{RunState::Finished, 5, "stopped by the user"}});

    window.startAction()->trigger();
    QCOMPARE(lastStart(engine).runConfig["options"]["batch-size"].get<std::string>(), "8");
    QVERIFY(dockSerialize->isChecked());
    QCOMPARE(controls->statusText(Toggle::Serialize), QStringLiteral("from the recovery ladder"));
    QCOMPARE(dockBatch->value(), 4);
    QCOMPARE(controls->statusText(Toggle::MicroBatch), QStringLiteral("from the recovery ladder"));
    QVERIFY(!controls->appliedValue(Toggle::MicroBatch));
  }

  // With Setup's micro-batch auto the engine picks it when the run starts: until it reports, the
  // dock's spin box shows no number (not its minimum, 1, which reads as the micro-batch) and sends
  // none; then it shows the engine's, 1 included.
  void anAutoMicroBatchShowsNoNumberUntilTheEngineReports() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    prepare(window, engine);
    ControlsPanel* controls = window.controls();
    QSpinBox* setupBatch = window.setupPage()->microBatchEditor();
    auto* dockBatch = qobject_cast<QSpinBox*>(controls->editor(Toggle::MicroBatch));
    setupBatch->setValue(setupBatch->minimum());  // auto
    QCOMPARE(dockBatch->text(), QStringLiteral("—"));
    QCOMPARE(controls->statusText(Toggle::MicroBatch), QStringLiteral("not reported yet"));
    window.startAction()->trigger();
    QCOMPARE(lastStart(engine).runConfig["options"]["batch-size"].get<std::string>(), "auto");
    QCOMPARE(dockBatch->text(), QStringLiteral("—"));
    dockBatch->stepDown();  // below the dash there is nothing to send
    window.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    window.handleEvent({1, ToggleAppliedEvent{Toggle::MicroBatch, 1, 0}});
    QCOMPARE(dockBatch->text(), QStringLiteral("1"));
    QCOMPARE(dockBatch->minimum(), 1);  // the real range again
    for (const Command& sent : engine.sent) {
      QVERIFY(!std::holds_alternative<SetToggleCommand>(sent));
    }
  }

  // Item 13: what a new user meets.
  void theSmallThingsANewUserMeets() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.show();
    // The profile in effect is shown before the first run.
    QVERIFY(window.profileBar()->button(QStringLiteral("Balanced"))->isChecked());
    prepare(window, engine);
    // "1 sequence", on the setup page and in the Controls dock.
    app::RunSetupPage* setup = window.setupPage();
    setup->microBatchEditor()->setValue(1);
    qobject_cast<QSpinBox*>(setup->editor("grad-accum"))->setValue(1);
    auto* setupBatch = setup->findChild<QLabel*>(QStringLiteral("setupEffectiveBatch"));
    QVERIFY(setupBatch != nullptr);
    QCOMPARE(setupBatch->text(), QStringLiteral("1 sequence per step"));
    window.startAction()->trigger();
    window.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    window.handleEvent({1, ToggleAppliedEvent{Toggle::MicroBatch, 1, 0}});
    StepEvent one = step(1, 2.0);
    one.microBatch = 1;
    window.handleEvent({10, one});
    QVERIFY2(window.controls()->effectiveBatchText().endsWith(QStringLiteral("= 1 sequence")),
             qPrintable(window.controls()->effectiveBatchText()));
    // The recovery ladder in plain words.
    QVERIFY2(!window.controls()->ladderText().contains(QStringLiteral("vendor_blas")),
             qPrintable(window.controls()->ladderText()));
    QVERIFY(window.controls()->ladderText().contains(QStringLiteral("nothing stepped down")));
    window.handleEvent({15, LadderEvent{"builtin_gemm", "vendor_blas", "a GPU error", 1, 1}});
    QVERIFY2(window.controls()->ladderText().contains(QStringLiteral("built-in GEMM")) &&
                 !window.controls()->ladderText().contains(QStringLiteral("builtin_gemm")),
             qPrintable(window.controls()->ladderText()));
    // A micro-batch change is a row in the log and a marker with a readable name.
    window.handleEvent({20, ToggleAppliedEvent{Toggle::MicroBatch, 2, 1}});
    window.handleEvent({21, ToggleAppliedEvent{Toggle::CpuFallback, true, 1}});
    QString logged;
    for (int row = 0; row < window.eventLog()->rowCount(); ++row) {
      logged +=
          window.eventLog()->index(row, widgets::EventLogModel::MessageColumn).data().toString() +
          QLatin1Char('\n');
    }
    QVERIFY2(logged.contains(QStringLiteral("micro-batch 1 → 2")), qPrintable(logged));
    QVERIFY2(!logged.contains(QStringLiteral("builtin_gemm")), qPrintable(logged));
    QStringList markers;
    for (const widgets::ChartMarker& m : window.dashboard()->markers()) {
      markers << m.text;
    }
    QVERIFY2(markers.join('\n').contains(QStringLiteral("micro-batch → 2")),
             qPrintable(markers.join('\n')));
    QVERIFY2(!markers.join('\n').contains(QStringLiteral("micro_batch")) &&
                 !markers.join('\n').contains(QStringLiteral("cpu_fallback")),
             qPrintable(markers.join('\n')));
    // The chart markers have a legend.
    auto* legend = window.dashboard()->findChild<QLabel*>(QStringLiteral("markerLegend"));
    QVERIFY(legend != nullptr);
    window.pages()->setCurrentWidget(window.dashboard());
    QVERIFY(legend->isVisible());
    for (const char* kind : {"toggle", "profile", "checkpoint", "resumed", "incident"}) {
      QVERIFY2(legend->text().contains(QLatin1String(kind)), kind);
    }
    // A refusal of the user's change does not outlive the run.
    window.controls()->requestToggle(Toggle::MicroBatch, 64);
    window.handleEvent({30, ToggleRefusedEvent{Toggle::MicroBatch, 64, "exceeds", 1}});
    QCOMPARE(window.controls()->status(Toggle::MicroBatch), ControlsPanel::Status::Refused);
    window.handleEvent({40, StateEvent{RunState::Finished, 1, ""}});
    QVERIFY(window.controls()->status(Toggle::MicroBatch) != ControlsPanel::Status::Refused);
    QVERIFY(!window.controls()->statusText(Toggle::MicroBatch).contains(QStringLiteral("refused")));
    // Created in local time, readable.
    const QString runs = home_.filePath(QStringLiteral("created-runs"));
    writeRun(runs + QStringLiteral("/one"), 1, 1, 1);
    window.runsPage()->setFolder(runs);
    QCOMPARE(window.runsPage()->table()->topLevelItemCount(), 1);
    const QString created = window.runsPage()->table()->topLevelItem(0)->text(7);
    const std::optional<app::RunSummary> run = app::readRunSummary(runs + QStringLiteral("/one"));
    QVERIFY(run && run->created.contains(QLatin1Char('T')));
    QVERIFY2(!created.contains(QLatin1Char('T')) && !created.endsWith(QLatin1Char('Z')),
             qPrintable(created));
    QCOMPARE(created, QDateTime::fromString(run->created, Qt::ISODateWithMs)
                          .toLocalTime()
                          .toString(QStringLiteral("yyyy-MM-dd HH:mm")));
    // Ctrl+Tab goes to the next page, Ctrl+Shift+Tab back.
    window.activateWindow();
    window.pages()->setCurrentIndex(0);
    QTest::keyClick(&window, Qt::Key_Tab, Qt::ControlModifier);
    QCOMPARE(window.pages()->currentIndex(), 1);
    QTest::keyClick(&window, Qt::Key_Backtab, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(window.pages()->currentIndex(), 0);
    // Help lists the shortcuts.
    QAction* shortcuts = nullptr;
    for (QAction* a : window.menuBar()->actions().at(3)->menu()->actions()) {
      shortcuts = a->text() == QStringLiteral("&Keyboard shortcuts") ? a : shortcuts;
    }
    QVERIFY(shortcuts != nullptr);
    QString listed;
    QTimer::singleShot(0, [&listed] {
      auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
      QVERIFY(dialog != nullptr);
      listed = dialog->findChild<QTextBrowser*>(QStringLiteral("shortcutsText"))->toPlainText();
      dialog->reject();
    });
    shortcuts->trigger();
    QVERIFY2(
        listed.contains(QStringLiteral("Run → Start")) &&
            listed.contains(window.startAction()->shortcut().toString(QKeySequence::NativeText)) &&
            listed.contains(QStringLiteral("Next page")) &&
            listed.contains(QStringLiteral("Ctrl+Shift+Tab")),
        qPrintable(listed));
  }
};

QTEST_MAIN(TestWindowRuns)
#include "test_window_runs.moc"
