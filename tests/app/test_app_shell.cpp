// test_app_shell.cpp — the main window's menus and the About box's facts; the window with an
// engine client: the empty state without one, run actions that follow the run state and send
// Commands, events reaching every page, the layout remembered across windows.
#include <QtTest>

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QAction>
#include <QActionGroup>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QMenuBar>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolBar>
#include <QToolButton>

#include "../widgets/RecordedStream.h"
#include "AppTestHome.h"
#include "TestPaths.h"
#include "common/Build.h"  // defines: buildInfo
#include "gui/GpuCheckDialog.h"
#include "gui/MainWindow.h"
#include "gui/RunSetupPage.h"
#include "gui/Theme.h"
#include "widgets/AboutDialog.h"
#include "widgets/ControlsPanel.h"
#include "widgets/Dashboard.h"
#include "widgets/EventLogModel.h"
#include "widgets/MemoryMapPanel.h"
#include "widgets/ProfileBar.h"
#include "widgets/TimeChart.h"

using namespace lorascope;
using namespace lorascope::engine;

class TestAppShell : public QObject {
  Q_OBJECT

 private slots:
  // The build's facts from the build; its GPUs from the engine's hello (the window asks no GPU
  // runtime itself), which also gives the setup page its GPUs.
  void aboutFactsComeFromTheBuildAndTheEngine() {
    const widgets::AboutFacts facts = app::collectAboutFacts();
    QCOMPARE(facts.version, QString::fromStdString(common::buildInfo().version));
    QCOMPARE(facts.flavour, QString::fromStdString(common::buildInfo().flavour));
    QVERIFY(facts.devices.isEmpty() && !facts.noDeviceReason.isEmpty());
    app::MainWindow window(facts);
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    engine::HelloEvent hello{engine::kProtocolVersion,
                             "0.1.0",
                             "hip-nvidia",
                             {{"NVIDIA H200", "sm_90", std::uint64_t{143771} << 20}}};
    hello.gpuRuntime = "CUDA 13.0 via HIP portability header";
    engine.play({{0, hello}});
    QCOMPARE(window.aboutFacts().devices,
             QStringList{QStringLiteral("0: NVIDIA H200 [sm_90], 143771 MiB")});
    QCOMPARE(window.aboutFacts().gpuRuntime,
             QStringLiteral("CUDA 13.0 via HIP portability header"));
  }

  void aboutDialogSaysNoneWhenThereIsNoGpu() {
    widgets::AboutFacts facts{"9.9.9", "cpu", "", "", {}, "this is the cpu build"};
    widgets::AboutDialog dialog(facts);
    const QString text = dialog.factsText();
    QVERIFY2(text.contains("Version: 9.9.9"), qPrintable(text));
    QVERIFY2(text.contains("Build flavour: cpu"), qPrintable(text));
    QVERIFY2(text.contains("GPU targets: none"), qPrintable(text));
    QVERIFY2(text.contains("GPUs: none (this is the cpu build)"), qPrintable(text));
  }

  void aboutDialogListsEachGpu() {
    widgets::AboutFacts facts{"1.0",
                              "hip-amd",
                              "gfx1030;gfx90a",
                              "HIP 5.2 (ROCm)",
                              {"0: Radeon RX 6800 [gfx1030], 16368 MiB", "1: MI210 [gfx90a]"},
                              ""};
    widgets::AboutDialog dialog(facts);
    QVERIFY(dialog.factsText().contains("0: Radeon RX 6800 [gfx1030], 16368 MiB"));
    QVERIFY(dialog.factsText().contains("1: MI210 [gfx90a]"));
    QVERIFY(!dialog.factsText().contains("none"));
  }

  void mainWindowHasFileAndHelpMenus() {
    app::MainWindow window(app::collectAboutFacts());
    QStringList menus;
    for (QAction* action : window.menuBar()->actions()) {
      menus << action->text();
    }
    QCOMPARE(menus, (QStringList{"&File", "R&un", "&View", "&Help"}));
    QMenu* help = window.menuBar()->actions().at(3)->menu();
    QVERIFY(help != nullptr);
    QCOMPARE(help->actions().at(0)->text(), QStringLiteral("&About LoRAscope"));
  }

  // Alt and a letter reaches one menu or page: no two of them underline the same letter (the Run
  // menu and the Runs page both took R, so Alt+R only cycled between them).
  void everyMenuAndPageHasItsOwnAltLetter() {
    app::MainWindow window(app::collectAboutFacts());
    QStringList texts;
    for (QAction* action : window.menuBar()->actions()) {
      texts << action->text();
    }
    QTabWidget* pages = window.pages();
    QVERIFY(pages != nullptr);
    for (int i = 0; i < pages->count(); ++i) {
      texts << pages->tabText(i);
    }
    QMap<QChar, QString> taken;
    for (const QString& text : texts) {
      const qsizetype at = text.indexOf(QLatin1Char('&'));
      QVERIFY2(at >= 0 && at + 1 < text.size(), qPrintable(text + " has no Alt letter"));
      const QChar letter = text.at(at + 1).toLower();
      QVERIFY2(!taken.contains(letter),
               qPrintable(text + " and " + taken.value(letter) + " both take Alt+" + letter));
      taken.insert(letter, text);
    }
  }

