// gui/RunSetupPage.cpp — the setup form, background inspection and validation, the config.
#include "gui/RunSetupPage.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QVBoxLayout>
#include <climits>

#include "data/Validator.h"        // defines: validateDataset
#include "gui/Background.h"        // defines: runInBackground
#include "job/TrainRunConfig.h"    // defines: defaultSettings
#include "model/MemoryEstimate.h"  // defines: estimateLoraTrainingMemory
#include "model/ModelFolder.h"     // defines: ModelFolder
#include "text/ChatTemplate.h"     // defines: ChatTemplate
#include "text/Tokenizer.h"        // defines: Tokenizer
#include "train/DemoDataset.h"     // defines: ensureDemoDataset
#include "train/DemoModel.h"       // defines: defaultCacheDir, ensureDemoModel
#include "widgets/Format.h"        // defines: formatBytes
#include "widgets/LengthHistogram.h"

namespace lorascope::app {

namespace {

const char* const kScheduleNames[] = {"constant", "linear", "cosine"};

// "1.24 B", "60.8 M", "32.9 K": a parameter count at a glance.
QString countText(std::int64_t count) {
  const double value = static_cast<double>(count);
  if (count >= 1'000'000'000) {
    return QStringLiteral("%1 B").arg(value / 1e9, 0, 'f', 2);
  }
  if (count >= 1'000'000) {
    return QStringLiteral("%1 M").arg(value / 1e6, 0, 'f', 1);
  }
  if (count >= 1'000) {
    return QStringLiteral("%1 K").arg(value / 1e3, 0, 'f', 1);
  }
  return QString::number(count);
}

// "1 error", "3 errors" (the app is not translated, so plurals are spelled out here).
QString counted(std::size_t count, const QString& one, const QString& many) {
  return QStringLiteral("%1 %2").arg(count).arg(count == 1 ? one : many);
}

QString defaultRunsDir() {
  return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) +
         QStringLiteral("/runs");
}

QSpinBox* spinBox(int min, int max, const QString& tip) {
  auto* box = new QSpinBox;
  box->setRange(min, max);
  box->setToolTip(tip);
  box->setAccelerated(true);
  return box;
}

// A line edit with a Browse… button that fills it from a file dialog.
QWidget* withBrowse(QLineEdit* edit, const std::function<QString()>& choose,
                    const std::function<void(const QString&)>& chosen) {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(edit, 1);
  auto* browse = new QPushButton(QObject::tr("Browse…"));
  layout->addWidget(browse);
  QObject::connect(browse, &QPushButton::clicked, edit, [choose, chosen] {
    const QString path = choose();
    if (!path.isEmpty()) {
      chosen(path);
    }
  });
  QObject::connect(edit, &QLineEdit::editingFinished, edit,
                   [edit, chosen] { chosen(edit->text().trimmed()); });
  return row;
}

ModelInspection inspectFolder(const QString& dir, bool demo) {
  ModelInspection out;
  out.dir = dir;
  try {
    const std::string path =
        demo ? train::ensureDemoModel(train::defaultCacheDir()).string() : dir.toStdString();
    out.dir = QString::fromStdString(path);
    const model::ModelFolder folder = model::ModelFolder::open(path);
    out.config = folder.config();
    out.weightBytes = folder.weightBytes();
    out.parameters = model::countParameters(folder.config());
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
  }
  return out;
}

DatasetValidation validateFile(const QString& file, bool demo, const QString& modelDir,
                               std::size_t maxSeqLen, const ReportProgress& report) {
  DatasetValidation out;
  out.file = file;
  try {
    const std::string path =
        demo ? train::ensureDemoDataset(train::defaultCacheDir()).string() : file.toStdString();
    out.file = QString::fromStdString(path);
    std::optional<data::ExampleEncoder> encoder;
    if (!modelDir.isEmpty()) {
      const std::filesystem::path dir = modelDir.toStdString();
      encoder.emplace(text::Tokenizer::fromModelDir(dir), text::ChatTemplate::forModelDir(dir));
    }
    data::ValidateOptions options;
    options.encode.maxSeqLen = maxSeqLen;
    options.encoder = encoder ? &*encoder : nullptr;
    options.progress = [&report](std::uint64_t read, std::uint64_t total) {
      report(total > 0 ? static_cast<int>(1000 * read / total) : 1000);
    };
    out.report = data::validateDataset(path, options);
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
  }
  return out;
}

}  // namespace

