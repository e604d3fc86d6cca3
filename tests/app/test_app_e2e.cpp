// test_app_e2e.cpp — the window trains the built-in demo on the CPU, end to end, once through the
// in-process host and once through the isolated host (lorascope-train built beside): the setup
// page inspects the demo model and validates its dataset, one click on Start trains, loss points
// reach the dashboard, a live toggle round-trips (the engine confirms it), Stop writes a
// checkpoint in the run folder, and (isolated) the adapter exports through `lorascope-train
// export`. Small steps keep each run to seconds on 2 cores. A clean demo run with every page
// visited logs no error and marks no incident: the app sends nothing it knows will be refused, and
// a toggle the engine refuses shows its reason and reverts. A stopped run is resumed from the runs
// list, and a taken run name offers resume or a new name. A SIGKILL of the supervised engine is a
// kill, not a step down the ladder.
#include <QtTest>

#include <signal.h>

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QLineEdit>
#include <QLineSeries>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>

#include "AppTestHome.h"
#include "TestPaths.h"
#include "engine/InProcessHost.h"
#include "engine/IsolatedHost.h"
#include "engine/SupervisorHost.h"
#include "gui/EngineAdapter.h"
#include "gui/MainWindow.h"
#include "gui/RunExporter.h"
#include "gui/RunSetupPage.h"
#include "gui/RunsPage.h"
#include "job/EngineJob.h"  // defines: createTrainingJob
#include "profiles/Builtins.h"
#include "widgets/ControlsPanel.h"
#include "widgets/Dashboard.h"
#include "widgets/EventLogModel.h"
#include "widgets/LengthHistogram.h"
#include "widgets/TimeChart.h"

using namespace lorascope;
using namespace lorascope::engine;

namespace {

// Trains for long enough to toggle and stop (the run never reaches its step limit).
constexpr int kStepLimit = 10'000;
constexpr int kTimeoutMs = 120'000;  // a loaded 2-core CI machine

// Clicks the button whose text contains `button` in the next message box `prompt` to open.
void answerPrompt(const QString& prompt, const QString& button) {
  QTimer::singleShot(0, [prompt, button] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    QVERIFY(box != nullptr);
    QCOMPARE(box->objectName(), prompt);
    for (QAbstractButton* b : box->buttons()) {
      if (b->text().contains(button)) {
        QVERIFY2(b->isEnabled(), qPrintable(b->text()));
        b->click();
        return;
      }
    }
    QFAIL(qPrintable(QStringLiteral("no button ") + button));
  });
}

}  // namespace

class TestAppEndToEnd : public QObject {
  Q_OBJECT

 private:
  // The demo model and dataset are written here too, not into the user's cache.
  lstest::AppTestHome home_{QStringLiteral("test_app_e2e")};

  // Drives the window from the setup page to a stopped run with a checkpoint in the run folder.
  void trainAndStop(app::MainWindow& window, widgets::EngineClient& host) {
    window.setEngineProgram(
        QString::fromStdString(lstest::trainProgram()));  // the demo's files (`demo`)
    window.setEngine(&host);
    app::RunSetupPage* setup = window.setupPage();
    QVERIFY(setup->usesDemo());  // preselected on first start
    QTRY_VERIFY_WITH_TIMEOUT(!setup->isBusy(), kTimeoutMs);
    QVERIFY(setup->inspection().config.has_value());
    QVERIFY(setup->modelSummary().contains("llama"));
    QVERIFY(setup->validation().report.has_value());
    QVERIFY(!setup->histogram()->bins().empty());  // token lengths known
    QVERIFY(!setup->memoryEstimateText().isEmpty());
    // "Base weights" (--quantize) reaches the estimate: nf4 shrinks the weights, then back.
    auto* baseWeights = qobject_cast<QComboBox*>(setup->editor("quantize"));
    QVERIFY(baseWeights != nullptr);
    const QString unquantized = setup->memoryEstimateText();
    baseWeights->setCurrentIndex(baseWeights->findData(QStringLiteral("nf4")));
    QVERIFY2(setup->memoryEstimateText().contains(QStringLiteral("4-bit base weights")),
             qPrintable(setup->memoryEstimateText()));
    QVERIFY(setup->memoryEstimateText() != unquantized);
    baseWeights->setCurrentIndex(baseWeights->findData(QStringLiteral("none")));
    setup->setOutputDir(home_.filePath(QStringLiteral("runs")));
    setup->maxStepsEditor()->setValue(kStepLimit);
    setup->microBatchEditor()->setValue(2);
    setup->seqLenEditor()->setValue(64);
    setup->checkpointEveryEditor()->setValue(0);

    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);  // engine is up
    window.startAction()->trigger();
    const QString runFolder = window.runFolder();
    QVERIFY(runFolder.startsWith(home_.filePath(QStringLiteral("runs/demo-"))));