  // Help → Check this GPU runs `lorascope-train doctor` and offers its support bundle.
  void helpChecksThisGpuAndSavesTheBundle() {
    app::MainWindow window(app::collectAboutFacts());
    window.setEngineProgram(QString::fromStdString(lstest::trainProgram()));
    QAction* check = nullptr;
    for (QAction* action : window.menuBar()->actions().at(3)->menu()->actions()) {
      check = action->text() == QStringLiteral("&Check this GPU…") ? action : check;
    }
    QVERIFY(check != nullptr);
    check->trigger();
    auto* dialog = window.findChild<app::GpuCheckDialog*>();
    QVERIFY(dialog != nullptr);
    QTRY_VERIFY_WITH_TIMEOUT(dialog->finished(), 120000);
    QVERIFY2(dialog->report().contains(QStringLiteral("LoRAscope doctor: lorascope-train")),
             qPrintable(dialog->report()));
    QVERIFY(dialog->report().contains(QStringLiteral("verdict: ")));
    QTemporaryDir out;
    const QString saved = out.filePath(QStringLiteral("support.tar"));
    QVERIFY(dialog->saveBundle(saved));
    QFile tar(saved);
    QVERIFY(tar.open(QIODevice::ReadOnly));
    QVERIFY(tar.read(10) == QByteArray("README.txt"));  // the first entry's name
  }

  void withoutAnEngineEverythingWaits() {
    app::MainWindow window(app::collectAboutFacts());
    QVERIFY(!window.dashboard()->showsCharts());
    for (QAction* a : {window.startAction(), window.pauseAction(), window.resumeAction(),
                       window.stopAction(), window.checkpointAction()}) {
      QVERIFY2(!a->isEnabled(), qPrintable(a->text()));
    }
    QVERIFY(!window.controls()->editor(Toggle::Serialize)->isEnabled());
  }

