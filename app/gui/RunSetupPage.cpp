// gui/RunSetupPage.cpp — the setup form, background inspection and validation, the config.
#include "gui/RunSetupPage.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStyle>
#include <QVBoxLayout>
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "data/Validator.h"  // defines: validateDataset
#include "gui/AppPaths.h"    // defines: defaultRunsDir, engineProgram, legacyRunsDir
#include "gui/Background.h"  // defines: runInBackground
#include "gui/CommandSetup.h"
#include "gui/SettingsForm.h"
#include "model/MemoryEstimate.h"      // defines: estimateTrainingMemory, shapeOnDevice
#include "model/ModelFolder.h"         // defines: ModelFolder
#include "model/Projections.h"         // defines: kProjectionNames
#include "model/WeightQuantization.h"  // defines: placedWeightBytes, WeightQuantization
#include "runs/RunFileError.h"
#include "runs/RunFolder.h"       // defines: checkOutputFolder, unusedFolder, runModelPath
#include "settings/Registry.h"    // defines: registry (the run settings)
#include "text/ChatTemplate.h"    // defines: ChatTemplate
#include "text/Tokenizer.h"       // defines: Tokenizer
#include "widgets/DisplayText.h"  // defines: formatBytes, pathToQString, toPath
#include "widgets/LengthHistogram.h"

namespace lorascope::app {

namespace {

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
using widgets::counted;

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

// The built-in demo's model folder and dataset, as `lorascope-train demo --json` writes them into
// the cache (when absent) and names them: the demo base is assembled by the trainer, which the
// window does not link. Throws std::runtime_error naming the program and what went wrong.
struct DemoFiles {
  std::string model;
  std::string data;
};

DemoFiles demoFiles(const QString& trainProgram) {
  constexpr int kTimeoutMs = 300'000;  // the first assembly takes about a second
  QProcess process;
  process.start(trainProgram, {QStringLiteral("demo"), QStringLiteral("--json")});
  const auto fail = [&trainProgram](const QString& why) {
    return std::runtime_error(QObject::tr("The demo could not be prepared by %1 demo: %2")
                                  .arg(QDir::toNativeSeparators(trainProgram), why.trimmed())
                                  .toStdString());
  };
  if (!process.waitForStarted(kTimeoutMs)) {
    throw fail(process.errorString());
  }
  if (!process.waitForFinished(kTimeoutMs)) {
    process.kill();
    process.waitForFinished();
    throw fail(QObject::tr("no answer after %1 s").arg(kTimeoutMs / 1000));
  }
  const QString errors = QString::fromUtf8(process.readAllStandardError());
  if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
    throw fail(errors.isEmpty() ? QObject::tr("it ended with exit code %1").arg(process.exitCode())
                                : errors);
  }
  const QByteArray answer = process.readAllStandardOutput();
  try {
    const nlohmann::json files = nlohmann::json::parse(answer.toStdString());
    return {files.at("model").get<std::string>(), files.at("data").get<std::string>()};
  } catch (const nlohmann::json::exception& e) {
    throw fail(QObject::tr("its answer is not {\"model\": DIR, \"data\": FILE} (%1): %2")
                   .arg(QString::fromUtf8(e.what()), QString::fromUtf8(answer.left(200))));
  }
}

ModelInspection inspectFolder(const QString& dir, bool demo, const QString& trainProgram) {
  ModelInspection out;
  out.dir = dir;
  try {
    const std::string path = demo ? demoFiles(trainProgram).model : dir.toStdString();
    out.dir = QString::fromStdString(path);
    // A run's config.json is no model's: say what the folder is and what to choose.
    if (const std::optional<std::string> base = runs::runModelPath(common::pathFromUtf8(path))) {
      throw std::invalid_argument(path + " is a LoRAscope run, not a model folder (it trained on " +
                                  *base + "): choose that model");
    }
    // A folder, or a Hugging Face id found offline in the hub cache (its snapshot folder).
    const model::ModelFolder folder = model::ModelFolder::open(path);
    out.dir = QString::fromStdString(folder.dir());
    out.config = folder.config();
    out.weightBytes = folder.weightBytes();
    out.nf4GpuWeightBytes =
        model::placedWeightBytes(folder, compute::Device::Gpu, model::WeightQuantization::Nf4);
    out.nf4CpuWeightBytes =
        model::placedWeightBytes(folder, compute::Device::Cpu, model::WeightQuantization::Nf4);
    out.parameters = model::countParameters(folder.config());
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
  }
  return out;
}

DatasetValidation validateFile(const QString& file, bool demo, const QString& trainProgram,
                               const QString& modelDir, std::size_t maxSeqLen,
                               const ReportProgress& report) {
  DatasetValidation out;
  out.file = file;
  try {
    const std::string path = demo ? demoFiles(trainProgram).data : file.toStdString();
    out.file = QString::fromStdString(path);
    std::optional<data::ExampleEncoder> encoder;
    if (!modelDir.isEmpty()) {
      const std::filesystem::path dir = widgets::toPath(modelDir);
      encoder.emplace(text::Tokenizer::fromModelDir(dir), text::ChatTemplate::forModelDir(dir));
    }
    data::ValidateOptions options;
    options.encode.maxSeqLen = maxSeqLen;
    options.encoder = encoder ? &*encoder : nullptr;
    options.progress = [&report](std::uint64_t read, std::uint64_t total) {
      report(total > 0 ? static_cast<int>(1000 * read / total) : 1000);
    };
    out.report = data::validateDataset(common::pathFromUtf8(path), options);
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
  }
  return out;
}

}  // namespace