RunSetupPage::RunSetupPage(QWidget* parent) : QWidget(parent) {
  auto* content = new QWidget;
  auto* columns = new QGridLayout(content);
  columns->setColumnStretch(0, 3);
  columns->setColumnStretch(1, 2);

  auto* sourceBox = new QGroupBox(tr("What to train"));
  auto* sourceGrid = new QGridLayout(sourceBox);
  buildSourceBox(sourceGrid);
  columns->addWidget(sourceBox, 0, 0, 3, 1);
  columns->addWidget(buildLoraBox(), 0, 1);
  columns->addWidget(buildTrainingBox(), 1, 1);
  columns->addWidget(buildDeviceBox(), 2, 1);

  problems_ = new QLabel;
  problems_->setWordWrap(true);
  problems_->setStyleSheet(QStringLiteral("color: #c0392b; font-weight: bold"));
  auto* defaults = new QPushButton(tr("Restore defaults"));
  defaults->setToolTip(tr("The default settings of the chosen source (demo or own model)"));
  connect(defaults, &QPushButton::clicked, this, &RunSetupPage::restoreDefaults);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(problems_, 1);
  bottom->addWidget(defaults);
  columns->addLayout(bottom, 3, 0, 1, 2);
  columns->setRowStretch(4, 1);

  auto* scroll = new QScrollArea;
  scroll->setWidget(content);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll);

  restoreSettings();
}

void RunSetupPage::buildSourceBox(QGridLayout* grid) {
  demo_ = new QRadioButton(tr("Built-in &demo (a 3 M-parameter Llama and a small Alpaca set)"));
  demo_->setToolTip(tr("Trains in about a minute on the CPU; nothing to download"));
  own_ = new QRadioButton(tr("My &model and dataset"));
  auto* group = new QButtonGroup(this);
  group->addButton(demo_);
  group->addButton(own_);
  connect(demo_, &QRadioButton::clicked, this, [this] { setDemo(true); });
  connect(own_, &QRadioButton::clicked, this, [this] { setDemo(false); });

  modelEdit_ = new QLineEdit;
  modelEdit_->setPlaceholderText(
      tr("a Hugging Face folder: config.json, *.safetensors, tokenizer"));
  modelEdit_->setToolTip(tr("Inspected when chosen: architecture, parameters, memory estimate"));
  modelInfo_ = new QLabel;
  modelInfo_->setWordWrap(true);
  modelInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  dataEdit_ = new QLineEdit;
  dataEdit_->setPlaceholderText(tr("JSONL or a JSON array: alpaca, chat messages or text"));
  dataEdit_->setToolTip(tr("Validated when chosen, with the model's tokenizer"));
  dataInfo_ = new QLabel;
  dataInfo_->setWordWrap(true);
  dataInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setTextVisible(false);
  progress_->setMaximumHeight(8);
  progress_->hide();
  histogram_ = new widgets::LengthHistogram;
  outputEdit_ = new QLineEdit;
  outputEdit_->setToolTip(tr("Each run gets a folder of its own in here"));
  runName_ = new QLineEdit;
  runName_->setPlaceholderText(tr("automatic (source and start time)"));
  runName_->setToolTip(tr("The run folder's name; a new name is made for each start when empty"));
  estimate_ = new QLabel;
  estimate_->setWordWrap(true);
  estimate_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* form = new QFormLayout;
  form->addRow(demo_);
  form->addRow(own_);
  form->addRow(tr("Model folder"), withBrowse(
                                       modelEdit_,
                                       [this] {
                                         return QFileDialog::getExistingDirectory(
                                             this, tr("Model folder"), modelEdit_->text());
                                       },
                                       [this](const QString& dir) { setModelDir(dir); }));
  form->addRow(QString(), modelInfo_);
  form->addRow(tr("Dataset"), withBrowse(
                                  dataEdit_,
                                  [this] {
                                    return QFileDialog::getOpenFileName(
                                        this, tr("Dataset"), dataEdit_->text(),
                                        tr("Datasets (*.jsonl *.json);;All files (*)"));
                                  },
                                  [this](const QString& file) { setDataFile(file); }));
  form->addRow(QString(), progress_);
  form->addRow(QString(), dataInfo_);
  form->addRow(tr("Token lengths"), histogram_);
  form->addRow(tr("Output folder"), withBrowse(
                                        outputEdit_,
                                        [this] {
                                          return QFileDialog::getExistingDirectory(
                                              this, tr("Output folder"), outputEdit_->text());
                                        },
                                        [this](const QString& dir) { setOutputDir(dir); }));
  form->addRow(tr("Run name"), runName_);
  form->addRow(tr("Memory estimate"), estimate_);
  grid->addLayout(form, 0, 0);
  connect(runName_, &QLineEdit::textChanged, this, &RunSetupPage::changed);
}

