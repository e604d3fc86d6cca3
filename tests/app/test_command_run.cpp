// test_command_run.cpp — the setup page's "Run a command": a real script (python3 printing tqdm
// bars, tests/external/scripts/print_format.py) started by one click on Start runs under the
// external supervisor, its losses reach the same dashboard as a training run's, and its fields are
// remembered for that command line; its folder is a run the Runs page lists with its curve, and
// Resume reruns a stopped one with its resume argument; a command that does not exist is a
// problem on the page and Start stays disabled; the model, dataset and estimate rows are hidden
// for a command. A command's run says what it does not report (tokens/s), starts with fresh axes
// and a fresh Controls dock, and the status bar says why the profile buttons are off while it
// runs; after it the window drives the trainer again. The epoch a Trainer's dicts give is shown
// on the loss chart and the Runs page.
#include <QtTest>

#include <QAbstractButton>
#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QValueAxis>

#include <QPushButton>
#include <QTabWidget>
#include <QTreeWidget>
#include <filesystem>
#include <fstream>

#include "../widgets/RecordedStream.h"
#include "TestPaths.h"
#include "external/SupervisedRun.h"
#include "gui/CommandSetup.h"
#include "gui/MainWindow.h"
#include "gui/RunSetupPage.h"
#include "gui/RunsPage.h"
#include "runs/RunFolder.h"  // defines: kMetricsFile
#include "runs/StepRecord.h"
#include "train/RunDirectory.h"
#include "widgets/ControlsPanel.h"
#include "widgets/Dashboard.h"
#include "widgets/DisplayText.h"  // defines: toPath
#include "widgets/LengthHistogram.h"
#include "widgets/ProfileBar.h"
#include "widgets/TimeChart.h"

using namespace lorascope;

namespace {

// Setup → Run a command: print_format.py FORMAT under `python`, read with --parser FORMAT; Start.
void startPrintFormat(app::MainWindow& window, const QString& python, const QString& format) {
  app::RunSetupPage* setup = window.setupPage();
  setup->setCommandMode(true);
  setup->commandSetup()->commandEdit()->setText(
      python + " " +
      QString::fromStdString(lstest::sourcePath("tests/external/scripts/print_format.py")) + " " +
      format);
  setup->commandSetup()->parserEdit()->setCurrentText(format);
  QTRY_VERIFY(window.startAction()->isEnabled());
  window.startAction()->trigger();
}

}  // namespace

