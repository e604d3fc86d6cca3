// test_try_it.cpp — the Try it page on the built-in demo model (tokenizer, chat template) with a
// random PEFT adapter, generating through an engine (here in-process: the engine loop with the
// generation runner the engine process has): both answers stream into their panes and differ,
// equal `job::TextGenerator`'s greedy text, and Stop ends a long generation (on the untrained demo
// model, which never stops) early; "Base weights: NF4 4-bit" answers on the NF4 base (both panes),
// and a run trained with --quantize nf4 preselects it. The fields survive the window closing
// (QSettings).
#include <QtTest>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <fstream>

#include "engine/InProcessHost.h"
#include "gui/EngineAdapter.h"
#include "gui/TryItPage.h"
#include "job/EngineJob.h"  // defines: createTrainingJob
#include "job/Generation.h"
#include "job/GenerationService.h"  // defines: createGenerationRunner
#include "job/TrainRunConfig.h"     // defines: settingsToJson
#include "model/ModelFolder.h"
#include "train/DemoModel.h"
#include "train/Lora.h"
#include "train/PeftExport.h"
#include "train/RandomDraws.h"
#include "train/RunDirectory.h"
#include "train/TrainGraph.h"  // defines: modelLoraSites

using namespace lorascope;

namespace {

// The greedy text of 12 new tokens for `prompt` on the demo model, as the page asks for it.
QString greedyText(const std::filesystem::path& model, const std::filesystem::path& adapter,
                   bool withAdapter, model::WeightQuantization quantization,
                   const std::string& prompt) {
  job::TextGenerator generator(
      model.string(), adapter.string(), "cpu", [](const std::string&) {}, quantization);
  generator.setAdapterEnabled(withAdapter);
  job::SamplingOptions greedy;
  greedy.maxNewTokens = 12;
  return QString::fromStdString(
      generator.generate(generator.promptIds(prompt, "", true), greedy).text);
}

// The engine loop on a thread of this process, with the generation runner of `lorascope-train
// engine` (test_try_it_faults drives the engine process).
app::TryItPage::EngineFactory inProcessEngine() {
  return [](const QString&) {
    return std::make_unique<app::EngineAdapter>([](engine::HostListener listener) {
      engine::EngineOptions options;
      options.generate = job::createGenerationRunner();
      return std::make_unique<engine::InProcessHost>(job::createTrainingJob, engine::HelloEvent{},
                                                     std::move(listener), std::move(options));
    });
  };
}

}  // namespace