    QTRY_VERIFY_WITH_TIMEOUT(window.dashboard()->lossChart()->decimator(0).sampleCount() >= 3,
                             kTimeoutMs);
    // A live toggle round-trips: pending until the engine confirms it.
    window.controls()->requestToggle(Toggle::MicroBatch, 1);
    QTRY_COMPARE_WITH_TIMEOUT(window.controls()->status(Toggle::MicroBatch),
                              widgets::ControlsPanel::Status::Applied, kTimeoutMs);

    QTRY_VERIFY_WITH_TIMEOUT(window.stopAction()->isEnabled(), kTimeoutMs);
    window.stopAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.exportAdapterAction()->isEnabled(), kTimeoutMs);
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);  // run over
    const QStringList checkpoints = QDir(runFolder + QStringLiteral("/checkpoints"))
                                        .entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QVERIFY2(!checkpoints.isEmpty(), qPrintable(runFolder));
  }

  // Shows the window and starts a small demo run that will not end by itself; returns once
  // `steps` steps reached the dashboard.
  void startDemoRun(app::MainWindow& window, widgets::EngineClient& host, int steps) {
    window.show();
    window.setEngineProgram(
        QString::fromStdString(lstest::trainProgram()));  // the demo's files (`demo`)
    window.setEngine(&host);
    app::RunSetupPage* setup = window.setupPage();
    QTRY_VERIFY_WITH_TIMEOUT(!setup->isBusy(), kTimeoutMs);
    setup->setOutputDir(home_.filePath(QStringLiteral("runs")));
    setup->maxStepsEditor()->setValue(kStepLimit);
    setup->microBatchEditor()->setValue(2);
    setup->seqLenEditor()->setValue(64);
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);
    window.startAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.dashboard()->lossChart()->decimator(0).sampleCount() >= steps,
                             kTimeoutMs);
  }

 private slots:
  void init() { QSettings().clear(); }  // each test is a first start

  void inProcessHostTrainsTheDemo() {
    app::EngineAdapter host([](HostListener listener) {
      return std::make_unique<InProcessHost>(job::createTrainingJob,
                                             HelloEvent{kProtocolVersion, "test", "cpu", {}},
                                             std::move(listener));
    });
    app::MainWindow window(app::collectAboutFacts());
    trainAndStop(window, host);
  }

  void aCleanDemoRunLogsNoErrorOnAnyPage() {
    app::EngineAdapter host([](HostListener listener) {
      return std::make_unique<InProcessHost>(job::createTrainingJob,
                                             HelloEvent{kProtocolVersion, "test", "cpu", {}},
                                             std::move(listener));
    });
    app::MainWindow window(app::collectAboutFacts());
    window.resize(1280, 800);
    startDemoRun(window, host, 2);
    if (QTest::currentTestFailed()) {
      return;
    }
    // Every page, each long enough for its timers (the memory map asks every 2 s while shown).
    for (int page = 0; page < window.pages()->count(); ++page) {
      window.pages()->setCurrentIndex(page);
      QTest::qWait(2500);
    }
    // A toggle the engine refuses (a micro-batch over the effective batch of 2): the reason is
    // shown, the editor goes back, and it is not an error.
    auto* microBatch = qobject_cast<QSpinBox*>(window.controls()->editor(Toggle::MicroBatch));
    QVERIFY(microBatch != nullptr);
    microBatch->setValue(64);
    QTRY_COMPARE_WITH_TIMEOUT(window.controls()->status(Toggle::MicroBatch),
                              widgets::ControlsPanel::Status::Refused, kTimeoutMs);
    QVERIFY2(window.controls()->statusText(Toggle::MicroBatch).contains("exceeds"),
             qPrintable(window.controls()->statusText(Toggle::MicroBatch)));
    QCOMPARE(microBatch->value(), 2);
    // The GPU's settings are not applicable on this CPU run: disabled, not "applied".
    QCOMPARE(window.controls()->status(Toggle::Serialize),
             widgets::ControlsPanel::Status::NotApplicable);
    QVERIFY(!window.controls()->editor(Toggle::Serialize)->isEnabled());
    window.stopAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);
    const widgets::EventLogModel* log = window.eventLog();
    for (int row = 0; row < log->rowCount(); ++row) {
      const QModelIndex index = log->index(row, widgets::EventLogModel::MessageColumn);
      QVERIFY2(
          index.data(widgets::EventLogModel::SeverityRole).toInt() < widgets::EventLogModel::Error,
          qPrintable(index.data().toString()));
    }
    for (const widgets::ChartMarker& marker : window.dashboard()->markers()) {
      QVERIFY2(marker.kind != widgets::MarkerKind::Incident, qPrintable(marker.text));
    }
  }

  // Quitting mid-run asks: Cancel keeps the window and the run; "stop with a checkpoint and
  // quit" stops the run, and the window closes once the checkpoint is written.
  void quittingMidRunAsks() {
    app::EngineAdapter host([](HostListener listener) {
      return std::make_unique<InProcessHost>(job::createTrainingJob,
                                             HelloEvent{kProtocolVersion, "test", "cpu", {}},
                                             std::move(listener));
    });
    app::MainWindow window(app::collectAboutFacts());
    startDemoRun(window, host, 1);
    if (QTest::currentTestFailed()) {
      return;
    }
    auto answer = [](const QString& button) { answerPrompt(QStringLiteral("quitPrompt"), button); };
    answer(QStringLiteral("Cancel"));
    QVERIFY(!window.close());
    QVERIFY(window.isVisible());
    QVERIFY(window.stopAction()->isEnabled());  // still running
    answer(QStringLiteral("Stop with a checkpoint"));
    QVERIFY(!window.close());  // not yet: the engine is stopping
    QTRY_VERIFY_WITH_TIMEOUT(!window.isVisible(), kTimeoutMs);
    const QStringList checkpoints = QDir(window.runFolder() + QStringLiteral("/checkpoints"))
                                        .entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    QVERIFY(!checkpoints.isEmpty());
  }

  // A stopped run is listed on the runs page with its checkpoint and resumed from there by a
  // click; its curves open from its folder; starting under its name again offers resume or a new
  // name instead of failing.
  void aRunIsResumedFromTheRunsList() {
    app::EngineAdapter host([](HostListener listener) {
      return std::make_unique<InProcessHost>(job::createTrainingJob,
                                             HelloEvent{kProtocolVersion, "test", "cpu", {}},
                                             std::move(listener));
    });
    app::MainWindow window(app::collectAboutFacts());
    window.setupPage()->runNameEditor()->setText(QStringLiteral("resumable"));
    startDemoRun(window, host, 2);
    if (QTest::currentTestFailed()) {
      return;
    }
    const QString runDir = home_.filePath(QStringLiteral("runs/resumable"));
    QCOMPARE(window.runFolder(), runDir);
    window.stopAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);

    app::RunsPage* runs = window.runsPage();
    window.pages()->setCurrentWidget(runs);  // showing the page reads the folder again
    QCOMPARE(runs->folder(), home_.filePath(QStringLiteral("runs")));
    QCOMPARE(runs->table()->topLevelItemCount(), 1);
    runs->selectRun(runDir);
    const app::RunSummary* listed = runs->selectedRun();
    QVERIFY(listed != nullptr);
    QCOMPARE(listed->status, app::RunSummary::Status::Resumable);
    const std::int64_t stoppedAt = listed->checkpointStep;
    QVERIFY(stoppedAt >= 2);
    QCOMPARE(listed->steps, stoppedAt);
    QVERIFY(listed->lastLoss.has_value());
    QCOMPARE(listed->device, QStringLiteral("cpu"));

    // Its curves from metrics.jsonl: one loss point per step, in a run of their own.
    const int runsBefore = window.dashboard()->runCount();
    runs->openButton()->click();
    QCOMPARE(window.dashboard()->runCount(), runsBefore + 1);
    QCOMPARE(window.dashboard()->runName(window.dashboard()->shownRun()),
             QStringLiteral("resumable (saved)"));
    window.dashboard()->refresh();
    QCOMPARE(window.dashboard()->lossChart()->decimator(0).sampleCount(),
             static_cast<int>(stoppedAt));

    // Resume: the run continues from its checkpoint in the same folder.
    window.pages()->setCurrentWidget(runs);
    runs->selectRun(runDir);
    QVERIFY(runs->resumeButton()->isEnabled());
    runs->resumeButton()->click();
    QCOMPARE(window.runFolder(), runDir);
    QTRY_VERIFY_WITH_TIMEOUT(window.stopAction()->isEnabled(), kTimeoutMs);
    // One run on the dashboard: the resumed steps join the curve of the steps before.
    QCOMPARE(window.dashboard()->runName(window.dashboard()->shownRun()),
             QStringLiteral("resumable"));
    QTRY_VERIFY_WITH_TIMEOUT(
        window.dashboard()->lossChart()->decimator(0).sampleCount() > stoppedAt, kTimeoutMs);
    window.stopAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);
    const std::optional<app::RunSummary> resumed = app::readRunSummary(runDir);
    QVERIFY(resumed.has_value());
    QVERIFY2(resumed->steps > stoppedAt, qPrintable(QString::number(resumed->steps)));
    const std::vector<TimedEvent> steps = app::metricsAsEvents(runDir);
    for (std::size_t i = 0; i < steps.size(); ++i) {  // no step lost or repeated
      QCOMPARE(std::get<StepEvent>(steps[i].event).step, static_cast<std::int64_t>(i + 1));
    }

    // The same name again: the prompt offers a new name, and the run starts there.
    answerPrompt(QStringLiteral("existingRunPrompt"), QStringLiteral("Start as resumable-2"));
    window.startAction()->trigger();
    QCOMPARE(window.runFolder(), runDir + QStringLiteral("-2"));
    QTRY_VERIFY_WITH_TIMEOUT(window.stopAction()->isEnabled(), kTimeoutMs);
    window.stopAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);
    QVERIFY(QFileInfo::exists(runDir + QStringLiteral("-2/config.json")));
  }

  // The supervised engine (as the app runs it) SIGKILLed from outside mid-run: the incident says
  // it was killed (not a GPU error), the ladder stays on its rung with nothing to undo, and the
  // run goes on from its last completed step.
  void aKilledEngineIsAKillNotAStepDown() {
    app::EngineAdapter host([](HostListener listener) {
      return std::make_unique<SupervisorHost>(lstest::trainProgram(), profiles::defaultProfile(),
                                              SupervisorPolicy{}, std::move(listener));
    });
    app::MainWindow window(app::collectAboutFacts());
    startDemoRun(window, host, 2);
    if (QTest::currentTestFailed()) {
      return;
    }
    const auto& supervisor = host.host<SupervisorHost>();
    const std::int64_t pid = supervisor.engineProcessId();
    QVERIFY(pid > 0);
    QCOMPARE(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
    QTRY_COMPARE_WITH_TIMEOUT(supervisor.restarts(), 1, kTimeoutMs);
    const int stepsBefore = window.dashboard()->lossChart()->decimator(0).sampleCount();
    QTRY_VERIFY_WITH_TIMEOUT(
        window.dashboard()->lossChart()->decimator(0).sampleCount() > stepsBefore, kTimeoutMs);
    QCOMPARE(supervisor.rung(), runtime::RecoveryRung::VendorBlas);
    QVERIFY(!window.controls()->canUndoRung());
    QVERIFY2(window.controls()->ladderText().contains("nothing stepped down"),
             qPrintable(window.controls()->ladderText()));
    const widgets::EventLogModel* log = window.eventLog();
    QString incident;
    for (int row = 0; row < log->rowCount(); ++row) {
      const QModelIndex index = log->index(row, widgets::EventLogModel::MessageColumn);
      if (index.data(widgets::EventLogModel::SeverityRole).toInt() ==
          widgets::EventLogModel::Incident) {
        incident = index.data().toString();
      }
    }
    QVERIFY2(incident.contains("(SIGKILL)") && incident.contains("(killed)") &&
                 incident.contains("same rung vendor_blas") &&
                 !incident.contains("unrecognised GPU error"),
             qPrintable(incident));
    window.stopAction()->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), kTimeoutMs);
  }

  void isolatedHostTrainsAndExportsTheDemo() {
    app::EngineAdapter host([](HostListener listener) {
      auto isolated = std::make_unique<IsolatedHost>(
          lstest::trainProgram(), std::map<std::string, std::string>{}, std::move(listener));
      isolated->start();
      return isolated;
    });
    app::MainWindow window(app::collectAboutFacts());
    window.setEngineProgram(QString::fromStdString(lstest::trainProgram()));
    trainAndStop(window, host);
    if (QTest::currentTestFailed()) {
      return;
    }

    QSignalSpy exported(window.exporter(), &app::RunExporter::finished);
    const QString adapter = home_.filePath(QStringLiteral("adapter"));
    window.exportRun(false, adapter);
    QVERIFY(exported.wait(kTimeoutMs));
    QVERIFY2(exported.at(0).at(0).toBool(), qPrintable(exported.at(0).at(1).toString()));
    QVERIFY(QFileInfo::exists(adapter + QStringLiteral("/adapter_model.safetensors")));
    QVERIFY(QFileInfo::exists(adapter + QStringLiteral("/adapter_config.json")));
  }
};

QTEST_MAIN(TestAppEndToEnd)
#include "test_app_e2e.moc"