class TestCommandRun : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir home_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    qputenv("XDG_CONFIG_HOME", home_.filePath(QStringLiteral("config")).toUtf8());
    qputenv("XDG_DATA_HOME", home_.filePath(QStringLiteral("data")).toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("LoRAscopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_command_run"));
    QSettings().clear();
  }

  void aCommandRunsOnTheDashboardAndIsRemembered() {
    const QString python = QStandardPaths::findExecutable(QStringLiteral("python3"));
    if (python.isEmpty())
      QSKIP("needs python3");
    const QString line =
        python + " " +
        QString::fromStdString(lstest::sourcePath("tests/external/scripts/print_format.py")) +
        " tqdm";
    {
      app::MainWindow window(widgets::AboutFacts{});
      app::RunSetupPage* setup = window.setupPage();
      setup->setCommandMode(true);
      app::CommandSetup* command = setup->commandSetup();
      command->commandEdit()->setText(QStringLiteral("no-such-trainer-xyz"));
      QVERIFY(setup->problems().join(' ').contains("no-such-trainer-xyz is not an executable"));
      QVERIFY(!window.startAction()->isEnabled());
      command->commandEdit()->setText(line);
      command->parserEdit()->setCurrentText(QStringLiteral("tqdm"));
      command->hangEdit()->setValue(120);
      QTRY_VERIFY(window.startAction()->isEnabled());
      window.startAction()->trigger();
      QVERIFY(window.runFolder().contains(QStringLiteral("command-")));
      QTRY_COMPARE_WITH_TIMEOUT(window.dashboard()->lossChart()->decimator(0).sampleCount(),
                                std::size_t{5}, 60'000);
      QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), 60'000);  // it finished
      QVERIFY(QFile::exists(window.runFolder() + "/command.log"));

      // A supervised run is a run: listed on the Runs page with its status, steps and last loss,
      // its curve back from metrics.jsonl by Show charts.
      const QString runDir = window.runFolder();
      app::RunsPage* runs = window.runsPage();
      window.pages()->setCurrentWidget(runs);
      runs->refresh();
      runs->selectRun(runDir);
      const app::RunSummary* listed = runs->selectedRun();
      QVERIFY(listed != nullptr);
      QVERIFY(listed->supervised);
      QCOMPARE(listed->status, app::RunSummary::Status::Finished);
      QCOMPARE(listed->steps, std::int64_t{5});
      QCOMPARE(*listed->lastLoss, 2.1);
      QCOMPARE(listed->incidents, 0);
      QVERIFY(listed->commandLine.contains(QStringLiteral("print_format.py tqdm")));
      QCOMPARE(app::statusText(*listed), QStringLiteral("finished"));
      const int runsBefore = window.dashboard()->runCount();
      runs->openButton()->click();
      QCOMPARE(window.dashboard()->runCount(), runsBefore + 1);
      window.dashboard()->refresh();
      QCOMPARE(window.dashboard()->lossChart()->decimator(0).sampleCount(), std::size_t{5});
    }
    // The next start of the app comes back to the command, with its fields.
    app::MainWindow window(widgets::AboutFacts{});
    QVERIFY(window.setupPage()->usesCommand());
    app::CommandSetup* command = window.setupPage()->commandSetup();
    QCOMPARE(command->commandLine(), line);
    QCOMPARE(command->parserEdit()->currentText(), QStringLiteral("tqdm"));
    QCOMPARE(command->hangEdit()->value(), 120);
    // Another command line starts from the fields as they are; the known one restores them.
    command->parserEdit()->setCurrentText(QStringLiteral("hf"));
    command->restore(line);
    QCOMPARE(command->parserEdit()->currentText(), QStringLiteral("tqdm"));
  }

  // Item 6 of issue 27.
  void aCommandRunSaysWhatItDoesNotReport() {
    const QString python = QStandardPaths::findExecutable(QStringLiteral("python3"));
    if (python.isEmpty())
      QSKIP("needs python3");
    app::MainWindow window(widgets::AboutFacts{});
    testing::RecordingEngineClient trainer;
    window.setEngine(&trainer);
    trainer.setConnected(true);
    // The trainer's run before: a toggle applied, a GPU's allocator readings (40 GiB).
    using namespace lorascope::engine;
    window.handleEvent({0, ToggleAppliedEvent{Toggle::GemmBackend, "builtin", 0}});
    MemoryEvent gpu;
    gpu.largestFreeBytes = std::uint64_t{40} << 30;
    window.handleEvent({10, gpu});
    window.dashboard()->refresh();
    QCOMPARE(window.controls()->status(Toggle::GemmBackend),
             widgets::ControlsPanel::Status::Applied);
    startPrintFormat(window, python, QStringLiteral("tqdm"));
    QTRY_VERIFY_WITH_TIMEOUT(window.dashboard()->lossChart()->decimator(0).sampleCount() >= 1,
                             60'000);
    window.dashboard()->refresh();
    QCOMPARE(window.dashboard()->runName(window.dashboard()->shownRun()),
             QFileInfo(window.runFolder()).fileName());  // "command-<date>-<time>"
    // tqdm bars carry no tokens/s: "not reported", not a 0 on a 0–1e-9 axis.
    widgets::TimeChart* throughput = window.dashboard()->throughputChart();
    QCOMPARE(throughput->valueText(widgets::Dashboard::TokensPerS),
             QStringLiteral("real tokens/s over the step cycle not reported"));
    QCOMPARE(throughput->lineSeries(widgets::Dashboard::TokensPerS)->count(), 0);
    QCOMPARE(throughput->valueText(widgets::Dashboard::GradNorm),
             QStringLiteral("grad norm not reported"));
    // Fresh axes and a fresh dock: nothing of the trainer's run before.
    for (QAbstractAxis* axis :
         window.dashboard()->allocatorChart()->lineSeries(0)->attachedAxes()) {
      if (axis->orientation() == Qt::Vertical) {
        QVERIFY(static_cast<QValueAxis*>(axis)->max() <= 1.0);
      }
    }
    QCOMPARE(window.controls()->status(Toggle::GemmBackend),
             widgets::ControlsPanel::Status::NotReported);
    // While it runs the profile buttons are off, and the status bar says why.
    auto statusText = [&window] {
      QStringList texts;
      for (QLabel* label : window.statusBar()->findChildren<QLabel*>()) {
        texts << label->text();
      }
      return texts.join(QStringLiteral(" | "));
    };
    if (!window.startAction()->isEnabled()) {  // still running (it prints for a few seconds)
      QVERIFY(!window.profileBar()->button(QStringLiteral("Balanced"))->isEnabled());
      QVERIFY2(statusText().contains(QStringLiteral("supervised command")),
               qPrintable(statusText()));
    }
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), 60'000);  // it finished
    // After it the window drives the trainer again: the buttons are on, no "no engine".
    QTRY_VERIFY(window.profileBar()->button(QStringLiteral("Balanced"))->isEnabled());
    QVERIFY2(!statusText().contains(QStringLiteral("no engine")), qPrintable(statusText()));
  }

  // Item "grad_norm and epoch shown when parsed" of issue 27: a Trainer's log dicts carry
  // 'epoch' (print_format.py hf prints 0.20 … 1.00, one fifth an epoch a step): the epoch goes
  // through the step record (metrics.jsonl) to the loss chart's legend and the Runs page.
  void aCommandRunShowsTheEpochItsOutputGives() {
    const QString python = QStandardPaths::findExecutable(QStringLiteral("python3"));
    if (python.isEmpty())
      QSKIP("needs python3");
    app::MainWindow window(widgets::AboutFacts{});
    startPrintFormat(window, python, QStringLiteral("hf"));
    QTRY_COMPARE_WITH_TIMEOUT(window.dashboard()->lossChart()->decimator(0).sampleCount(),
                              std::size_t{5}, 60'000);
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), 60'000);  // it finished
    window.dashboard()->refresh();
    widgets::TimeChart* loss = window.dashboard()->lossChart();
    QCOMPARE(loss->note(), QStringLiteral("epoch 1"));  // the last dict's 'epoch': 1.00
    QVERIFY2(loss->legendText().endsWith(QStringLiteral("epoch 1")),
             qPrintable(loss->legendText()));
    QCOMPARE(loss->valueText(widgets::Dashboard::Loss), QStringLiteral("loss 2.1000"));
    // In the run's metrics.jsonl: a fractional epoch as the dict gave it.
    const QString runDir = window.runFolder();
    const std::vector<runs::StepRecord> records =
        runs::readStepRecords(widgets::toPath(runDir) / runs::kMetricsFile);
    QCOMPARE(records.size(), std::size_t{5});
    QCOMPARE(records[1].epoch.value_or(-1.0), 0.4);
    // The Runs page: its steps with the last one's epoch.
    app::RunsPage* runs = window.runsPage();
    runs->refresh();
    runs->selectRun(runDir);
    QTreeWidgetItem* row = runs->table()->currentItem();
    QVERIFY(row != nullptr);
    int stepsColumn = -1;
    for (int c = 0; c < runs->table()->columnCount(); ++c) {
      if (runs->table()->headerItem()->text(c) == QStringLiteral("Steps"))
        stepsColumn = c;
    }
    QCOMPARE(row->text(stepsColumn), QStringLiteral("5 · epoch 1"));
    // Show charts: the curve back from metrics.jsonl, with its epoch.
    runs->openButton()->click();
    window.dashboard()->refresh();
    QCOMPARE(window.dashboard()->epochText(), QStringLiteral("epoch 1"));
    // A command whose output gives no epoch (tqdm bars) shows none.
    startPrintFormat(window, python, QStringLiteral("tqdm"));
    QTRY_VERIFY_WITH_TIMEOUT(window.dashboard()->lossChart()->decimator(0).sampleCount() >= 1,
                             60'000);
    window.dashboard()->refresh();
    QCOMPARE(loss->note(), QString());
    QTRY_VERIFY_WITH_TIMEOUT(window.startAction()->isEnabled(), 60'000);
  }

  // Resume on a supervised run that stopped: the command again in the same folder, its first
  // attempt with the resume argument at the newest checkpoint; the steps go on from the last one.
  void resumeRerunsTheCommandWithTheResumeArgument() {
    const QString python = QStandardPaths::findExecutable(QStringLiteral("python3"));
    if (python.isEmpty())
      QSKIP("needs python3");
    QTemporaryDir folder;
    const QString runDir = folder.filePath(QStringLiteral("runs/command-stopped"));
    const std::filesystem::path dir = widgets::toPath(runDir);
    std::filesystem::create_directories(dir);
    std::filesystem::create_directories(widgets::toPath(folder.filePath("ck/checkpoint-3")));
    external::SupervisedCommand command;
    command.program = python.toStdString();
    command.arguments = {lstest::sourcePath("tests/external/scripts/print_format.py"), "hf"};
    command.resumeArgument = "--resume {checkpoint_dir}";
    command.checkpointGlob = folder.filePath("ck/checkpoint-*").toStdString();
    std::ofstream(dir / "config.json")
        << external::supervisedRunConfig(command, "Balanced", "2026-01-01T00:00:00Z").dump();
    std::ofstream metrics(dir / "metrics.jsonl");
    for (int step = 1; step <= 3; ++step) {
      train::StepMetrics m;
      m.step = step;
      m.loss = 3.0 - 0.1 * step;
      metrics << runs::toJson(m).dump() << "\n";
    }
    metrics.close();
    std::ofstream(dir / "events.jsonl")
        << engine::encodeEvent({0, engine::IncidentEvent{"the command was killed by SIGSEGV",
                                                         "gave up after 0 restarts", 3}})
        << "\n"
        << engine::encodeEvent({0, engine::StateEvent{engine::RunState::Failed, 3, "x"}}) << "\n";

    app::MainWindow window(widgets::AboutFacts{});
    app::RunsPage* runs = window.runsPage();
    runs->setFolder(folder.filePath(QStringLiteral("runs")));
    runs->refresh();
    runs->selectRun(runDir);
    const app::RunSummary* listed = runs->selectedRun();
    QVERIFY(listed != nullptr);
    QCOMPARE(listed->status, app::RunSummary::Status::Resumable);
    QCOMPARE(listed->checkpointStep, std::int64_t{3});
    QCOMPARE(app::statusText(*listed),
             QStringLiteral("failed · checkpoint at step 3 · 1 incident"));
    runs->setCanResume(true);
    QVERIFY(runs->resumeButton()->isEnabled());
    runs->resumeButton()->click();
    QCOMPARE(window.runFolder(), runDir);
    QTRY_VERIFY_WITH_TIMEOUT(
        app::readRunSummary(runDir)->status == app::RunSummary::Status::Finished, 60'000);
    std::ifstream events(dir / "events.jsonl");
    const std::string text((std::istreambuf_iterator<char>(events)), {});
    QVERIFY(text.find("print_format.py hf --resume " +
                      folder.filePath("ck/checkpoint-3").toStdString()) != std::string::npos);
    // Its five dicts after checkpoint-3 are steps 4 to 8: the run's metrics go 1 to 8.
    const std::vector<engine::TimedEvent> steps = app::metricsAsEvents(runDir);
    QCOMPARE(steps.size(), std::size_t{8});
    for (std::size_t i = 0; i < steps.size(); ++i)
      QCOMPARE(std::get<engine::StepEvent>(steps[i].event).step, static_cast<std::int64_t>(i + 1));
  }

  // A command brings its own model and data: the page hides the model, dataset, token lengths
  // and memory estimate rows (they showed the demo's), and shows them again for a training run.
  void aCommandHidesTheModelDatasetAndEstimateRows() {
    app::RunSetupPage page;
    page.setDemo(true);
    const auto* info = page.findChild<QLabel*>(QStringLiteral("modelInfo"));
    const auto* estimate = page.findChild<QLabel*>(QStringLiteral("memoryEstimate"));
    QVERIFY(info && estimate);
    QVERIFY(!info->isHidden() && !estimate->isHidden());
    page.setCommandMode(true);
    QVERIFY(info->isHidden());
    QVERIFY(estimate->isHidden());
    QVERIFY(page.histogram()->isHidden());
    page.setDemo(true);
    QVERIFY(!info->isHidden() && !estimate->isHidden() && !page.histogram()->isHidden());
  }
};

QTEST_MAIN(TestCommandRun)
#include "test_command_run.moc"