class TestTryIt : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // QSettings (Generate saves the fields) go there
    QSettings().remove(QStringLiteral("tryit"));
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
    // A model that never ends an answer by itself (the pretrained demo base does, soon).
    untrained_ = root / "untrained";
    train::writeUntrainedDemoModel(untrained_);
  }

  void baseAndAdapterAnswersStreamSideBySide() {
    app::TryItPage page;
    page.setEngineFactory(inProcessEngine());
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

  // Both panes come from the NF4 base (with and without the adapter), the header says so, and the
  // adapter's answer differs from its answer on the stored base for the same prompt.
  void nf4BaseWeightsAnswerOnTheNf4Base() {
    app::TryItPage page;
    page.setEngineFactory(inProcessEngine());
    page.suggest(QString::fromStdString(model_.string()),
                 QString::fromStdString(adapter_.string()));
    QCOMPARE(page.baseWeights()->currentData().toString(), QStringLiteral("none"));
    page.baseWeights()->setCurrentIndex(page.baseWeights()->findData(QStringLiteral("nf4")));
    page.promptEdit()->setPlainText(QStringLiteral("Name three colours."));
    page.maxNewTokens()->setValue(12);
    QSignalSpy finished(&page, &app::TryItPage::finished);
    page.generateButton()->click();
    QVERIFY(finished.wait(120000));
    QVERIFY2(page.status()->text().contains(QStringLiteral(", base weights nf4")) &&
                 page.status()->text().contains(QStringLiteral("adapter: ")),
             qPrintable(page.status()->text()));
    const std::string prompt = "Name three colours.";
    const auto nf4 = model::WeightQuantization::Nf4;
    const QString nf4Base = greedyText(model_, adapter_, false, nf4, prompt);
    QCOMPARE(page.baseAnswer()->toPlainText(), nf4Base);
    QCOMPARE(page.adapterAnswer()->toPlainText(), greedyText(model_, adapter_, true, nf4, prompt));
    // With the adapter, the answers on the NF4 base and on the stored base differ.
    QVERIFY(page.adapterAnswer()->toPlainText() !=
            greedyText(model_, adapter_, true, model::WeightQuantization::None, prompt));
  }

  // A run recorded with --quantize nf4 preselects NF4, given as the run, its adapter/ or a
  // checkpoint; a plain PEFT folder or no adapter gives "as stored"; a hand-picked choice is kept.
  void runTrainedOnNf4PreselectsNf4() {
    const std::filesystem::path root = dir_.path().toStdString();
    job::TrainRunSettings settings = job::defaultSettings(true);
    settings.train.quantization = model::WeightQuantization::Nf4;
    const std::filesystem::path run = root / "nf4-run";
    train::RunDirectory::create(
        run, {{"model_path", model_.string()}, {"training", job::settingsToJson(settings)}});
    const auto choice = [](const app::TryItPage& page) {
      return page.baseWeights()->currentData().toString();
    };
    app::TryItPage page;
    const QString modelDir = QString::fromStdString(model_.string());
    page.suggest(modelDir, QString::fromStdString(run.string()));
    QVERIFY2(choice(page) == QStringLiteral("nf4"), qPrintable(page.status()->text()));
    page.adapterEdit()->setText(QString::fromStdString(adapter_.string()));
    QCOMPARE(choice(page), QStringLiteral("none"));
    page.adapterEdit()->setText(QString::fromStdString((run / "adapter").string() + "/"));
    QCOMPARE(choice(page), QStringLiteral("nf4"));
    page.adapterEdit()->clear();
    QCOMPARE(choice(page), QStringLiteral("none"));
    page.adapterEdit()->setText(QString::fromStdString((run / "checkpoints/step-4").string()));
    QCOMPARE(choice(page), QStringLiteral("nf4"));

    // A run whose config.json does not read: the status names it, the choice stays as stored.
    const std::filesystem::path broken = root / "broken-run";
    std::filesystem::create_directories(broken);
    std::ofstream(broken / "config.json") << "{";
    page.adapterEdit()->setText(QString::fromStdString(broken.string()));
    QCOMPARE(choice(page), QStringLiteral("none"));
    QVERIFY2(page.status()->text().contains(QStringLiteral("config.json")),
             qPrintable(page.status()->text()));

    page.baseWeights()->setCurrentIndex(0);
    emit page.baseWeights()->activated(0);  // as a click on "as stored" does
    page.adapterEdit()->setText(QString::fromStdString(run.string()));
    QCOMPARE(choice(page), QStringLiteral("none"));
  }

  // The fields come back in the next window: the prompt and knobs always, the folders and the
  // base weights only where the user chose them (suggest() still fills the others).
  void fieldsSurviveTheWindowClosing() {
    const QString typedModel = QStringLiteral("/models/Łukasz/日本");
    {
      app::TryItPage page;
      page.suggest(QStringLiteral("/suggested/model"), QStringLiteral("/suggested/run"));
      page.modelEdit()->setText(typedModel);
      emit page.modelEdit()->textEdited(typedModel);  // as typing does: the user's choice
      page.promptEdit()->setPlainText(QStringLiteral("Name three colours.\nThen a fourth."));
      page.maxNewTokens()->setValue(77);
      page.temperature()->setValue(0.7);
      page.baseWeights()->setCurrentIndex(page.baseWeights()->findData(QStringLiteral("nf4")));
      emit page.baseWeights()->activated(page.baseWeights()->currentIndex());
      page.saveSettings();
    }
    app::TryItPage page;
    page.restoreSettings();
    QCOMPARE(page.modelEdit()->text(), typedModel);
    QCOMPARE(page.adapterEdit()->text(), QString());  // suggested, not chosen: not kept
    QCOMPARE(page.promptEdit()->toPlainText(),
             QStringLiteral("Name three colours.\nThen a fourth."));
    QCOMPARE(page.maxNewTokens()->value(), 77);
    QCOMPARE(page.temperature()->value(), 0.7);
    QCOMPARE(page.baseWeights()->currentData().toString(), QStringLiteral("nf4"));
    page.suggest(QStringLiteral("/other/model"), QStringLiteral("/other/run"));
    QCOMPARE(page.modelEdit()->text(), typedModel);  // the user's folder stays
    QCOMPARE(page.adapterEdit()->text(), QStringLiteral("/other/run"));
    QCOMPARE(page.baseWeights()->currentData().toString(), QStringLiteral("nf4"));  // chosen
    QSettings().remove(QStringLiteral("tryit"));  // the other tests start from defaults
  }

  void stopEndsAGenerationEarly() {
    app::TryItPage page;
    page.setEngineFactory(inProcessEngine());
    page.suggest(QString::fromStdString(untrained_.string()), {});
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
  std::filesystem::path untrained_;
};

QTEST_MAIN(TestTryIt)
#include "test_try_it.moc"