QWidget* RunSetupPage::buildLoraBox() {
  auto* box = new QGroupBox(tr("LoRA"));
  auto* form = new QFormLayout(box);
  rank_ = spinBox(1, 1024, tr("The adapter's rank r: capacity and memory grow with it"));
  alpha_ = new QDoubleSpinBox;
  alpha_->setRange(0.01, 4096);
  alpha_->setToolTip(tr("The update is scaled by alpha / r (alpha / √r with rsLoRA)"));
  dropout_ = new QDoubleSpinBox;
  dropout_->setRange(0, 0.9);
  dropout_->setSingleStep(0.05);
  dropout_->setToolTip(tr("Dropout on the adapter's input during training"));
  form->addRow(tr("Rank r"), rank_);
  form->addRow(tr("Alpha"), alpha_);
  form->addRow(tr("Dropout"), dropout_);
  auto* targets = new QWidget;
  auto* targetsLayout = new QGridLayout(targets);
  targetsLayout->setContentsMargins(0, 0, 0, 0);
  int column = 0;
  for (train::LoraModule module : train::kAllLoraModules) {
    auto* check = new QCheckBox(QString::fromLatin1(train::shortName(module)));
    check->setToolTip(QString::fromLatin1(train::modulePath(module)));
    targets_[train::shortName(module)] = check;
    targetsLayout->addWidget(check, column / 4, column % 4);
    ++column;
    connect(check, &QCheckBox::toggled, this, &RunSetupPage::updateProblems);
  }
  form->addRow(tr("Targets"), targets);
  connect(rank_, &QSpinBox::valueChanged, this, &RunSetupPage::updateEstimate);
  return box;
}

