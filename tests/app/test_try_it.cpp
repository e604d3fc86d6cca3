// test_try_it.cpp — the Try it page on the built-in demo model (tokenizer, chat template) with a
// random PEFT adapter: both answers stream into their panes from the worker thread and differ,
// equal `job::TextGenerator`'s greedy text, and Stop ends a long generation early.
#include <QtTest>

#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>

#include "gui/TryItPage.h"
#include "job/Generation.h"
#include "model/ModelFolder.h"
#include "train/DemoModel.h"
#include "train/Lora.h"
#include "train/PeftExport.h"
#include "train/Philox.h"
#include "train/TrainGraph.h"  // defines: modelLoraSites

using namespace lorascope;

class TestTryIt : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const std::filesystem::path root = dir_.path().toStdString();
    model_ = train::ensureDemoModel(root / "cache");
    const model::ModelFolder folder = model::ModelFolder::open(model_.string());
    train::LoraConfig lora;
    lora.rank = 4;
    train::LoraAdapter adapter =
        train::createLoraAdapter(lora, train::modelLoraSites(folder.config()), 3);
    std::uint64_t i = 0;
    for (train::LoraWeights& w : adapter.weights)
      for (float& b : w.b)
        b = 2.0f * train::uniformFloat(3, 999, i++) - 1.0f;  // large: the answer must change
    adapter_ = root / "adapter";
    train::writePeftAdapter(adapter_, adapter, model_.string());
  }

  void baseAndAdapterAnswersStreamSideBySide() {
    app::TryItPage page;
    page.suggest(QString::fromStdString(model_.string()),
                 QString::fromStdString(adapter_.string()));
    page.promptEdit()->setPlainText(QStringLiteral("Name three colours."));
    page.maxNewTokens()->setValue(12);
    QSignalSpy finished(&page, &app::TryItPage::finished);
    page.generateButton()->click();
    QVERIFY(page.generating());
    QVERIFY(page.stopButton()->isEnabled() && !page.generateButton()->isEnabled());
    QVERIFY(finished.wait(120000));
    QVERIFY2(page.status()->text().contains(QStringLiteral("adapter: ")),
             qPrintable(page.status()->text()));
    const QString base = page.baseAnswer()->toPlainText();
    const QString adapted = page.adapterAnswer()->toPlainText();
    QVERIFY(!base.isEmpty() && !adapted.isEmpty());
    QVERIFY(base != adapted);
    // What the panes show is what the generator makes for the same prompt.
    job::TextGenerator generator(model_.string(), adapter_.string(), "cpu",
                                 [](const std::string&) {});
    const auto ids = generator.promptIds("Name three colours.", "", true);
    job::SamplingOptions greedy;
    greedy.maxNewTokens = 12;
    QCOMPARE(QString::fromStdString(generator.generate(ids, greedy).text), adapted);
    generator.setAdapterEnabled(false);
    QCOMPARE(QString::fromStdString(generator.generate(ids, greedy).text), base);
  }

  void stopEndsAGenerationEarly() {
    app::TryItPage page;
    page.suggest(QString::fromStdString(model_.string()), {});
    page.promptEdit()->setPlainText(QStringLiteral("Tell a long story."));
    page.maxNewTokens()->setValue(8000);
    QSignalSpy finished(&page, &app::TryItPage::finished);
    page.generateButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(!page.baseAnswer()->toPlainText().isEmpty(), 60000);
    page.stopButton()->click();
    QVERIFY(finished.wait(60000));
    QVERIFY2(page.status()->text().contains(QStringLiteral("(stopped)")),
             qPrintable(page.status()->text()));
    QVERIFY(page.generateButton()->isEnabled());
  }

 private:
  QTemporaryDir dir_;
  std::filesystem::path model_;
  std::filesystem::path adapter_;
};

QTEST_MAIN(TestTryIt)
#include "test_try_it.moc"
