// test_setup_processes.cpp — the run setup page with real files (the demo model written to a
// temporary cache, datasets written here): inspection, validation with the token histogram, clear
// errors for bad input, options the trainer's own parser accepts, remembered values; the length
// histogram's limit; a named run folder that holds something other than a run is refused; the
// processes page against telemetry readings (who holds VRAM, the held-outside diagnosis, no GPU
// at all).
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "gui/ProcessesPage.h"
#include "gui/RunSetupPage.h"
#include "job/TrainRunConfig.h"  // defines: applyOptions, defaultSettings
#include "settings/Registry.h"   // defines: registry (the run settings)
#include "train/DemoModel.h"     // defines: ensureDemoModel
#include "widgets/ControlsPanel.h"
#include "widgets/LengthHistogram.h"

using namespace lorascope;

namespace {

constexpr int kTimeoutMs = 60'000;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// Two 80 GiB cards, device 0 and 1, with the driver's used bytes of each.
telemetry::Snapshot twoCards(std::uint64_t used0, std::uint64_t used1) {
  telemetry::Snapshot gpus;
  for (int i = 0; i < 2; ++i) {
    telemetry::DeviceReading device;
    device.index = i;
    device.vramTotalBytes = 80 * kGiB;
    device.vramUsedBytes = i == 0 ? used0 : used1;
    gpus.devices.push_back(device);
  }
  return gpus;
}

void writeFile(const QString& path, const QByteArray& bytes) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(bytes);
}

}  // namespace