QWidget* RunSetupPage::buildTrainingBox() {
  auto* box = new QGroupBox(tr("Training"));
  auto* form = new QFormLayout(box);
  lr_ = new QLineEdit;
  lr_->setToolTip(tr("Peak learning rate of AdamW, e.g. 2e-4"));
  connect(lr_, &QLineEdit::textChanged, this, &RunSetupPage::updateProblems);
  schedule_ = new QComboBox;
  for (const char* name : kScheduleNames) {
    schedule_->addItem(QString::fromLatin1(name));
  }
  schedule_->setToolTip(tr("How the rate falls after warmup"));
  warmup_ = spinBox(0, 1'000'000, tr("Optimizer steps of linear warmup"));
  epochs_ = spinBox(1, 10'000, tr("Passes over the dataset (when max steps is 0)"));
  maxSteps_ = spinBox(0, 100'000'000, tr("Optimizer steps; 0 = run the epochs to the end"));
  maxSteps_->setSpecialValueText(tr("by epochs"));
  microBatch_ = spinBox(1, 4096, tr("Sequences per forward/backward pass (live: Controls)"));
  accumulation_ = spinBox(1, 4096, tr("Micro-batches per optimizer step"));
  effectiveBatch_ = new QLabel;
  seqLen_ = spinBox(16, 1 << 20, tr("Longer examples are truncated"));
  seqLen_->setSingleStep(128);
  checkpointing_ = new QCheckBox(tr("Activation checkpointing"));
  checkpointing_->setToolTip(
      tr("Recompute activations in the backward pass: less memory, ~30% "
         "more compute"));
  packing_ = new QCheckBox(tr("Pack short examples"));
  packing_->setToolTip(tr("Several examples per sequence, no padding"));
  seed_ = spinBox(0, INT_MAX, tr("Seeds the adapter's initialisation and the data order"));
  checkpointEvery_ = spinBox(0, 1'000'000, tr("Write a checkpoint every N steps; 0 = at the end"));
  checkpointEvery_->setSpecialValueText(tr("at the end"));
  form->addRow(tr("Learning rate"), lr_);
  form->addRow(tr("Schedule"), schedule_);
  form->addRow(tr("Warmup steps"), warmup_);
  form->addRow(tr("Epochs"), epochs_);
  form->addRow(tr("Max steps"), maxSteps_);
  form->addRow(tr("Micro-batch"), microBatch_);
  form->addRow(tr("Accumulation"), accumulation_);
  form->addRow(tr("Effective batch"), effectiveBatch_);
  form->addRow(tr("Sequence length"), seqLen_);
  form->addRow(tr("Checkpoint every"), checkpointEvery_);
  form->addRow(tr("Seed"), seed_);
  form->addRow(checkpointing_);
  form->addRow(packing_);
  for (QSpinBox* editor : {microBatch_, accumulation_, seqLen_}) {
    connect(editor, &QSpinBox::valueChanged, this, &RunSetupPage::updateEstimate);
  }
  connect(seqLen_, &QSpinBox::editingFinished, this, &RunSetupPage::validateDataset);
  return box;
}

QWidget* RunSetupPage::buildDeviceBox() {
  auto* box = new QGroupBox(tr("Device and profile"));
  auto* form = new QFormLayout(box);
  device_ = new QComboBox;
  device_->addItem(tr("CPU"), QStringLiteral("cpu"));
  profile_ = new QComboBox;
  profile_->setToolTip(tr("The engine's environment; switching restarts it (see the profile bar)"));
  connect(profile_, &QComboBox::activated, this,
          [this](int index) { emit profileChosen(profile_->itemText(index)); });
  form->addRow(tr("Device"), device_);
  form->addRow(tr("Profile"), profile_);
  return box;
}

void RunSetupPage::setDevices(const QStringList& gpus, bool canTrainOnGpu) {
  while (device_->count() > 1) {
    device_->removeItem(1);
  }
  auto* model = qobject_cast<QStandardItemModel*>(device_->model());
  for (int i = 0; i < gpus.size(); ++i) {
    device_->addItem(gpus[i], QStringLiteral("gpu"));
    if (!canTrainOnGpu && model != nullptr) {
      QStandardItem* item = model->item(device_->count() - 1);
      item->setEnabled(false);
      item->setToolTip(tr("This build trains on the CPU only"));
    }
  }
}

void RunSetupPage::setProfiles(const QStringList& names, const QString& current) {
  profile_->clear();
  profile_->addItems(names);
  profile_->setCurrentText(current);
}

bool RunSetupPage::usesDemo() const {
  return demo_->isChecked();
}

void RunSetupPage::setDemo(bool demo) {
  demo_->setChecked(demo);
  own_->setChecked(!demo);
  modelEdit_->setEnabled(!demo);
  dataEdit_->setEnabled(!demo);
  restoreDefaults();
  inspectModel();
}

void RunSetupPage::setModelDir(const QString& dir) {
  modelEdit_->setText(dir);
  inspectModel();
}

void RunSetupPage::setDataFile(const QString& file) {
  dataEdit_->setText(file);
  validateDataset();
}

void RunSetupPage::setOutputDir(const QString& dir) {
  outputEdit_->setText(dir);
  updateProblems();
}

void RunSetupPage::restoreDefaults() {
  const job::TrainRunSettings s = job::defaultSettings(usesDemo());
  const train::TrainConfig& t = s.train;
  rank_->setValue(t.lora.rank);
  alpha_->setValue(t.lora.alpha);
  dropout_->setValue(t.lora.dropout);
  for (const auto& [name, check] : targets_) {
    const train::LoraModule module = *train::parseLoraTargets(name).begin();
    check->setChecked(t.lora.targets.count(module) > 0);
  }
  lr_->setText(QString::number(t.adamw.learningRate, 'g', 6));
  schedule_->setCurrentText(QString::fromLatin1(train::toString(t.schedule)));
  warmup_->setValue(static_cast<int>(t.warmupSteps));
  epochs_->setValue(static_cast<int>(t.epochs));
  maxSteps_->setValue(static_cast<int>(t.maxSteps));
  microBatch_->setValue(static_cast<int>(t.microBatchSize));
  accumulation_->setValue(static_cast<int>(t.gradAccumulation));
  seqLen_->setValue(static_cast<int>(t.maxSeqLen));
  checkpointing_->setChecked(t.activationCheckpointing);
  packing_->setChecked(t.packing);
  seed_->setValue(static_cast<int>(t.seed));
  checkpointEvery_->setValue(static_cast<int>(s.checkpointEvery));
  device_->setCurrentIndex(0);
  updateEstimate();
}

void RunSetupPage::restoreSettings() {
  QSettings settings;
  settings.beginGroup(QStringLiteral("setup"));
  outputEdit_->setText(settings.value(QStringLiteral("out"), defaultRunsDir()).toString());
  modelEdit_->setText(settings.value(QStringLiteral("model")).toString());
  dataEdit_->setText(settings.value(QStringLiteral("data")).toString());
  const bool demo = settings.value(QStringLiteral("demo"), true).toBool();
  const QVariant saved = settings.value(QStringLiteral("options"));
  settings.endGroup();
  setDemo(demo);  // the source's defaults, then what was saved over them
  const QVariantMap options = saved.toMap();
  auto number = [&](const char* key, QSpinBox* box) {
    if (options.contains(QLatin1String(key))) {
      box->setValue(options.value(QLatin1String(key)).toInt());
    }
  };
  number("lora-r", rank_);
  number("warmup", warmup_);
  number("epochs", epochs_);
  number("steps", maxSteps_);
  number("batch-size", microBatch_);
  number("grad-accum", accumulation_);
  number("max-seq-len", seqLen_);
  number("seed", seed_);
  number("checkpoint-every", checkpointEvery_);
  if (options.contains(QStringLiteral("lora-alpha"))) {
    alpha_->setValue(options.value(QStringLiteral("lora-alpha")).toDouble());
  }
  if (options.contains(QStringLiteral("lora-dropout"))) {
    dropout_->setValue(options.value(QStringLiteral("lora-dropout")).toDouble());
  }
  if (options.contains(QStringLiteral("lr"))) {
    lr_->setText(options.value(QStringLiteral("lr")).toString());
  }
  if (options.contains(QStringLiteral("schedule"))) {
    schedule_->setCurrentText(options.value(QStringLiteral("schedule")).toString());
  }
  if (options.contains(QStringLiteral("targets"))) {
    const QStringList chosen = options.value(QStringLiteral("targets")).toString().split(',');
    for (const auto& [name, check] : targets_) {
      check->setChecked(chosen.contains(QString::fromStdString(name)));
    }
  }
  checkpointing_->setChecked(
      options.value(QStringLiteral("activation-checkpointing"), checkpointing_->isChecked())
          .toBool());
  packing_->setChecked(options.value(QStringLiteral("packing"), packing_->isChecked()).toBool());
}

void RunSetupPage::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("setup"));
  settings.setValue(QStringLiteral("demo"), usesDemo());
  settings.setValue(QStringLiteral("model"), modelEdit_->text());
  settings.setValue(QStringLiteral("data"), dataEdit_->text());
  settings.setValue(QStringLiteral("out"), outputEdit_->text());
  QVariantMap options;
  for (const auto& [name, value] : this->options()) {
    options.insert(QString::fromStdString(name), QString::fromStdString(value));
  }
  settings.setValue(QStringLiteral("options"), options);
  settings.endGroup();
}