RunSetupPage::RunSetupPage(QWidget* parent) : QWidget(parent), trainProgram_(engineProgram()) {
  auto* content = new QWidget;
  auto* columns = new QGridLayout(content);
  columns_ = columns;

  auto* sourceBox = new QGroupBox(tr("What to train"));
  auto* sourceGrid = new QGridLayout(sourceBox);
  buildSourceBox(sourceGrid);
  // The settings registry's groups: LoRA, Training, Evaluation, Checkpoints, Device; the profile
  // is a choice of the profiles this window knows (setProfiles), not free text, and choosing one
  // switches the engine's profile (the profile bar's buttons do the same).
  profile_ = new QComboBox;
  form_ = new SettingsForm({{"profile", profile_}});
  profile_->setToolTip(profile_->toolTip() +
                       tr(" Choosing one switches the engine to it now; it restarts when the "
                          "environment differs."));
  connect(profile_, &QComboBox::activated, this,
          [this](int index) { emit profileChosen(profile_->itemText(index)); });
  connect(profile_, &QComboBox::currentIndexChanged, this, [this] {
    updateProfileNote();
    updateEstimate();  // the profile's micro-batch and checkpointing are the run's
  });
  connect(form_, &SettingsForm::edited, this, &RunSetupPage::updateEstimate);
  effectiveBatch_ = new QLabel;
  effectiveBatch_->setObjectName(QStringLiteral("setupEffectiveBatch"));
  form_->addRowBelow("grad-accum", tr("Effective batch"), effectiveBatch_);
  profileNote_ = new QLabel;
  profileNote_->setObjectName(QStringLiteral("profileNote"));
  profileNote_->setWordWrap(true);
  form_->addRowBelow("profile", QString(), profileNote_);
  seqLenEditor()->setSingleStep(128);
  setDevices({}, false);  // one "gpu" entry per GPU, from setDevices
  QWidget* optionsPanel = form_;
  boxes_ = {sourceBox, optionsPanel};
  placeBoxes(true);
  connect(seqLenEditor(), &QSpinBox::editingFinished, this, &RunSetupPage::validateDataset);

  problems_ = new QLabel;
  problems_->setWordWrap(true);
  problems_->setStyleSheet(QStringLiteral("color: #c0392b; font-weight: bold"));
  auto* defaults = new QPushButton(tr("Restore defaults"));
  defaults->setToolTip(tr("The default settings of the chosen source (demo or own model)"));
  connect(defaults, &QPushButton::clicked, this, &RunSetupPage::restoreDefaults);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(problems_, 1);
  bottom->addWidget(defaults);
  columns->addLayout(bottom, 6, 0, 1, 2);
  columns->setRowStretch(7, 1);

  auto* scroll = new QScrollArea;
  scroll->setWidget(content);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll);

  restoreSettings();
}