class TestSetupProcesses : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir home_;
  QString demoModel_;

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    qputenv("LORASCOPE_CACHE_DIR", home_.filePath(QStringLiteral("cache")).toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("LoRAscopeTest"));
    QCoreApplication::setApplicationName(QStringLiteral("test_setup_processes"));
    demoModel_ = QString::fromStdString(train::ensureDemoModel(train::defaultCacheDir()).string());
  }

  void init() { QSettings().clear(); }

  void firstStartPreselectsTheDemo() {
    app::RunSetupPage page;
    page.setTrainProgram(QString::fromStdString(lstest::trainProgram()));
    QVERIFY(page.usesDemo());
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    QVERIFY2(page.problems().isEmpty(), qPrintable(page.problems().join('\n')));
    const auto config = page.runConfig();
    QVERIFY(config.has_value());
    QCOMPARE((*config)["demo"].get<bool>(), true);
    QVERIFY(!config->contains("model"));
    QVERIFY(QString::fromStdString((*config)["out"]).contains(QStringLiteral("/runs/demo-")));
  }

  // The demo's files come from `lorascope-train demo` (the window links no trainer): the page
  // inspects the folder it names, the one the trainer writes into the cache; without the program
  // the error names it.
  void theDemoComesFromTheTrainProgram() {
    app::RunSetupPage page;
    const QString missing = home_.filePath(QStringLiteral("no-such-lorascope-train"));
    page.setTrainProgram(missing);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    QVERIFY(!page.inspection().config.has_value());
    QVERIFY2(page.modelSummary().contains(QStringLiteral("The demo could not be prepared by ")) &&
                 page.modelSummary().contains(QDir::toNativeSeparators(missing)),
             qPrintable(page.modelSummary()));
    QVERIFY(!page.problems().isEmpty());
    page.setTrainProgram(QString::fromStdString(lstest::trainProgram()));
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    QVERIFY2(page.inspection().config.has_value(), qPrintable(page.modelSummary()));
    QCOMPARE(QFileInfo(page.inspection().dir).canonicalFilePath(),
             QFileInfo(demoModel_).canonicalFilePath());
    QVERIFY(page.validation().report.has_value());
    QVERIFY(!page.histogram()->bins().empty());  // validated with the demo's tokenizer
    QVERIFY2(page.memoryEstimateText().contains(QStringLiteral("peak on the CPU")),
             qPrintable(page.memoryEstimateText()));
  }

  void aMissingModelFolderIsAClearError() {
    app::RunSetupPage page;
    page.setDemo(false);
    page.setModelDir(home_.filePath(QStringLiteral("no-such-model")));
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    QVERIFY(!page.inspection().error.isEmpty());
    QVERIFY2(page.modelSummary().startsWith(QStringLiteral("Cannot use this model: ")),
             qPrintable(page.modelSummary()));
    QVERIFY(page.problems().join('\n').contains(QStringLiteral("Model: ")));
    QVERIFY(!page.runConfig().has_value());
  }

  // A run folder chosen as the model (its config.json is the run's) is named as a run, with the
  // model it trained on.
  void aRunFolderChosenAsTheModelIsNamedAsARun() {
    const QString run = home_.filePath(QStringLiteral("a-run"));
    QVERIFY(QDir().mkpath(run));
    QFile config(run + QStringLiteral("/config.json"));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(nlohmann::json{{"model_path", demoModel_.toStdString()}}.dump().c_str());
    config.close();
    app::RunSetupPage page;
    page.setDemo(false);
    page.setModelDir(run);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    QVERIFY2(page.inspection().error.contains(
                 QStringLiteral(" is a LoRAscope run, not a model folder (it trained on ") +
                 demoModel_ + QStringLiteral("): choose that model")),
             qPrintable(page.inspection().error));
    QVERIFY(!page.runConfig().has_value());
  }

  void aNamedRunFolderThatIsNotARunIsRefused() {
    // Issue 31 item 1: a run went into any existing folder (the model's own, /etc).
    QTemporaryDir runs;
    QVERIFY(runs.isValid());
    QVERIFY(QDir(runs.path()).mkpath(QStringLiteral("etc")));
    writeFile(runs.filePath(QStringLiteral("etc/passwd")), "root:x:0:0\n");
    app::RunSetupPage page;
    page.setDemo(false);
    page.setModelDir(demoModel_);
    writeFile(home_.filePath(QStringLiteral("one.jsonl")),
              "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n");
    page.setDataFile(home_.filePath(QStringLiteral("one.jsonl")));
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    page.setOutputDir(runs.path());
    page.runNameEditor()->setText(QStringLiteral("etc"));
    const QString problems = page.problems().join('\n');
    QVERIFY2(problems.contains(QStringLiteral("Output folder: ")) &&
                 problems.contains(runs.filePath(QStringLiteral("etc"))) &&
                 problems.contains(QStringLiteral("it holds passwd")),
             qPrintable(problems));
    QVERIFY(!page.runConfig().has_value());
    // The model's own folder is refused by name.
    page.setOutputDir(QFileInfo(demoModel_).path());
    page.runNameEditor()->setText(QFileInfo(demoModel_).fileName());
    QVERIFY2(page.problems().join('\n').contains(QStringLiteral("the model's folder")),
             qPrintable(page.problems().join('\n')));
    // A new or empty folder is fine.
    page.setOutputDir(runs.path());
    page.runNameEditor()->setText(QStringLiteral("fresh"));
    QVERIFY2(page.problems().isEmpty(), qPrintable(page.problems().join('\n')));
  }

  void aDatasetIsValidatedWithTheModelsTokenizer() {
    const QString data = home_.filePath(QStringLiteral("mixed.jsonl"));
    writeFile(data,
              "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n"
              "{\"instruction\": \"Count to three\", \"output\": \"one two three\"}\n"
              "{\"instruction\": broken\n");
    app::RunSetupPage page;
    page.setDemo(false);
    page.setModelDir(demoModel_);
    page.setDataFile(data);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    QVERIFY2(page.inspection().config.has_value(), qPrintable(page.inspection().error));
    QCOMPARE(page.inspection().parameters.total > 0, true);
    QVERIFY(page.validation().report.has_value());
    QCOMPARE(page.validation().report->validExamples, std::size_t{2});
    const QString summary = page.datasetSummary();
    QVERIFY2(summary.contains(QStringLiteral("2 valid examples")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("1 error")), qPrintable(summary));
    const QString issues = page.datasetIssuesText();
    QVERIFY2(issues.startsWith(QStringLiteral("error: invalid JSON at line 3, byte ")),
             qPrintable(issues));
    std::size_t binned = 0;
    for (const widgets::LengthBin& bin : page.histogram()->bins()) {
      binned += bin.examples;
    }
    QCOMPARE(binned, std::size_t{2});
    // A dataset with errors keeps Start disabled until they are fixed.
    QVERIFY2(page.problems().join('\n').contains(QStringLiteral("Dataset: 1 error to fix first")),
             qPrintable(page.problems().join('\n')));
    QVERIFY(!page.runConfig().has_value());
    writeFile(data,
              "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n"
              "{\"instruction\": \"Count to three\", \"output\": \"one two three\"}\n");
    page.setDataFile(data);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    QVERIFY(page.datasetIssuesText().isEmpty());
    const auto config = page.runConfig();
    QVERIFY2(config.has_value(), qPrintable(page.problems().join('\n')));
    QCOMPARE(QString::fromStdString((*config)["model"]), demoModel_);
    QCOMPARE(QString::fromStdString((*config)["data"]), data);
  }

  void everyIssueIsListed() {
    const QString data = home_.filePath(QStringLiteral("broken.jsonl"));
    writeFile(data,
              "{\"instruction\": broken\n"
              "{\"instruction\": \"Say hi\", \"output\": \"hi\"}\n"
              "not json at all\n"
              "{\"instruction\": \"x\", \"output\": \"y\"\n");
    app::RunSetupPage page;
    page.setDemo(false);
    page.setModelDir(demoModel_);
    page.setDataFile(data);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    const QStringList lines = page.datasetIssuesText().split('\n');
    QCOMPARE(lines.size(), 3);
    // Each as `validate-data` lists it: the severity, then the message naming its line once.
    QVERIFY2(lines[0].startsWith(QStringLiteral("error: invalid JSON at line 1, byte 16: ")),
             qPrintable(lines[0]));
    QVERIFY(lines[1].startsWith(QStringLiteral("error: invalid JSON at line 3, byte 66: ")));
    QVERIFY(lines[2].startsWith(QStringLiteral("error: invalid JSON at line 4, byte 115: ")));
    for (const QString& line : lines) {
      QCOMPARE(line.count(QStringLiteral("line ")), 1);
    }
    QVERIFY(!page.runConfig().has_value());
  }

  void aSequenceLongerThanTheModelsPositionsIsWarned() {
    app::RunSetupPage page;
    page.setDemo(false);
    page.setModelDir(demoModel_);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    const std::int64_t positions = page.inspection().config->maxPositionEmbeddings;
    QVERIFY(positions > 0);
    page.seqLenEditor()->setValue(static_cast<int>(positions));
    QVERIFY(page.sequenceLengthWarning().isEmpty());
    page.seqLenEditor()->setValue(static_cast<int>(positions) + 1);
    const QString warning = page.sequenceLengthWarning();
    QVERIFY2(warning.contains(
                 QStringLiteral("exceeds the model's max_position_embeddings %1").arg(positions)),
             qPrintable(warning));
  }

  void anUnreadableDatasetIsAClearError() {
    app::RunSetupPage page;
    page.setDemo(false);
    page.setModelDir(demoModel_);
    page.setDataFile(home_.filePath(QStringLiteral("absent.jsonl")));
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kTimeoutMs);
    QVERIFY(!page.validation().error.isEmpty());
    QVERIFY2(page.datasetSummary().startsWith(QStringLiteral("Cannot read this dataset: ")),
             qPrintable(page.datasetSummary()));
    QVERIFY(!page.runConfig().has_value());
  }

  void optionsAreWhatTheTrainerParses() {
    app::RunSetupPage page;
    page.setDemo(false);
    page.maxStepsEditor()->setValue(123);
    const std::map<std::string, std::string> options = page.options();
    for (const auto& [name, value] : options) {
      QVERIFY2(settings::registry().find(name) != nullptr, name.c_str());
    }
    job::TrainRunSettings settings = job::defaultSettings(false);
    job::applyOptions(settings, options);  // throws on a value the trainer rejects
    QCOMPARE(settings.train.maxSteps, std::int64_t{123});
    QCOMPARE(settings.train.lora.rank, job::defaultSettings(false).train.lora.rank);
    QCOMPARE(settings.train.lora.targets.size(), std::size_t{7});
  }

  // The option table reaches the page (an editor per option, its value in options()) and the
  // controls dock (a row per live option), in any order of application.
  void everyOptionHasAnEditorAndEveryLiveOneADockRow() {
    app::RunSetupPage page;
    const std::map<std::string, std::string> options = page.options();
    const std::vector<widgets::ControlSpec> rows = widgets::liveControls();
    for (const settings::Setting& option : settings::registry().all()) {
      const std::string& name = option.option.name;
      QVERIFY2(page.editor(name) != nullptr, name.c_str());
      QVERIFY2(options.count(name) == 1, name.c_str());
      const bool inDock = std::any_of(rows.begin(), rows.end(), [&](const auto& row) {
        return option.toggle && row.toggle == *option.toggle;
      });
      QVERIFY2(inDock == (option.apply == settings::Apply::Live), name.c_str());
    }
    widgets::ControlsPanel dock(rows);
    QVERIFY(dock.hasControl(engine::Toggle::MicroBatch));
    QVERIFY(!dock.hasControl(engine::Toggle::ActivationCheckpointing));
    // The page's options give the trainer the page's values whatever the order.
    std::vector<std::pair<std::string, std::string>> reversed(options.rbegin(), options.rend());
    job::TrainRunSettings a = job::defaultSettings(true), b = job::defaultSettings(true);
    job::applyOptions(a, options);
    job::applyOptions(b, reversed);
    QCOMPARE(job::settingsToJson(a).dump(), job::settingsToJson(b).dump());
  }

  // Group by length (a boolean of the table) is a check box on the setup page, off by default,
  // and checking it starts the run with --group-by-length.
  void groupByLengthIsACheckBoxOnTheSetupPage() {
    app::RunSetupPage page;
    page.setDemo(false);
    auto* box = qobject_cast<QCheckBox*>(page.editor("group-by-length"));
    QVERIFY(box != nullptr);
    QVERIFY(!box->isChecked());
    QCOMPARE(page.options().at("group-by-length"), std::string("false"));
    box->setChecked(true);
    QCOMPARE(page.options().at("group-by-length"), std::string("true"));
    job::TrainRunSettings settings = job::defaultSettings(false);
    job::applyOptions(settings, page.options());
    QVERIFY(settings.train.groupByLength);
    box->setChecked(false);  // nothing left for the remembered values of the next test
  }

  // Real-valued options are spin boxes with the table's range: the learning rate shows and
  // parses as the trainer does, steps by x2 over its decades, and takes a typed 1e-5.
  void realOptionsAreSpinBoxesWithTheTablesRange() {
    app::RunSetupPage page;
    page.setDemo(false);
    for (const settings::Setting& setting : settings::registry().all()) {
      const settings::OptionSpec& spec = setting.option;
      if (spec.type != settings::OptionType::Real) {
        continue;
      }
      auto* box = qobject_cast<QDoubleSpinBox*>(page.editor(spec.name));
      QVERIFY2(box != nullptr, spec.name.c_str());
      QCOMPARE(box->minimum(), spec.min);
      QCOMPARE(box->maximum(), spec.max);
    }
    auto* lr = qobject_cast<QDoubleSpinBox*>(page.editor("lr"));
    QCOMPARE(lr->value(), job::defaultSettings(false).train.adamw.learningRate);
    QCOMPARE(lr->text(), QStringLiteral("0.0002"));
    lr->stepBy(1);
    QCOMPARE(lr->value(), 4e-4);
    lr->selectAll();
    QTest::keyClicks(lr, QStringLiteral("1e-5"));
    lr->interpretText();
    QCOMPARE(lr->value(), 1e-5);
    job::TrainRunSettings settings = job::defaultSettings(false);
    job::applyOptions(settings, page.options());
    QCOMPARE(settings.train.adamw.learningRate, 1e-5);
    auto* dropout = qobject_cast<QDoubleSpinBox*>(page.editor("lora-dropout"));
    dropout->stepBy(1);
    QCOMPARE(dropout->value(), 0.01);  // a hundredth of its 0..0.9 range, rounded
  }

  void valuesAreRemembered() {
    {
      app::RunSetupPage page;
      page.setDemo(false);
      page.microBatchEditor()->setValue(3);
      page.saveSettings();
    }
    app::RunSetupPage again;
    QVERIFY(!again.usesDemo());
    QCOMPARE(again.microBatchEditor()->value(), 3);
  }

  // Packing was a check box ("true"/"false" remembered) before it grew the documents choice: a
  // remembered "true" shows causal, and documents is remembered as such.
  void packingRememberedAsABooleanShowsItsChoice() {
    {
      QSettings settings;
      settings.setValue(QStringLiteral("setup/demo"), false);
      settings.setValue(QStringLiteral("setup/options"),
                        QVariantMap{{QStringLiteral("packing"), QStringLiteral("true")}});
    }
    {
      app::RunSetupPage page;
      auto* packing = qobject_cast<QComboBox*>(page.editor("packing"));
      QVERIFY(packing != nullptr);
      QCOMPARE(packing->currentData().toString(), QStringLiteral("causal"));
      packing->setCurrentIndex(packing->findData(QStringLiteral("documents")));
      QCOMPARE(page.options().at("packing"), std::string("documents"));
      page.saveSettings();
    }
    app::RunSetupPage again;
    QCOMPARE(again.options().at("packing"), std::string("documents"));
  }

  // The GPUs field (--gpus) says why a group cannot form here (the engine's hello: the cpu
  // flavour, Windows) and takes no list; where it can, it is the registry's editor again.
  void gpusFieldSaysWhyNoGroupFormsHere() {
    app::RunSetupPage page;
    auto* gpus = qobject_cast<QLineEdit*>(page.editor("gpus"));
    QVERIFY(gpus != nullptr);
    gpus->setText(QStringLiteral("0,1"));
    const QString why = QStringLiteral(
        "training on several GPUs is Linux only: NCCL and RCCL have no Windows build");
    page.setGroupUnavailable(why);
    QVERIFY(!gpus->isEnabled());
    QVERIFY(gpus->toolTip().contains(why));
    QCOMPARE(page.options().at("gpus"), std::string());
    page.setGroupUnavailable(QString());
    QVERIFY(gpus->isEnabled());
    QVERIFY(gpus->toolTip().contains(QStringLiteral("one engine per GPU")));
  }

  void histogramCountsExamplesPastTheLimit() {
    widgets::LengthHistogram histogram;
    histogram.setBins({{16, 24, 5}, {24, 32, 3}, {32, 48, 2}, {48, 64, 1}});
    histogram.setMaxSeqLen(32);
    QCOMPARE(histogram.examplesPastLimit(), std::size_t{3});
    histogram.setMaxSeqLen(0);
    QCOMPARE(histogram.examplesPastLimit(), std::size_t{0});
  }

  void processesPageShowsWhoHoldsVram() {
    app::ProcessesPage page(/*live=*/false);
    page.setOurProcesses({100});
    page.setOurReservedBytes(2 * kGiB);
    telemetry::Snapshot gpu;
    telemetry::DeviceReading device;
    device.index = 0;
    device.vramTotalBytes = 80 * kGiB;
    device.vramUsedBytes = 10 * kGiB;
    gpu.devices.push_back(device);
    gpu.processes.push_back({100, 0, "lorascope-train", 3 * kGiB, {}, {}, {}});
    gpu.processes.push_back({200, 0, "python3", 6 * kGiB, {}, {}, {}});
    page.show({{"nvml", gpu}}, {});
    QCOMPARE(page.table()->rowCount(), 2);
    QCOMPARE(page.table()->item(0, 0)->text(), QStringLiteral("200"));  // largest first
    QCOMPARE(page.table()->item(0, 3)->text(), QStringLiteral("6.00 GiB"));
    QVERIFY(page.table()->item(1, 1)->text().contains(QStringLiteral("LoRAscope's engine")));
    const QString diagnosis = page.diagnosisText();
    QVERIFY2(diagnosis.contains(QStringLiteral("8.00 GiB are held outside this run")),
             qPrintable(diagnosis));
    QVERIFY2(diagnosis.contains(QStringLiteral("PID 200 python3")), qPrintable(diagnosis));
  }

  // A run on several GPUs: each device's diagnosis counts what this run reserved on that card.
  void processesPageCountsEachCardsReservation() {
    app::ProcessesPage page(/*live=*/false);
    page.setOurReservedBytes(1 * kGiB);  // an earlier run on one device: replaced below
    page.setOurReservedBytes(2 * kGiB, 0);
    page.setOurReservedBytes(5 * kGiB, 1);
    telemetry::Snapshot gpus = twoCards(10 * kGiB, 9 * kGiB);
    page.show({{"nvml", gpus}}, {});
    const QString diagnosis = page.diagnosisText();
    QVERIFY2(diagnosis.contains(QStringLiteral("8.00 GiB are held outside this run")),
             qPrintable(diagnosis));  // device 0: 10 − 2
    QVERIFY2(diagnosis.contains(QStringLiteral("4.00 GiB are held outside this run")),
             qPrintable(diagnosis));  // device 1: 9 − 5
  }

  // The window's own process tree is LoRAscope's: a group's rank engines (one per card) and Try
  // it's engine are marked, and no card's diagnosis names them as another process.
  void processesPageCountsEveryEngineOfTheWindowAsItsOwn() {
    app::ProcessesPage page(/*live=*/false);
    page.setOurProcesses({100, 101, 102});  // the window's tree: rank 0, rank 1, Try it's engine
    page.setOurReservedBytes(2 * kGiB, 0);
    page.setOurReservedBytes(2 * kGiB, 1);
    telemetry::Snapshot gpus = twoCards(3 * kGiB, 3 * kGiB);
    gpus.processes.push_back({100, 0, "lorascope-train", 2560 * kMiB, {}, {}, {}});
    gpus.processes.push_back({101, 1, "lorascope-train", 2560 * kMiB, {}, {}, {}});
    gpus.processes.push_back({102, 0, "lorascope-train", 256 * kMiB, {}, {}, {}});
    gpus.processes.push_back({200, 1, "python3", 256 * kMiB, {}, {}, {}});
    page.show({{"nvml", gpus}}, {});
    int marked = 0;
    for (int row = 0; row < page.table()->rowCount(); ++row)
      marked += page.table()->item(row, 1)->text().contains(QStringLiteral("LoRAscope's engine"));
    QCOMPARE(marked, 3);
    const QString diagnosis = page.diagnosisText();
    QVERIFY2(!diagnosis.contains(QStringLiteral("PID 100")) &&
                 !diagnosis.contains(QStringLiteral("PID 101")) &&
                 !diagnosis.contains(QStringLiteral("PID 102")),
             qPrintable(diagnosis));
    QVERIFY2(diagnosis.contains(QStringLiteral("PID 200 python3")), qPrintable(diagnosis));
    // Card 0: its two engines hold 2.75 GiB, 0.75 of it beyond the run's allocator.
    QVERIFY2(diagnosis.contains(QStringLiteral("This run's processes hold 768.00 MiB beyond")),
             qPrintable(diagnosis));
  }

  void processesPageSaysWhenThereIsNoGpu() {
    app::ProcessesPage page(/*live=*/false);
    telemetry::Snapshot host;
    host.host = telemetry::HostReading{16 * kGiB, 8 * kGiB, {}, {}, kGiB};
    page.show({{"host", host}}, {{"nvml", "libnvidia-ml.so.1 not found"}});
    QCOMPARE(page.table()->rowCount(), 0);
    QVERIFY(page.diagnosisText().contains(QStringLiteral("No GPU telemetry")));
  }
};

QTEST_MAIN(TestSetupProcesses)
#include "test_setup_processes.moc"