QString RunSetupPage::effectiveModelDir() const {
  return usesDemo() ? inspection_.dir : modelEdit_->text().trimmed();
}

void RunSetupPage::inspectModel() {
  const bool demo = usesDemo();
  const QString dir = modelEdit_->text().trimmed();
  const int generation = ++inspectGeneration_;
  inspection_ = ModelInspection{dir, std::nullopt, 0, {}, QString()};
  if (!demo && dir.isEmpty()) {
    inspecting_ = false;
    showInspection();
    validateDataset();
    return;
  }
  inspecting_ = true;
  modelInfo_->setText(tr("Inspecting %1 …").arg(demo ? tr("the demo model") : dir));
  updateProblems();
  runInBackground<ModelInspection>(
      this, [dir, demo](const ReportProgress&) { return inspectFolder(dir, demo); }, [](int) {},
      [this, generation](ModelInspection result) {
        if (generation != inspectGeneration_) {
          return;  // the choice changed while this ran
        }
        inspecting_ = false;
        inspection_ = std::move(result);
        showInspection();
        validateDataset();  // with this model's tokenizer
      });
}

void RunSetupPage::validateDataset() {
  const bool demo = usesDemo();
  const QString file = dataEdit_->text().trimmed();
  const QString modelDir = inspection_.config ? inspection_.dir : QString();
  const auto maxSeqLen = static_cast<std::size_t>(seqLen_->value());
  const int generation = ++validateGeneration_;
  validation_ = DatasetValidation{file, std::nullopt, QString()};
  histogram_->setBins({});
  if (!demo && file.isEmpty()) {
    validating_ = false;
    showValidation();
    return;
  }
  if (inspecting_) {
    validating_ = false;  // validated when the model (its tokenizer) is known
    dataInfo_->setText(tr("Waiting for the model's tokenizer …"));
    updateProblems();
    return;
  }
  validating_ = true;
  progress_->setValue(0);
  progress_->show();
  dataInfo_->setText(tr("Validating %1 …").arg(demo ? tr("the demo dataset") : file));
  updateProblems();
  runInBackground<DatasetValidation>(
      this,
      [file, demo, modelDir, maxSeqLen](const ReportProgress& report) {
        return validateFile(file, demo, modelDir, maxSeqLen, report);
      },
      [this, generation](int permille) {
        if (generation == validateGeneration_) {
          progress_->setValue(permille);
        }
      },
      [this, generation](DatasetValidation result) {
        if (generation != validateGeneration_) {
          return;
        }
        validating_ = false;
        validation_ = std::move(result);
        showValidation();
      });
}