// Two columns (what to train | the settings) where they fit side by side, else one below the
// other, so that the page never needs horizontal scrolling (a 1024 px window with the dock).
void RunSetupPage::placeBoxes(bool twoColumns) {
  twoColumns_ = twoColumns;
  for (QWidget* box : boxes_) {
    columns_->removeWidget(box);
  }
  if (twoColumns) {
    columns_->addWidget(boxes_[0], 0, 0, 3, 1);
    columns_->addWidget(boxes_[1], 0, 1, 3, 1);
    columns_->setColumnStretch(0, 3);
    columns_->setColumnStretch(1, 2);
  } else {
    columns_->addWidget(boxes_[0], 0, 0, 1, 2);
    columns_->addWidget(boxes_[1], 1, 0, 1, 2);
    columns_->setColumnStretch(0, 1);
    columns_->setColumnStretch(1, 0);
  }
}

void RunSetupPage::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const QMargins m = columns_->contentsMargins();
  const int twoColumnWidth = boxes_[0]->minimumSizeHint().width() +
                             boxes_[1]->minimumSizeHint().width() + columns_->horizontalSpacing() +
                             m.left() + m.right() +
                             style()->pixelMetric(QStyle::PM_ScrollBarExtent);
  const bool two = event->size().width() >= twoColumnWidth;
  if (two != twoColumns_) {
    placeBoxes(two);
  }
}

void RunSetupPage::buildSourceBox(QGridLayout* grid) {
  demo_ =
      new QRadioButton(tr("Built-in &demo (a pretrained 3 M-parameter Llama learns upper case)"));
  demo_->setToolTip(tr("Trains in about a minute on the CPU; nothing to download"));
  own_ = new QRadioButton(tr("My &model and dataset"));
  auto* group = new QButtonGroup(this);
  group->addButton(demo_);
  group->addButton(own_);
  connect(demo_, &QRadioButton::clicked, this, [this] { setDemo(true); });
  connect(own_, &QRadioButton::clicked, this, [this] { setDemo(false); });
  command_ = new QRadioButton(tr("Run a &command (a trainer of your own, supervised)"));
  command_->setToolTip(
      tr("A PyTorch script, Hugging Face Trainer, accelerate, kohya-ss or "
         "Lightning run under a profile and the recovery ladder, as "
         "`lorascope-train supervise` runs it"));
  group->addButton(command_);
  connect(command_, &QRadioButton::clicked, this, [this] { setCommandMode(true); });
  commandSetup_ = new CommandSetup;
  commandSetup_->hide();
  connect(commandSetup_, &CommandSetup::changed, this, &RunSetupPage::updateProblems);

  modelEdit_ = new QLineEdit;
  modelEdit_->setPlaceholderText(
      tr("a Hugging Face folder: config.json, *.safetensors, tokenizer"));
  modelEdit_->setToolTip(tr("Inspected when chosen: architecture, parameters, memory estimate"));
  modelInfo_ = new QLabel;
  modelInfo_->setObjectName(QStringLiteral("modelInfo"));
  modelInfo_->setWordWrap(true);
  modelInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  dataEdit_ = new QLineEdit;
  dataEdit_->setPlaceholderText(
      tr("JSONL or a JSON array: alpaca, chat messages, ShareGPT, prompt/completion or text"));
  dataEdit_->setToolTip(tr("Validated when chosen, with the model's tokenizer"));
  dataInfo_ = new QLabel;
  dataInfo_->setWordWrap(true);
  dataInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  dataIssues_ = new QPlainTextEdit;
  dataIssues_->setObjectName(QStringLiteral("datasetIssues"));
  dataIssues_->setReadOnly(true);
  dataIssues_->setMaximumHeight(120);
  dataIssues_->setToolTip(tr("Every issue, as `lorascope-train validate-data` lists them"));
  dataIssues_->hide();
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
  estimate_->setObjectName(QStringLiteral("memoryEstimate"));
  estimate_->setWordWrap(true);
  estimate_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* form = new QFormLayout;
  form->addRow(demo_);
  form->addRow(own_);
  form->addRow(command_);
  form->addRow(commandSetup_);
  modelEdit_->setToolTip(
      tr("A Hugging Face model folder, or a model id such as Qwen/Qwen2.5-0.5B-Instruct found "
         "in the Hugging Face cache (HF_HUB_CACHE, HF_HOME or ~/.cache/huggingface/hub)"));
  QWidget* modelRow = withBrowse(
      modelEdit_,
      [this] {
        return QFileDialog::getExistingDirectory(this, tr("Model folder"), modelEdit_->text());
      },
      [this](const QString& dir) { setModelDir(dir); });
  form->addRow(tr("Model folder or id"), modelRow);
  form->addRow(QString(), modelInfo_);
  QWidget* dataRow = withBrowse(
      dataEdit_,
      [this] {
        return QFileDialog::getOpenFileName(this, tr("Dataset"), dataEdit_->text(),
                                            tr("Datasets (*.jsonl *.json);;All files (*)"));
      },
      [this](const QString& file) { setDataFile(file); });
  form->addRow(tr("Dataset"), dataRow);
  form->addRow(QString(), progress_);
  form->addRow(QString(), dataInfo_);
  form->addRow(QString(), dataIssues_);
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
  // The box is as tall as the option column beside it: the room left over goes below the form,
  // not between its rows.
  grid->setRowStretch(1, 1);
  sourceForm_ = form;
  trainingRows_ = {modelRow, modelInfo_, dataRow, dataInfo_, histogram_, estimate_};
  // A named run folder is checked as it is typed (runs::checkOutputFolder: new, empty or a run).
  connect(runName_, &QLineEdit::textChanged, this, &RunSetupPage::updateProblems);
}