  void runActionsFollowTheStateAndSendCommands() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    window.setupPage()->setDemo(false);
    QVERIFY(!window.startAction()->isEnabled());  // no model or dataset chosen
    window.setRunConfig({{"model", "/models/demo"}});
    QVERIFY(window.startAction()->isEnabled());
    window.startAction()->trigger();
    QCOMPARE(engine.sent.size(), std::size_t{1});
    QCOMPARE(std::get<StartCommand>(engine.sent[0]).runConfig["model"].get<std::string>(),
             "/models/demo");
    emit engine.eventReceived({10, StateEvent{RunState::Running, 0, ""}});
    QVERIFY(!window.startAction()->isEnabled());
    QVERIFY(window.pauseAction()->isEnabled() && window.stopAction()->isEnabled());
    window.pauseAction()->trigger();
    QVERIFY(std::holds_alternative<PauseCommand>(engine.sent.back()));
    emit engine.eventReceived({20, StateEvent{RunState::Paused, 3, ""}});
    QVERIFY(window.resumeAction()->isEnabled() && !window.pauseAction()->isEnabled());
    window.checkpointAction()->trigger();
    QVERIFY(std::holds_alternative<CheckpointNowCommand>(engine.sent.back()));
    // Commands the pages request go through the same client.
    window.controls()->requestToggle(Toggle::Blocking, true);
    QVERIFY(std::holds_alternative<SetToggleCommand>(engine.sent.back()));
    window.profileBar()->switchTo(QStringLiteral("CPU only"));
    QCOMPARE(std::get<SwitchProfileCommand>(engine.sent.back()).name, std::string("CPU only"));
    engine.setConnected(false);
    QVERIFY(!window.resumeAction()->isEnabled());
  }

  void eventsReachEveryPage() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    engine.play(testing::readStream("synthetic_gpu_run.jsonl"));
    QTRY_VERIFY(window.dashboard()->lossChart()->lineSeries(0)->count() > 0);
    QVERIFY(window.dashboard()->showsCharts());
    QVERIFY(window.memoryMap()->hasSnapshot());
    QCOMPARE(window.controls()->status(Toggle::GemmBackend),
             widgets::ControlsPanel::Status::Applied);
    QVERIFY(window.eventLog()->rowCount() > 0);
  }

  void exportFollowsTheRunsCheckpoints() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    const QString runFolder = home_.filePath(QStringLiteral("runs/r1"));
    window.setRunConfig({{"demo", true}, {"out", runFolder.toStdString()}});
    window.startAction()->trigger();
    QCOMPARE(window.runFolder(), runFolder);
    QVERIFY(!window.exportAdapterAction()->isEnabled());  // nothing written yet
    emit engine.eventReceived({10, StateEvent{RunState::Running, 0, ""}});
    emit engine.eventReceived({20, CheckpointEvent{runFolder.toStdString() + "/checkpoints/x", 5}});
    QVERIFY(window.exportAdapterAction()->isEnabled());
    QVERIFY(window.exportMergedAction()->isEnabled());
  }

  void colourSchemeSwitchesAndIsRemembered() {
    auto pick = [](QActionGroup* group, const QString& name) {
      for (QAction* action : group->actions()) {
        if (action->data().toString() == name) {
          return action;
        }
      }
      return static_cast<QAction*>(nullptr);
    };
    {
      app::MainWindow window(app::collectAboutFacts());
      QCOMPARE(window.colorSchemeActions()->checkedAction()->data().toString(), "system");
      pick(window.colorSchemeActions(), "dark")->trigger();
      QCOMPARE(QApplication::palette().color(QPalette::Window),
               app::darkPalette().color(QPalette::Window));
    }
    app::MainWindow again(app::collectAboutFacts());
    QCOMPARE(again.colorSchemeActions()->checkedAction()->data().toString(), "dark");
    pick(again.colorSchemeActions(), "system")->trigger();
    QVERIFY(QApplication::palette().color(QPalette::Window) !=
            app::darkPalette().color(QPalette::Window));
  }

  void layoutIsRemembered() {
    {
      app::MainWindow window(app::collectAboutFacts());
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      window.pages()->setCurrentIndex(2);
      window.close();
    }
    app::MainWindow again(app::collectAboutFacts());
    QCOMPARE(again.pages()->currentIndex(), 2);
  }

  // The window works at 1024×700: on every page no control is clipped or moved into a toolbar's
  // overflow menu, the setup page needs no horizontal scrolling, and no chart legend is elided.
  void worksAt1024By700() {
    app::MainWindow window(app::collectAboutFacts());
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    for (const TimedEvent& e : testing::readStream("synthetic_gpu_run.jsonl")) {
      window.handleEvent(e);
    }
    window.dashboard()->refresh();
    QTest::qWait(100);
    QVERIFY2(window.width() <= 1024 && window.height() <= 700,
             qPrintable(QStringLiteral("%1x%2").arg(window.width()).arg(window.height())));
    for (int page = 0; page < window.pages()->count(); ++page) {
      window.pages()->setCurrentIndex(page);
      QTest::qWait(50);
      const QString where = window.pages()->tabText(page);
      for (QToolBar* bar : window.findChildren<QToolBar*>()) {
        for (QToolButton* button : bar->findChildren<QToolButton*>()) {
          QVERIFY2(
              button->objectName() != QLatin1String("qt_toolbar_ext_button") ||
                  !button->isVisible(),
              qPrintable(where + QStringLiteral(": toolbar overflow in ") + bar->windowTitle()));
        }
      }
      for (QScrollArea* scroll : window.findChildren<QScrollArea*>()) {
        if (scroll->isVisible() && scroll->objectName() != QLatin1String("memoryMapScroll")) {
          QVERIFY2(!scroll->horizontalScrollBar()->isVisible(),
                   qPrintable(where + QStringLiteral(": horizontal scrolling")));
        }
      }
      for (QWidget* w : window.findChildren<QWidget*>()) {
        const bool control = qobject_cast<QAbstractButton*>(w) || qobject_cast<QComboBox*>(w) ||
                             qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QLineEdit*>(w);
        if (!control || !w->isVisible() || qobject_cast<QToolButton*>(w) ||
            w->objectName().startsWith(QLatin1String("qt_"))) {  // Qt's own (dock title buttons)
          continue;
        }
        bool scrolled = false;  // inside a scroll area: reachable by scrolling up and down
        for (QWidget* p = w->parentWidget(); p != nullptr; p = p->parentWidget()) {
          scrolled = scrolled || qobject_cast<QScrollArea*>(p) != nullptr;
        }
        const QString name =
            where + QStringLiteral(": ") + w->metaObject()->className() + QStringLiteral(" '") +
            w->objectName() + QStringLiteral("' ") +
            (qobject_cast<QAbstractButton*>(w) ? qobject_cast<QAbstractButton*>(w)->text()
                                               : QString());
        QVERIFY2(w->width() >= w->minimumSizeHint().width(),
                 qPrintable(name + QStringLiteral(" narrower than it needs")));
        if (!scrolled) {
          const QRect inWindow(w->mapTo(&window, QPoint(0, 0)), w->size());
          QVERIFY2(window.rect().contains(inWindow), qPrintable(name + QStringLiteral(" cut off")));
        }
      }
    }
    for (widgets::TimeChart* chart : window.dashboard()->charts()) {
      const QString legend = chart->legendText();
      for (int s = 0; s < chart->seriesCount(); ++s) {
        QVERIFY2(legend.contains(chart->valueText(s)), qPrintable(legend));
      }
      QLabel* row = chart->legend();
      QVERIFY2(row->height() >= row->heightForWidth(row->width()),
               qPrintable(QStringLiteral("legend cut: ") + legend));
    }
  }

 private:
  lstest::AppTestHome home_{QStringLiteral("test_app_shell")};  // made before any test runs
};

QTEST_MAIN(TestAppShell)
#include "test_app_shell.moc"