QString RunSetupPage::modelSummary() const {
  if (!inspection_.error.isEmpty()) {
    return tr("Cannot use this model: %1").arg(inspection_.error);
  }
  if (!inspection_.config) {
    return usesDemo() || !modelEdit_->text().trimmed().isEmpty() ? QString()
                                                                 : tr("No model folder chosen.");
  }
  const model::ModelConfig& c = *inspection_.config;
  return tr("%1 · %2 parameters · %3 layers, hidden %4, %5 heads (%6 KV), vocabulary %7 · "
            "weights %8 (%9)")
      .arg(QString::fromStdString(c.modelType), countText(inspection_.parameters.total))
      .arg(c.numLayers)
      .arg(c.hiddenSize)
      .arg(c.numHeads)
      .arg(c.numKvHeads)
      .arg(c.vocabSize)
      .arg(widgets::formatBytes(inspection_.weightBytes),
           c.storedDtype.empty() ? tr("dtype not stated") : QString::fromStdString(c.storedDtype));
}

QString RunSetupPage::datasetSummary() const {
  if (!validation_.error.isEmpty()) {
    return tr("Cannot read this dataset: %1").arg(validation_.error);
  }
  if (!validation_.report) {
    return usesDemo() || !dataEdit_->text().trimmed().isEmpty() ? QString()
                                                                : tr("No dataset chosen.");
  }
  const data::ValidationReport& r = *validation_.report;
  std::size_t errors = 0;
  for (const auto& [kind, count] : r.errorCounts) {
    errors += count;
  }
  std::size_t warnings = 0;
  for (const auto& [kind, count] : r.warningCounts) {
    warnings += count;
  }
  QString text = tr("%1 · %2 · %3, %4, %5, %6")
                     .arg(QFileInfo(QString::fromStdString(r.file)).fileName(),
                          widgets::formatBytes(r.fileBytes),
                          counted(r.validExamples, tr("valid example"), tr("valid examples")),
                          counted(errors, tr("error"), tr("errors")),
                          counted(warnings, tr("warning"), tr("warnings")),
                          counted(r.duplicateExamples, tr("duplicate"), tr("duplicates")));
  if (r.tokens) {
    const data::TokenReport& t = *r.tokens;
    text += tr("\nTokens per example: median %1, p90 %2, p99 %3, max %4 · template %5 · "
               "%6 over max_seq_len %7")
                .arg(t.lengths.p50Tokens)
                .arg(t.lengths.p90Tokens)
                .arg(t.lengths.p99Tokens)
                .arg(t.lengths.maxTokens)
                .arg(QString::fromStdString(t.chatTemplate),
                     counted(t.examplesOverMax, tr("example"), tr("examples")))
                .arg(t.options.maxSeqLen);
  } else {
    text += tr("\nChoose a model to see token lengths (its tokenizer counts them).");
  }
  if (!r.issues.empty()) {
    const data::DatasetIssue& first = r.issues.front();
    text += tr("\nFirst issue: %1").arg(QString::fromStdString(first.message));
  }
  return text;
}