QWidget* RunSetupPage::editor(const std::string& option) const {
  return form_->editor(option);
}

QSpinBox* RunSetupPage::spinBox(const std::string& option) const {
  return form_->spinBox(option);
}

void RunSetupPage::setDevices(const QStringList& gpus, bool canTrainOnGpu) {
  auto* device = qobject_cast<QComboBox*>(editor("device"));
  for (int i = device->count() - 1; i >= 0; --i) {
    if (device->itemData(i).toString() == QLatin1String("gpu")) {
      device->removeItem(i);
    }
  }
  auto* model = qobject_cast<QStandardItemModel*>(device->model());
  for (int i = 0; i < gpus.size(); ++i) {
    device->addItem(gpus[i], QStringLiteral("gpu"));
    if (!canTrainOnGpu && model != nullptr) {
      QStandardItem* item = model->item(device->count() - 1);
      item->setEnabled(false);
      item->setToolTip(tr("This build trains on the CPU only"));
    }
  }
}

void RunSetupPage::setGroupUnavailable(const QString& reason) {
  auto* gpus = qobject_cast<QLineEdit*>(editor("gpus"));
  if (!reason.isEmpty()) {
    gpus->clear();
  }
  gpus->setEnabled(reason.isEmpty());
  gpus->setToolTip(reason.isEmpty()
                       ? QString::fromStdString(settings::registry().find("gpus")->option.help)
                       : tr("Not here: %1").arg(reason));
}

void RunSetupPage::setProfiles(const QStringList& names, const QString& current,
                               const QMap<QString, QString>& notes,
                               const QMap<QString, profiles::LiveToggles>& toggles) {
  profileNotes_ = notes;
  profileToggles_ = toggles;
  profile_->clear();
  for (const QString& name : names) {
    profile_->addItem(name, name);  // the option's value is the name
  }
  profile_->setCurrentText(current);
  commandSetup_->setProfiles(names, current);
  updateProfileNote();
}

QString RunSetupPage::profileName() const {
  return profile_->currentText();
}

// Not remembered between sessions (the form leaves the page's own editors alone): the engine starts
// on the default profile, and so does this choice.
void RunSetupPage::setProfile(const QString& name) {
  const int index = profile_->findText(name);
  if (index < 0 || index == profile_->currentIndex()) {
    return;
  }
  profile_->setCurrentIndex(index);
  emit changed();
}

QString RunSetupPage::profileNote() const {
  return profileNote_ != nullptr ? profileNote_->text() : QString();
}

void RunSetupPage::updateProfileNote() {
  if (profileNote_ == nullptr) {
    return;
  }
  const QString note = profileNotes_.value(profile_->currentText());
  profileNote_->setText(note);
  profileNote_->setVisible(!note.isEmpty());
}

bool RunSetupPage::usesCommand() const {
  return command_->isChecked();
}

void RunSetupPage::setCommandMode(bool on) {
  if (!on) {
    setDemo(usesDemo());
    return;
  }
  command_->setChecked(true);
  commandSetup_->show();
  boxes_[1]->hide();        // the training settings are the command's own
  showTrainingRows(false);  // so are its model and data: the demo's would only mislead
  progress_->hide();
  dataIssues_->hide();
  modelEdit_->setEnabled(false);
  dataEdit_->setEnabled(false);
  updateProblems();
}

