// test_command_run.cpp — the setup page's "Run a command": a real script (python3 printing tqdm
// bars, tests/external/scripts/print_format.py) started by one click on Start runs under the
// external supervisor, its losses reach the same dashboard as a training run's, and its fields are
// remembered for that command line; a command that does not exist is a problem on the page and
// Start stays disabled; the model, dataset and estimate rows are hidden for a command.
#include <QtTest>

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "gui/CommandSetup.h"
#include "gui/MainWindow.h"
#include "gui/RunSetupPage.h"
#include "widgets/Dashboard.h"
#include "widgets/LengthHistogram.h"
#include "widgets/TimeChart.h"

using namespace lorascope;

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
    const QString line = python + " " + QStringLiteral(LORASCOPE_PRINT_FORMAT) + " tqdm";
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