void RunSetupPage::showInspection() {
  modelInfo_->setText(modelSummary());
  modelInfo_->setStyleSheet(inspection_.error.isEmpty() ? QString()
                                                        : QStringLiteral("color: #c0392b"));
  updateEstimate();
}

void RunSetupPage::showValidation() {
  progress_->hide();
  dataInfo_->setText(datasetSummary());
  dataInfo_->setStyleSheet(validation_.error.isEmpty() ? QString()
                                                       : QStringLiteral("color: #c0392b"));
  std::vector<widgets::LengthBin> bins;
  if (validation_.report && validation_.report->tokens) {
    for (const data::HistogramBin& bin : validation_.report->tokens->lengths.histogram) {
      bins.push_back({bin.fromTokens, bin.toTokens, bin.examples});
    }
  }
  histogram_->setBins(std::move(bins));
  updateProblems();
}

QString RunSetupPage::memoryEstimateText() const {
  if (!inspection_.config) {
    return QString();
  }
  model::LoraTrainingPlan plan;
  plan.batch = microBatch_->value();
  plan.seq = seqLen_->value();
  plan.rank = rank_->value();
  const model::MemoryEstimate m =
      model::estimateLoraTrainingMemory(*inspection_.config, inspection_.weightBytes, plan);
  using widgets::formatBytes;
  return tr("<b>%1</b> at micro-batch %2 × %3 tokens, r %4 on all seven projections: weights %5, "
            "LoRA %6 (%7 parameters), gradients %8, optimizer %9, activations %10, logits %11")
      .arg(formatBytes(m.totalBytes))
      .arg(plan.batch)
      .arg(plan.seq)
      .arg(plan.rank)
      .arg(formatBytes(m.weightsBytes), formatBytes(m.loraBytes), countText(m.loraParameters),
           formatBytes(m.loraGradBytes), formatBytes(m.optimizerBytes),
           formatBytes(m.activationBytes), formatBytes(m.logitsBytes));
}

void RunSetupPage::updateEstimate() {
  estimate_->setText(memoryEstimateText());
  effectiveBatch_->setText(
      tr("%1 sequences per step").arg(microBatch_->value() * accumulation_->value()));
  histogram_->setMaxSeqLen(static_cast<std::size_t>(seqLen_->value()));
  updateProblems();
}