void RunSetupPage::showTrainingRows(bool visible) {
  for (QWidget* field : trainingRows_) {
    sourceForm_->setRowVisible(field, visible);
  }
}

bool RunSetupPage::usesDemo() const {
  return demo_->isChecked();
}

void RunSetupPage::setDemo(bool demo) {
  demo_->setChecked(demo);
  own_->setChecked(!demo);
  commandSetup_->hide();
  boxes_[1]->show();
  showTrainingRows(true);
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

QString RunSetupPage::outputDir() const {
  return outputEdit_->text().trimmed();
}

void RunSetupPage::setOutputDir(const QString& dir) {
  outputEdit_->setText(dir);
  updateProblems();
}

void RunSetupPage::restoreDefaults() {
  form_->setDefaults(usesDemo());
  updateEstimate();
}

void RunSetupPage::restoreSettings() {
  QSettings settings;
  settings.beginGroup(QStringLiteral("setup"));
  // A folder saved by an earlier version that used the legacy runs folder follows the runs,
  // which moveLegacyRuns() moved to defaultRunsDir().
  QString out = settings.value(QStringLiteral("out"), defaultRunsDir()).toString();
  if (QDir::cleanPath(out) == QDir::cleanPath(legacyRunsDir())) {
    out = defaultRunsDir();
  }
  outputEdit_->setText(out);
  modelEdit_->setText(settings.value(QStringLiteral("model")).toString());
  dataEdit_->setText(settings.value(QStringLiteral("data")).toString());
  const bool demo = settings.value(QStringLiteral("demo"), true).toBool();
  const QVariant saved = settings.value(QStringLiteral("options"));
  settings.endGroup();
  const bool commandMode = settings.value(QStringLiteral("setup/command_mode"), false).toBool();
  setDemo(demo);  // the source's defaults, then what was saved over them
  form_->restore(saved.toMap());
  if (commandMode) {
    commandSetup_->restore(QString());  // the last command run, with its fields
    setCommandMode(true);
  }
}

void RunSetupPage::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("setup"));
  settings.setValue(QStringLiteral("demo"), usesDemo());
  settings.setValue(QStringLiteral("command_mode"), usesCommand());
  if (usesCommand()) {
    commandSetup_->save();
  }
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

