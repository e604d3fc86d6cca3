// take_screenshots.cpp — renders the window into the README's PNGs (run by
// scripts/screenshots.sh): the setup page as a first start shows it (the demo inspected and
// validated, scrolled to its token-length histogram), the runs page after real steps of the demo
// trained on the CPU through the in-process host, that run resumed from the runs page on the
// dashboard (one curve from step 1, the resume marked), and the dashboard and memory map replaying
// RECORDING, an event stream recorded on a GPU (tests/widgets/fixtures/h100_gpu_run.jsonl,
// scripts/gpu-check.sh record), opened as the runs page's "Open recording…" opens it.
//
// Also: that run's dashboard in a 1024×700 window, and HANG_RECORDING (the same run recorded with
// an injected hang, tests/widgets/fixtures/h200_gpu_hang.jsonl) replayed: its incident banner.
// With TRAINER (the lorascope-train program): `TRAINER train --demo` run as a supervised command
// from the setup page's "Run a command", and the runs page listing it. With GROUP_RECORDING (a run
// on two GPUs, tests/widgets/fixtures/h200x2_gpu_run.jsonl): its dashboard on the second card.
//
// usage: lorascope_screenshots OUT_DIR RECORDING [STEPS] [dark|light]
//                              [HANG_RECORDING [TRAINER [GROUP_RECORDING]]]
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QImage>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>

#include "TestPaths.h"
#include "engine/InProcessHost.h"
#include "gui/CommandSetup.h"
#include "gui/EngineAdapter.h"
#include "gui/MainWindow.h"
#include "gui/RunSetupPage.h"
#include "gui/RunsPage.h"
#include "gui/Theme.h"
#include "job/EngineJob.h"  // defines: createTrainingJob
#include "widgets/Dashboard.h"
#include "widgets/LengthHistogram.h"
#include "widgets/MemoryMapPanel.h"
#include "widgets/MemoryMapView.h"
#include "widgets/SeriesDecimator.h"
#include "widgets/TimeChart.h"

using namespace lorascope;