QStringList RunSetupPage::problems() const {
  QStringList out;
  if (!usesDemo()) {
    if (modelEdit_->text().trimmed().isEmpty()) {
      out << tr("Choose a model folder.");
    }
    if (dataEdit_->text().trimmed().isEmpty()) {
      out << tr("Choose a dataset file.");
    }
  }
  if (!inspection_.error.isEmpty()) {
    out << tr("Model: %1").arg(inspection_.error);
  }
  if (!validation_.error.isEmpty()) {
    out << tr("Dataset: %1").arg(validation_.error);
  } else if (validation_.report && validation_.report->validExamples == 0) {
    out << tr("Dataset: no valid example to train on.");
  }
  if (outputEdit_->text().trimmed().isEmpty()) {
    out << tr("Choose an output folder.");
  }
  bool numberOk = false;
  const double lr = lr_->text().toDouble(&numberOk);
  if (!numberOk || lr <= 0) {
    out << tr("The learning rate must be a positive number (e.g. 2e-4), not '%1'.")
               .arg(lr_->text());
  }
  bool anyTarget = false;
  for (const auto& [name, check] : targets_) {
    anyTarget = anyTarget || check->isChecked();
  }
  if (!anyTarget) {
    out << tr("Choose at least one LoRA target.");
  }
  return out;
}

void RunSetupPage::updateProblems() {
  problems_->setText(problems().join(QLatin1Char('\n')));
  emit changed();
}

std::map<std::string, std::string> RunSetupPage::options() const {
  auto text = [](auto value) { return std::to_string(value); };
  std::string targets;
  for (train::LoraModule module : train::kAllLoraModules) {
    if (targets_.at(train::shortName(module))->isChecked()) {
      targets += (targets.empty() ? "" : ",") + std::string(train::shortName(module));
    }
  }
  std::map<std::string, std::string> o = {
      {"lora-r", text(rank_->value())},
      {"lora-alpha", QString::number(alpha_->value(), 'g', 6).toStdString()},
      {"lora-dropout", QString::number(dropout_->value(), 'g', 6).toStdString()},
      {"targets", targets},
      {"lr", lr_->text().trimmed().toStdString()},
      {"schedule", schedule_->currentText().toStdString()},
      {"warmup", text(warmup_->value())},
      {"epochs", text(epochs_->value())},
      {"batch-size", text(microBatch_->value())},
      {"grad-accum", text(accumulation_->value())},
      {"max-seq-len", text(seqLen_->value())},
      {"activation-checkpointing", checkpointing_->isChecked() ? "true" : "false"},
      {"packing", packing_->isChecked() ? "true" : "false"},
      {"seed", text(seed_->value())},
      {"checkpoint-every", text(checkpointEvery_->value())},
      {"device", device_->currentData().toString().toStdString()},
  };
  // "epochs" resets the step limit, and the engine applies options in name order: steps last.
  if (maxSteps_->value() > 0) {
    o["steps"] = text(maxSteps_->value());
  }
  return o;
}

std::optional<nlohmann::json> RunSetupPage::runConfig() const {
  if (!problems().isEmpty()) {
    return std::nullopt;
  }
  QString name = runName_->text().trimmed();
  if (name.isEmpty()) {
    const QString source =
        usesDemo() ? QStringLiteral("demo")
                   : QFileInfo(modelEdit_->text().trimmed()).fileName().replace(' ', '_');
    name = source + QLatin1Char('-') +
           QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
  }
  nlohmann::json options = nlohmann::json::object();
  for (const auto& [key, value] : this->options()) {
    options[key] = value;
  }
  nlohmann::json config = {
      {"out", QDir(outputEdit_->text().trimmed()).filePath(name).toStdString()},
      {"options", options}};
  if (usesDemo()) {
    config["demo"] = true;
  } else {
    config["model"] = modelEdit_->text().trimmed().toStdString();
    config["data"] = dataEdit_->text().trimmed().toStdString();
  }
  return config;
}

}  // namespace lorascope::app