void RunSetupPage::setTrainProgram(const QString& program) {
  if (program == trainProgram_) {
    return;
  }
  trainProgram_ = program;
  if (usesDemo()) {
    inspectModel();
  }
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
      this,
      [dir, demo, program = trainProgram_](const ReportProgress&) {
        return inspectFolder(dir, demo, program);
      },
      [](int) {},
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
  const auto maxSeqLen = static_cast<std::size_t>(seqLenEditor()->value());
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
  progress_->setVisible(!usesCommand());
  dataInfo_->setText(tr("Validating %1 …").arg(demo ? tr("the demo dataset") : file));
  updateProblems();
  runInBackground<DatasetValidation>(
      this,
      [file, demo, program = trainProgram_, modelDir, maxSeqLen](const ReportProgress& report) {
        return validateFile(file, demo, program, modelDir, maxSeqLen, report);
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
  return text;
}

QString RunSetupPage::datasetIssuesText() const {
  if (!validation_.report) {
    return QString();
  }
  QStringList lines;
  // As `validate-data` lists them: the severity, then the message, which names its location.
  for (const data::DatasetIssue& issue : validation_.report->issues) {
    lines << QStringLiteral("%1: %2").arg(QString::fromLatin1(data::severityName(issue.severity)),
                                          QString::fromStdString(issue.message));
  }
  return lines.join(QLatin1Char('\n'));
}

QString RunSetupPage::sequenceLengthWarning() const {
  if (!inspection_.config || inspection_.config->maxPositionEmbeddings <= 0 ||
      seqLenEditor()->value() <= inspection_.config->maxPositionEmbeddings) {
    return QString();
  }
  return tr("max_seq_len %1 exceeds the model's max_position_embeddings %2: positions past %2 "
            "were never trained, and the model's quality there is not to be trusted. Lower "
            "max_seq_len to %2 or less.")
      .arg(seqLenEditor()->value())
      .arg(inspection_.config->maxPositionEmbeddings);
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
  const QString issues = datasetIssuesText();
  dataIssues_->setPlainText(issues);
  dataIssues_->setVisible(!issues.isEmpty() && !usesCommand());
  updateProblems();
}

QString RunSetupPage::memoryEstimateText() const {
  if (!inspection_.config) {
    return QString();
  }
  // The run's shape from the form's values, each checked by the settings registry as the engine
  // will check it (a micro-batch of auto shows the default it starts from).
  const std::map<std::string, std::string> values = options();  // every setting's
  const auto value = [&values](const std::string& name, const std::string* text = nullptr) {
    return settings::parseOptionValue(settings::registry().find(name)->option,
                                      text != nullptr ? *text : values.at(name));
  };
  bool gpu = false;
  bool nf4 = false;
  bool checkpointing = false;
  std::int64_t microBatch = 0;
  std::int64_t effectiveBatch = 0;
  std::int64_t maxSeqLen = 0;
  std::int64_t rank = 0;
  std::set<model::Projection> targets;
  try {
    if (!form_->problems().isEmpty()) {
      throw settings::UsageError("a value the registry refuses");
    }
    // The device the run will use: bf16 activations and weights on a GPU, f32 on the CPU.
    gpu = value("device").get<std::string>() != "cpu";
    nf4 = model::parseQuantization(value("quantize").get<std::string>()) ==
          model::WeightQuantization::Nf4;
    nlohmann::json batch = value("batch-size");
    if (batch.is_string()) {  // auto
      const std::string start = settings::registry().find("batch-size")->defaultFor(usesDemo());
      batch = value("batch-size", &start);
    }
    microBatch = batch.get<std::int64_t>();
    effectiveBatch = microBatch * value("grad-accum").get<std::int64_t>();
    maxSeqLen = value("max-seq-len").get<std::int64_t>();
    rank = value("lora-r").get<std::int64_t>();
    checkpointing = value("activation-checkpointing").get<bool>();
    for (const nlohmann::json& name : value("targets")) {
      for (const model::ProjectionNames& names : model::kProjectionNames) {
        if (name.get<std::string>() == names.shortName) {
          targets.insert(names.projection);
        }
      }
    }
    if (targets.empty()) {
      throw settings::UsageError("no LoRA targets");
    }
  } catch (const settings::UsageError&) {
    return tr("(no estimate until the settings are valid)");
  }
  const std::uint64_t weights =
      nf4 ? (gpu ? inspection_.nf4GpuWeightBytes : inspection_.nf4CpuWeightBytes)
          : (gpu ? 2 * static_cast<std::uint64_t>(inspection_.parameters.total)
                 : inspection_.weightBytes);
  // The profile's toggles take precedence over the options (settings/Registry.h, "profile").
  const QString profile = profile_ != nullptr ? profile_->currentText() : QString();
  QString byProfile;
  if (const auto it = profileToggles_.find(profile); it != profileToggles_.end()) {
    using settings::Toggle;
    const auto profileBatch = profiles::toggleValue(*it, Toggle::MicroBatch);
    if (profileBatch && *profileBatch != microBatch) {
      microBatch = std::min<std::int64_t>(profileBatch->get<std::int64_t>(), effectiveBatch);
      byProfile = tr(" (%1's)").arg(profile);
    }
    const auto profileCheckpointing = profiles::toggleValue(*it, Toggle::ActivationCheckpointing);
    if (profileCheckpointing && *profileCheckpointing != checkpointing) {
      checkpointing = profileCheckpointing->get<bool>();
      byProfile = tr(" (%1's)").arg(profile);
    }
  }
  const model::TrainingMemory m = model::estimateTrainingMemory(
      *inspection_.config, model::shapeOnDevice(gpu, weights, rank, targets, checkpointing, nf4),
      microBatch * maxSeqLen);
  using widgets::formatBytes;
  return tr("<b>%1</b> peak on the %2 at micro-batch %3 × %4 tokens, r %5 on %6 projections%7: "
            "weights %8, LoRA %9 (%10 parameters) with gradients and AdamW %11, saved "
            "activations %12, transient %13")
      .arg(formatBytes(m.peakBytes), gpu ? tr("GPU") : tr("CPU"))
      .arg(microBatch)
      .arg(maxSeqLen)
      .arg(rank)
      .arg(targets.size())
      .arg(QString(checkpointing ? tr(", checkpointing") : QString()) +
           (nf4 ? tr(", 4-bit base weights") : QString()) + byProfile)
      .arg(formatBytes(m.weightsBytes), formatBytes(m.loraBytes), countText(m.loraParameters),
           formatBytes(m.loraGradBytes + m.optimizerBytes), formatBytes(m.savedBytes),
           formatBytes(std::max(m.lossBytes, m.backwardBytes)));
}

void RunSetupPage::updateEstimate() {
  if (effectiveBatch_ == nullptr || profile_ == nullptr) {
    return;  // still building the page
  }
  const QString warning = sequenceLengthWarning();
  estimate_->setText(memoryEstimateText() +
                     (warning.isEmpty() ? QString()
                                        : QStringLiteral("<br><span style=\"color: #b9770e\">") +
                                              warning.toHtmlEscaped() + QStringLiteral("</span>")));
  effectiveBatch_->setText(
      tr("%1 per step")
          .arg(counted(microBatchEditor()->value() * spinBox("grad-accum")->value(), tr("sequence"),
                       tr("sequences"))));
  histogram_->setMaxSeqLen(static_cast<std::size_t>(seqLenEditor()->value()));
  updateProblems();
}

QStringList RunSetupPage::problems() const {
  QStringList out;
  if (usesCommand()) {
    QString error;
    if (!commandSetup_->command(&error)) {
      out << error;
    }
    return out;
  }
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
  } else if (validation_.report) {
    std::size_t errors = 0;
    for (const auto& [kind, count] : validation_.report->errorCounts) {
      errors += count;
    }
    if (errors > 0) {
      out << tr("Dataset: %1 to fix first (listed under the dataset).")
                 .arg(counted(errors, tr("error"), tr("errors")));
    }
  }
  if (outputEdit_->text().trimmed().isEmpty()) {
    out << tr("Choose an output folder.");
  } else if (const QString name = runName_->text().trimmed(); !name.isEmpty()) {
    // The folder a named run goes into: one that holds a run is the resume question of Start;
    // one that holds anything else is refused here, as the engine would refuse it.
    try {
      runs::checkOutputFolder(
          widgets::toPath(QDir(outputEdit_->text().trimmed()).filePath(name)),
          usesDemo() ? std::filesystem::path() : widgets::toPath(modelEdit_->text().trimmed()));
    } catch (const runs::RunFileError& e) {
      out << tr("Output folder: %1").arg(QString::fromUtf8(e.what()));
    }
  }
  // Every option's value passes the registry's checks (the trainer's own).
  out << form_->problems();
  return out;
}

void RunSetupPage::updateProblems() {
  problems_->setText(problems().join(QLatin1Char('\n')));
  emit changed();
}

std::map<std::string, std::string> RunSetupPage::options() const {
  // Every option, as typed; the engine applies them in any order (steps 0 = by epochs).
  return form_->values();
}

std::optional<nlohmann::json> RunSetupPage::runConfig() const {
  if (!problems().isEmpty()) {
    return std::nullopt;
  }
  const QDir outputDir(outputEdit_->text().trimmed());
  const QString name = runName_->text().trimmed();
  QString out = outputDir.filePath(name);
  if (name.isEmpty()) {
    // Named by the time: a folder of its own, also for a run started within the same second as
    // the one before (which made its folder: the new one would be offered to resume it).
    const QString source =
        usesDemo() ? QStringLiteral("demo")
                   : QFileInfo(modelEdit_->text().trimmed()).fileName().replace(' ', '_');
    out = widgets::pathToQString(runs::unusedFolder(widgets::toPath(outputDir.filePath(
        source + QLatin1Char('-') +
        QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"))))));
  }
  nlohmann::json options = nlohmann::json::object();
  for (const auto& [key, value] : this->options()) {
    options[key] = value;
  }
  nlohmann::json config = {{"out", out.toStdString()}, {"options", options}};
  if (usesDemo()) {
    config["demo"] = true;
  } else {
    config["model"] = modelEdit_->text().trimmed().toStdString();
    config["data"] = dataEdit_->text().trimmed().toStdString();
  }
  return config;
}

}  // namespace lorascope::app
