// test_app_shell.cpp — the main window's menus and the About box's facts.
#include <QtTest>

#include <QAction>
#include <QMenuBar>

#include "compute/BuildInfo.h"
#include "gui/MainWindow.h"
#include "widgets/AboutDialog.h"

using namespace lorascope;

class TestAppShell : public QObject {
  Q_OBJECT

 private slots:
  void aboutFactsComeFromTheBuild() {
    const widgets::AboutFacts facts = app::collectAboutFacts();
    QCOMPARE(facts.version, QString::fromStdString(compute::buildInfo().version));
    QCOMPARE(facts.flavour, QString::fromStdString(compute::buildInfo().flavour));
    QVERIFY(!facts.devices.isEmpty() || !facts.noDeviceReason.isEmpty());
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
    QCOMPARE(menus, (QStringList{"&File", "&Help"}));
    QMenu* help = window.menuBar()->actions().at(1)->menu();
    QVERIFY(help != nullptr);
    QCOMPARE(help->actions().at(0)->text(), QStringLiteral("&About LoRAscope"));
  }
};

QTEST_MAIN(TestAppShell)
#include "test_app_shell.moc"