namespace {

constexpr int kTimeoutMs = 300'000;

// Processes events until `done` holds; false on timeout.
template <typename Predicate>
bool waitFor(Predicate done) {
  QElapsedTimer timer;
  timer.start();
  while (!done()) {
    if (timer.elapsed() > kTimeoutMs) {
      return false;
    }
    QTest::qWait(50);
  }
  return true;
}

bool save(QWidget* window, const QString& path) {
  QTest::qWait(200);  // let layouts and the charts' tick settle
  // 8-bit indexed colour: a flat UI needs few colours, and the README's PNGs stay small.
  const QImage image = window->grab().toImage().convertToFormat(
      QImage::Format_Indexed8, Qt::ThresholdDither | Qt::AvoidDither);
  const bool ok = image.save(path, "PNG", 9);
  std::printf("%s %s\n", ok ? "wrote" : "FAILED to write", qPrintable(path));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  const QStringList args = QApplication::arguments();
  if (args.size() < 3) {
    std::fprintf(stderr,
                 "usage: lorascope_screenshots OUT_DIR RECORDING [STEPS] [dark|light] "
                 "[HANG_RECORDING [TRAINER]]\n");
    return 2;
  }
  const QDir out(args[1]);
  const int steps = args.size() > 3 ? args[3].toInt() : 30;
  // The user's own settings are neither read nor changed: a first start, in a scratch place.
  QStandardPaths::setTestModeEnabled(true);
  QApplication::setOrganizationName(QStringLiteral("LoRAscopeScreenshots"));
  QApplication::setApplicationName(QStringLiteral("lorascope"));
  QSettings().clear();
  QTemporaryDir runs;

  app::EngineAdapter host([](engine::HostListener listener) {
    return std::make_unique<engine::InProcessHost>(
        job::createTrainingJob,
        engine::HelloEvent{engine::kProtocolVersion, "screenshots", "cpu", {}},
        std::move(listener));
  });
  app::MainWindow window(app::collectAboutFacts());
  if (args.size() > 4 && args[4] == QLatin1String("dark")) {
    app::applyColorScheme(app::ColorScheme::Dark);
  }
  window.setEngineProgram(
      QString::fromStdString(lstest::trainProgram()));  // the demo's files (`demo`)
  window.setEngine(&host);
  window.resize(1280, 800);
  window.show();
  app::RunSetupPage* setup = window.setupPage();
  setup->setOutputDir(runs.path());
  if (!waitFor([&] { return !setup->isBusy() && host.isConnected(); })) {
    std::fprintf(stderr, "screenshots: the demo was not inspected in time\n");
    return 1;
  }
  window.pages()->setCurrentWidget(setup);
  // Scrolled so that the token-length histogram shows below the dataset's report and issues.
  if (auto* scroll = setup->findChild<QScrollArea*>()) {
    QCoreApplication::processEvents();
    scroll->ensureWidgetVisible(setup->histogram(), 0, 16);
  }
  bool ok = save(&window, out.filePath(QStringLiteral("setup.png")));

  // A real demo run on the CPU, stopped with a checkpoint: the runs page lists it.
  setup->maxStepsEditor()->setValue(steps + 1000);
  window.startAction()->trigger();
  if (!waitFor(
          [&] { return window.dashboard()->lossChart()->decimator(0).sampleCount() >= steps; })) {
    std::fprintf(stderr, "screenshots: %d steps did not arrive in time\n", steps);
    return 1;
  }
  window.stopAction()->trigger();
  waitFor([&] { return window.startAction()->isEnabled(); });
  window.pages()->setCurrentWidget(window.runsPage());
  window.runsPage()->selectRun(window.runFolder());
  ok = save(&window, out.filePath(QStringLiteral("runs.png"))) && ok;

  // The same run's dashboard in a 1024×700 window, beside the Controls dock.
  window.resize(1024, 700);
  window.pages()->setCurrentWidget(window.dashboard());
  window.dashboard()->refresh();
  ok = save(&window, out.filePath(QStringLiteral("dashboard-1024x700.png"))) && ok;
  window.resize(1280, 800);
  // Resumed from the runs page: the same run goes on, one curve from step 1 with one marker where
  // it resumed; stopped again after 10 more steps.
  const QString runFolder = window.runFolder();
  window.runsPage()->resumeButton()->click();
  if (!waitFor([&] {
        return window.dashboard()->lossChart()->decimator(0).sampleCount() >= steps + 10;
      })) {
    std::fprintf(stderr, "screenshots: the resumed run did not reach step %d in time\n",
                 steps + 10);
    return 1;
  }
  window.stopAction()->trigger();
  waitFor([&] { return window.startAction()->isEnabled(); });
  window.dashboard()->refresh();
  window.pages()->setCurrentWidget(window.dashboard());
  ok = save(&window, out.filePath(QStringLiteral("resumed.png"))) && ok;
  window.pages()->setCurrentWidget(window.runsPage());
  window.runsPage()->selectRun(runFolder);

  // A supervised command (Setup → Run a command, TRAINER given): `lorascope-train train --demo`,
  // a real trainer in a process of its own, its step lines read with a regex (step, epoch, loss,
  // lr); its own run folder outside the runs folder. The runs page lists the command's run.
  if (args.size() > 6) {
    QTemporaryDir trainerOut;
    setup->setCommandMode(true);
    app::CommandSetup* command = setup->commandSetup();
    command->commandEdit()->setText(
        QStringLiteral("%1 train --demo --steps 20 --out %2")
            .arg(args[6], trainerOut.filePath(QStringLiteral("demo-under-supervise"))));
    command->parserEdit()->setCurrentText(
        QStringLiteral("regex:^step (?<step>\\d+)/\\d+  epoch (?<epoch>\\S+)  loss (?<loss>\\S+)  "
                       "lr (?<lr>\\S+)"));
    if (!waitFor([&] { return window.startAction()->isEnabled(); })) {
      std::fprintf(stderr, "screenshots: the command cannot start: %s\n",
                   qPrintable(setup->problems().join(QStringLiteral("; "))));
      return 1;
    }
    window.startAction()->trigger();
    const QString commandRun = window.runFolder();
    if (!waitFor([&] {
          return window.dashboard()->lossChart()->decimator(0).sampleCount() >= 20 &&
                 window.startAction()->isEnabled();
        })) {
      std::fprintf(stderr, "screenshots: the supervised command did not finish in time\n");
      return 1;
    }
    window.pages()->setCurrentWidget(window.runsPage());
    window.runsPage()->refresh();
    window.runsPage()->selectRun(commandRun);
    ok = save(&window, out.filePath(QStringLiteral("runs-command.png"))) && ok;
    setup->setCommandMode(false);
  }

  // The dashboard and the memory map replay the run recorded on a GPU (Runs → Open recording).
  // The controls dock (which would show the recording's toggles) is hidden: the charts get the
  // room.
  window.findChild<QDockWidget*>(QStringLiteral("controlsDock"))->hide();
  // Opens a recording and saves its dashboard as `png`; false when it cannot be opened.
  auto replay = [&](const QString& recording, const QString& png) {
    const QString problem = window.openRecording(recording);
    if (!problem.isEmpty()) {
      std::fprintf(stderr, "screenshots: %s\n", qPrintable(problem));
      return false;
    }
    window.dashboard()->refresh();
    ok = save(&window, out.filePath(png)) && ok;
    return true;
  };
  if (!replay(args[2], QStringLiteral("dashboard.png"))) {
    return 1;
  }
  window.pages()->setCurrentWidget(window.memoryMap());
  // Scrolled to the cached segments (the last group): rows of 128, 76, 38, 20, 14 and 2 MiB, each
  // as long as its segment.
  QCoreApplication::processEvents();
  const widgets::MemoryMapView* map = window.memoryMap()->view();
  if (auto* scroll = window.memoryMap()->findChild<QScrollArea*>(QStringLiteral("memoryMapScroll"));
      scroll != nullptr && !map->groups().empty()) {
    scroll->verticalScrollBar()->setValue(
        static_cast<int>(map->segmentBar(map->groups().back().segments.front()).top()) -
        widgets::MemoryMapView::kHeaderHeightPx);
  }
  ok = save(&window, out.filePath(QStringLiteral("memory-map.png"))) && ok;

  // The recording of the same run with an injected hang (HANG_RECORDING): its banner and band.
  if (args.size() > 5 && !replay(args[5], QStringLiteral("dashboard-hang.png"))) {
    return 1;
  }
  // A run on two GPUs (GROUP_RECORDING): the card selector beside the run selector, on GPU 1.
  if (args.size() > 7) {
    const QString problem = window.openRecording(args[7]);
    if (!problem.isEmpty()) {
      std::fprintf(stderr, "screenshots: %s\n", qPrintable(problem));
      return 1;
    }
    window.pages()->setCurrentWidget(window.dashboard());
    QComboBox* cards = window.dashboard()->cardSelector();
    emit cards->activated(cards->findData(1));
    window.dashboard()->refresh();
    ok = save(&window, out.filePath(QStringLiteral("dashboard-2gpus.png"))) && ok;
  }
  return ok ? 0 : 1;
}
