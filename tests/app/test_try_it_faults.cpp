// test_try_it_faults.cpp — a GPU fault in Try it costs its engine, not the window: the window's Try
// it page generates through a supervised `lorascope-train engine` (made as gui/main.cpp makes it)
// whose environment (LORASCOPE_FAULTS) makes the 40th cached-attention launch an illegal address,
// the GPU's sticky error, while it answers from a model that never stops by itself (the untrained
// demo model). The page says the generation failed and why, and that the engine was restarted;
// Generate works again on the new engine (its answer, sampled with the same seed, is the start of
// the text streamed before the fault: each engine counts launches afresh, and 4 new tokens make 16
// of them); the window stays up, and the trainer's engine hears nothing of it. try_it_engine_fault
// runs the same engine without Qt (and on the GPU: gpu_try_it_fault). The same again with a hang
// (LORASCOPE_FAULTS=hang@attention_cached#40): the engine's watchdog names it, the engine exits.
#include <QtTest>

#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "../widgets/RecordedStream.h"
#include "TestPaths.h"
#include "engine/SupervisorHost.h"
#include "gui/EngineAdapter.h"
#include "gui/MainWindow.h"
#include "gui/TryItPage.h"
#include "profiles/Builtins.h"
#include "train/DemoModel.h"  // defines: writeUntrainedDemoModel

using namespace lorascope;

class TestTryItFaults : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // Generate saves the fields (QSettings)
    QSettings().remove(QStringLiteral("tryit"));
    QVERIFY(dir_.isValid());
    model_ = std::filesystem::path(dir_.path().toStdString()) / "untrained";
    train::writeUntrainedDemoModel(model_);
  }

  void aGpuFaultRestartsTheEngineAndTheWindowStays() {
    faultRestartsTheEngineAndTheWindowStays(
        {{"LORASCOPE_FAULTS", "illegal_address@attention_cached#40"}},
        QStringLiteral("an illegal memory access"));
  }

  // An op that never returns (its watchdog's budgets shortened to seconds): the page names the
  // hang, and the rest goes as for the illegal address.
  void aHangRestartsTheEngineAndTheWindowStays() {
    faultRestartsTheEngineAndTheWindowStays(
        {{"LORASCOPE_FAULTS", "hang@attention_cached#40"}, {"LORASCOPE_WATCHDOG", "2,5"}},
        QStringLiteral("while generating: hang: no progress"));
  }

 private:
  // Generates through an engine with `environment`: the generation fails, the status names
  // `named` and the restart, and Generate works again on the new engine.
  void faultRestartsTheEngineAndTheWindowStays(
      const std::map<std::string, std::string>& environment, const QString& named) {
    app::MainWindow window(widgets::AboutFacts{});
    testing::RecordingEngineClient trainer;
    window.setEngine(&trainer);
    trainer.setConnected(true);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    app::TryItPage* page = window.tryItPage();
    page->setEngineFactory([environment](const QString&) {
      profiles::Profile profile = profiles::defaultProfile();
      for (const auto& [name, value] : environment)
        profile.environment[name] = value;
      return std::make_unique<app::EngineAdapter>([&](engine::HostListener listener) {
        return std::make_unique<engine::SupervisorHost>(
            lstest::trainProgram(), profile, engine::SupervisorPolicy{}, std::move(listener));
      });
    });
    window.pages()->setCurrentWidget(page);
    page->modelEdit()->setText(QString::fromStdString(model_.string()));
    page->adapterEdit()->clear();
    page->promptEdit()->setPlainText(QStringLiteral("Tell a long story."));
    page->maxNewTokens()->setValue(30);
    page->temperature()->setValue(1.0);  // sampled with seed 0: varied text, the same each time
    QSignalSpy finished(page, &app::TryItPage::finished);

    page->generateButton()->click();
    QVERIFY(finished.wait(300000));
    QVERIFY2(page->status()->text().startsWith(QStringLiteral("Could not generate: ")) &&
                 page->status()->text().contains(named),
             qPrintable(page->status()->text()));
    QTRY_VERIFY2_WITH_TIMEOUT(
        page->status()->text().contains(QStringLiteral("The generation engine stopped")) &&
            page->status()->text().contains(QStringLiteral("generate again")),
        qPrintable(page->status()->text()), 60000);
    QVERIFY(page->generateButton()->isEnabled() && !page->stopButton()->isEnabled());
    const QString partial = page->baseAnswer()->toPlainText();
    QVERIFY(!partial.isEmpty());  // streamed before the fault, and kept

    auto& host = dynamic_cast<app::EngineAdapter&>(*page->engine()).host<engine::SupervisorHost>();
    QTRY_VERIFY_WITH_TIMEOUT(host.engineProcessId() != 0, 60000);  // the new engine
    page->maxNewTokens()->setValue(4);
    page->generateButton()->click();
    QVERIFY(finished.wait(300000));
    QVERIFY2(page->status()->text().contains(QStringLiteral("base: 4 tokens (max-new-tokens)")),
             qPrintable(page->status()->text()));
    const QString again = page->baseAnswer()->toPlainText();
    QVERIFY2(!again.isEmpty() && partial.startsWith(again),
             qPrintable(again + QStringLiteral(" | ") + partial));

    QVERIFY(window.isVisible());
    for (const engine::Command& command : trainer.sent) {
      QVERIFY(!std::holds_alternative<engine::GenerateCommand>(command));
    }
  }

  QTemporaryDir dir_;
  std::filesystem::path model_;
};

QTEST_MAIN(TestTryItFaults)
#include "test_try_it_faults.moc"
