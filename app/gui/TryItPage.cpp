// gui/TryItPage.cpp — the form, the two answer panes, and the worker that fills them.
#include "gui/TryItPage.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>
#include <climits>
#include <optional>
#include <tuple>

#include "common/OsError.h"  // defines: pathText
#include "job/Generation.h"
#include "job/TrainRunConfig.h"  // defines: settingsFromJson
#include "runs/RunFolder.h"
#include "widgets/DisplayText.h"  // defines: toPath

namespace lorascope::app {

namespace {

QHBoxLayout* withBrowse(QLineEdit* edit, QPushButton* browse) {
  auto* row = new QHBoxLayout;
  row->addWidget(edit, 1);
  row->addWidget(browse);
  return row;
}

QPlainTextEdit* answerPane(QWidget* parent) {
  auto* pane = new QPlainTextEdit(parent);
  pane->setReadOnly(true);
  return pane;
}

QLabel* answerNote(QWidget* parent) {
  auto* note = new QLabel(parent);
  note->setWordWrap(true);
  note->setVisible(false);
  return note;
}

// An answer with nothing to see, in words: "128 line breaks", "3 spaces and 1 line break".
QString whitespaceText(const QString& text) {
  const auto count = [&](QChar c) { return static_cast<int>(text.count(c)); };
  const auto counted = [](int n, const QString& one, const QString& many) {
    return n == 1 ? one : many.arg(n);
  };
  const int lineBreaks = count(QLatin1Char('\n'));
  const int spaces = count(QLatin1Char(' '));
  const int tabs = count(QLatin1Char('\t'));
  const int other = static_cast<int>(text.size()) - lineBreaks - spaces - tabs;
  QStringList parts;
  if (lineBreaks > 0)
    parts << counted(lineBreaks, QObject::tr("1 line break"), QObject::tr("%1 line breaks"));
  if (spaces > 0)
    parts << counted(spaces, QObject::tr("1 space"), QObject::tr("%1 spaces"));
  if (tabs > 0)
    parts << counted(tabs, QObject::tr("1 tab"), QObject::tr("%1 tabs"));
  if (other > 0)
    parts << counted(other, QObject::tr("1 other blank character"),
                     QObject::tr("%1 other blank characters"));
  if (parts.size() == 1)
    return parts.front();
  const QString last = parts.takeLast();
  return QObject::tr("%1 and %2").arg(parts.join(QStringLiteral(", ")), last);
}

QString summary(const job::GenerationResult& r) {
  return QObject::tr("%1 tokens (%2), %3 tokens/s")
      .arg(r.ids.size())
      .arg(QString::fromStdString(r.stopReason))
      .arg(r.tokensPerS, 0, 'f', 1);
}

// The --quantize of the run that holds `adapter` (the run folder, its adapter/ or one of its
// checkpoints/step-N), or nothing when the folder is not in a run. Throws naming config.json when
// the run's settings do not read.
std::optional<model::WeightQuantization> runQuantization(const QString& adapter) {
  std::filesystem::path run = widgets::toPath(QDir::cleanPath(adapter));
  if (run.filename() == runs::kFinalAdapterDir)
    run = run.parent_path();
  else if (run.parent_path().filename() == runs::kCheckpointsDir)
    run = run.parent_path().parent_path();
  const std::filesystem::path config = run / runs::kRunConfigFile;
  if (!std::filesystem::exists(config))
    return std::nullopt;
  const runs::RunFolder folder = runs::RunFolder::open(run);
  return job::settingsFromJson(folder.config().at("training"), common::pathText(config))
      .train.quantization;
}

}  // namespace

TryItPage::TryItPage(QWidget* parent) : QWidget(parent) {
  model_ = new QLineEdit(this);
  model_->setPlaceholderText(tr("a Hugging Face model folder (the setup page's model)"));
  adapter_ = new QLineEdit(this);
  adapter_->setPlaceholderText(
      tr("a run folder or a PEFT adapter folder (empty: base model only)"));
  system_ = new QLineEdit(this);
  system_->setPlaceholderText(tr("optional system message"));
  auto* browseModel = new QPushButton(tr("Browse…"), this);
  auto* browseAdapter = new QPushButton(tr("Browse…"), this);
  connect(browseModel, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Model folder"), model_->text());
    if (!dir.isEmpty()) {
      model_->setText(dir);
      modelEdited_ = true;  // chosen by the user: suggest() leaves it
    }
  });
  connect(browseAdapter, &QPushButton::clicked, this, [this] {
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Run or adapter folder"), adapter_->text());
    if (!dir.isEmpty()) {
      adapter_->setText(dir);
      adapterEdited_ = true;
    }
  });
  connect(model_, &QLineEdit::textEdited, this, [this] { modelEdited_ = true; });
  connect(adapter_, &QLineEdit::textEdited, this, [this] { adapterEdited_ = true; });

  prompt_ = new QPlainTextEdit(this);
  prompt_->setPlaceholderText(
      tr("The prompt, sent as the user's message through the model's chat "
         "template (Ctrl+Return generates)"));
  prompt_->setMaximumHeight(110);

  maxNewTokens_ = new QSpinBox(this);
  maxNewTokens_->setRange(1, 8192);
  maxNewTokens_->setValue(128);
  temperature_ = new QDoubleSpinBox(this);
  temperature_->setRange(0.0, 5.0);
  temperature_->setSingleStep(0.1);
  temperature_->setToolTip(tr("0 is greedy (the most likely token); above 0 samples"));
  topP_ = new QDoubleSpinBox(this);
  topP_->setRange(0.01, 1.0);
  topP_->setSingleStep(0.05);
  topP_->setValue(1.0);
  seed_ = new QSpinBox(this);
  seed_->setRange(0, INT_MAX);
  device_ = new QComboBox(this);
  device_->addItems({QStringLiteral("cpu"), QStringLiteral("gpu"), QStringLiteral("auto")});
  baseWeights_ = new QComboBox(this);
  baseWeights_->addItem(tr("as stored"), QStringLiteral("none"));
  baseWeights_->addItem(tr("NF4 4-bit"), QStringLiteral("nf4"));
  baseWeights_->setToolTip(
      tr("NF4: the base's projections quantised to 4 bits at load, as a run with \"Base weights: "
         "nf4\" trained on them (both answers use it). Follows the adapter's run until chosen."));
  connect(baseWeights_, &QComboBox::activated, this, [this] { baseWeightsChosen_ = true; });
  generate_ = new QPushButton(tr("&Generate"), this);
  stop_ = new QPushButton(tr("S&top"), this);
  connect(generate_, &QPushButton::clicked, this, &TryItPage::generate);
  connect(stop_, &QPushButton::clicked, this, &TryItPage::stop);
  prompt_->installEventFilter(this);  // Ctrl+Return generates

  auto* form = new QFormLayout;
  form->addRow(tr("Model"), withBrowse(model_, browseModel));
  form->addRow(tr("Adapter"), withBrowse(adapter_, browseAdapter));
  form->addRow(tr("System"), system_);
  form->addRow(tr("Prompt"), prompt_);
  // Two rows of knobs, so that the page fits a 1024-pixel-wide window.
  auto* sampling = new QHBoxLayout;
  auto* knobs = new QHBoxLayout;
  for (auto [row, label, widget] :
       {std::tuple<QHBoxLayout*, QString, QWidget*>{sampling, tr("Max new tokens"), maxNewTokens_},
        {sampling, tr("Temperature"), temperature_},
        {sampling, tr("Top-p"), topP_},
        {knobs, tr("Seed"), seed_},
        {knobs, tr("Device"), device_},
        {knobs, tr("Base weights"), baseWeights_}}) {
    row->addWidget(new QLabel(label, this));
    row->addWidget(widget);
  }
  sampling->addStretch(1);
  knobs->addStretch(1);
  knobs->addWidget(generate_);
  knobs->addWidget(stop_);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  connect(adapter_, &QLineEdit::textChanged, this, &TryItPage::followAdapterRun);

  baseAnswer_ = answerPane(this);
  adapterAnswer_ = answerPane(this);
  baseNote_ = answerNote(this);
  adapterNote_ = answerNote(this);
  auto* answers = new QHBoxLayout;
  for (auto [title, pane, note] :
       {std::tuple<QString, QPlainTextEdit*, QLabel*>{tr("Base model"), baseAnswer_, baseNote_},
        {tr("With the adapter"), adapterAnswer_, adapterNote_}}) {
    auto* box = new QGroupBox(title, this);
    auto* boxLayout = new QVBoxLayout(box);
    boxLayout->addWidget(pane);
    boxLayout->addWidget(note);
    answers->addWidget(box, 1);
  }
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(sampling);
  layout->addLayout(knobs);
  layout->addWidget(status_);
  layout->addLayout(answers, 1);
  updateButtons();
}

TryItPage::~TryItPage() {
  if (worker_ != nullptr) {
    cancel_->store(true);
    worker_->wait();  // the worker posts to this page: it must end first
  }
}

void TryItPage::restoreSettings() {
  QSettings settings;
  settings.beginGroup(QStringLiteral("tryit"));
  // Folders only where the user chose them; suggest() fills the others.
  for (auto [edit, key, edited] :
       {std::tuple<QLineEdit*, QString, bool*>{model_, QStringLiteral("model"), &modelEdited_},
        {adapter_, QStringLiteral("adapter"), &adapterEdited_}}) {
    if (settings.contains(key)) {
      edit->setText(settings.value(key).toString());
      *edited = true;
    }
  }
  system_->setText(settings.value(QStringLiteral("system")).toString());
  prompt_->setPlainText(settings.value(QStringLiteral("prompt")).toString());
  // A value outside a field's range (another version's) is clamped by the field.
  maxNewTokens_->setValue(settings.value(QStringLiteral("max_new_tokens"), 128).toInt());
  temperature_->setValue(settings.value(QStringLiteral("temperature"), 0.0).toDouble());
  topP_->setValue(settings.value(QStringLiteral("top_p"), 1.0).toDouble());
  seed_->setValue(settings.value(QStringLiteral("seed"), 0).toInt());
  if (const int device = device_->findText(settings.value(QStringLiteral("device")).toString());
      device >= 0)
    device_->setCurrentIndex(device);
  if (const int weights = baseWeights_->findData(settings.value(QStringLiteral("base_weights")));
      weights >= 0) {
    baseWeights_->setCurrentIndex(weights);
    baseWeightsChosen_ = true;
  }
  settings.endGroup();
}

void TryItPage::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("tryit"));
  for (auto [edit, key, edited] :
       {std::tuple<QLineEdit*, QString, bool>{model_, QStringLiteral("model"), modelEdited_},
        {adapter_, QStringLiteral("adapter"), adapterEdited_}}) {
    if (edited)
      settings.setValue(key, edit->text());
    else
      settings.remove(key);
  }
  settings.setValue(QStringLiteral("system"), system_->text());
  settings.setValue(QStringLiteral("prompt"), prompt_->toPlainText());
  settings.setValue(QStringLiteral("max_new_tokens"), maxNewTokens_->value());
  settings.setValue(QStringLiteral("temperature"), temperature_->value());
  settings.setValue(QStringLiteral("top_p"), topP_->value());
  settings.setValue(QStringLiteral("seed"), seed_->value());
  settings.setValue(QStringLiteral("device"), device_->currentText());
  if (baseWeightsChosen_)
    settings.setValue(QStringLiteral("base_weights"), baseWeights_->currentData());
  else
    settings.remove(QStringLiteral("base_weights"));
  settings.endGroup();
}

void TryItPage::suggest(const QString& modelDir, const QString& runFolder) {
  if (!modelEdited_ && !modelDir.isEmpty())
    model_->setText(modelDir);
  if (!adapterEdited_ && !runFolder.isEmpty())
    adapter_->setText(runFolder);
}

void TryItPage::followAdapterRun() {
  if (baseWeightsChosen_)
    return;
  model::WeightQuantization quantization = model::WeightQuantization::None;
  const QString adapter = adapter_->text().trimmed();
  if (!adapter.isEmpty()) {
    try {
      quantization = runQuantization(adapter).value_or(quantization);
    } catch (const std::exception& e) {
      status_->setText(tr("Base weights: %1; choose them by hand.").arg(e.what()));
    }
  }
  baseWeights_->setCurrentIndex(
      baseWeights_->findData(QString::fromLatin1(model::quantizationName(quantization))));
}

void TryItPage::stop() {
  if (cancel_)
    cancel_->store(true);
}

void TryItPage::updateButtons() {
  generate_->setEnabled(worker_ == nullptr);
  stop_->setEnabled(worker_ != nullptr);
}

void TryItPage::append(bool adapter, const QString& piece) {
  QPlainTextEdit* pane = adapter ? adapterAnswer_ : baseAnswer_;
  pane->moveCursor(QTextCursor::End);
  pane->insertPlainText(piece);
}

// An answer of blank lines looks like no answer: the note under the pane says what it is, and the
// pane shows its line breaks and spaces as marks.
void TryItPage::answerEnded(bool adapter) {
  QPlainTextEdit* pane = adapter ? adapterAnswer_ : baseAnswer_;
  QLabel* note = adapter ? adapterNote_ : baseNote_;
  const QString text = pane->toPlainText();
  if (!text.trimmed().isEmpty()) {
    return;
  }
  note->setText(
      text.isEmpty()
          ? tr("The model ended this answer at once: it is empty.")
          : tr("This answer is %1 and nothing else (shown as marks).").arg(whitespaceText(text)));
  note->setVisible(true);
  QTextOption option = pane->document()->defaultTextOption();
  option.setFlags(option.flags() | QTextOption::ShowTabsAndSpaces |
                  QTextOption::ShowLineAndParagraphSeparators);
  pane->document()->setDefaultTextOption(option);
}

// Ctrl+Return in the prompt generates. Not a QShortcut: the window's Start has the same keys, and
// two shortcuts on one sequence are ambiguous (neither fires). Accepting the ShortcutOverride
// turns the keys into a plain key press for the prompt, which generates here.
bool TryItPage::eventFilter(QObject* watched, QEvent* event) {
  if (watched == prompt_ &&
      (event->type() == QEvent::ShortcutOverride || event->type() == QEvent::KeyPress)) {
    const auto* key = static_cast<QKeyEvent*>(event);
    const bool ctrlReturn = (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
                            (key->modifiers() & ~Qt::KeypadModifier) == Qt::ControlModifier;
    if (ctrlReturn) {
      event->accept();
      if (event->type() == QEvent::KeyPress)
        generate();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

void TryItPage::done(const QString& status) {
  status_->setText(status);
}

void TryItPage::generate() {
  if (worker_ != nullptr)
    return;
  const std::string model = model_->text().trimmed().toStdString();
  const std::string adapter = adapter_->text().trimmed().toStdString();
  const std::string prompt = prompt_->toPlainText().toStdString();
  if (model.empty() || prompt.empty()) {
    status_->setText(model.empty() ? tr("Choose a model folder first.")
                                   : tr("Write a prompt first."));
    return;
  }
  saveSettings();  // what was asked is kept, also through a crash
  const std::string system = system_->text().toStdString();
  const std::string device = device_->currentText().toStdString();
  const std::string baseWeights = baseWeights_->currentData().toString().toStdString();
  // The combo holds only names parseQuantization knows.
  const model::WeightQuantization quantization =
      model::parseQuantization(baseWeights).value_or(model::WeightQuantization::None);
  job::SamplingOptions sampling;
  sampling.maxNewTokens = maxNewTokens_->value();
  sampling.temperature = temperature_->value();
  sampling.topP = topP_->value();
  sampling.seed = static_cast<std::uint64_t>(seed_->value());
  const QString key =
      QString::fromStdString(model + "\n" + adapter + "\n" + device + "\n" + baseWeights);
  auto generator = std::make_shared<std::shared_ptr<job::TextGenerator>>(
      key == loadedKey_ ? generator_ : nullptr);
  for (auto [pane, note] : {std::pair{baseAnswer_, baseNote_}, {adapterAnswer_, adapterNote_}}) {
    pane->clear();
    QTextOption option = pane->document()->defaultTextOption();
    option.setFlags(option.flags() & ~(QTextOption::ShowTabsAndSpaces |
                                       QTextOption::ShowLineAndParagraphSeparators));
    pane->document()->setDefaultTextOption(option);
    note->setVisible(false);
  }
  if (adapter.empty())
    adapterAnswer_->setPlaceholderText(tr("No adapter chosen: only the base model answers."));
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  auto post = [this](std::function<void()> f) {
    QMetaObject::invokeMethod(this, std::move(f), Qt::QueuedConnection);
  };
  worker_ = QThread::create([=, this, cancel = cancel_] {
    try {
      if (!*generator) {
        post([this] { status_->setText(tr("Loading the model…")); });
        *generator = std::make_shared<job::TextGenerator>(
            model, adapter, device,
            [&](const std::string& line) {
              post([this, line] { status_->setText(QString::fromStdString(line)); });
            },
            quantization);
      }
      job::TextGenerator& g = **generator;
      const std::vector<std::int32_t> ids = g.promptIds(prompt, system, true);
      QString status =
          QString::fromStdString(g.describe()) + tr(", %1 prompt tokens").arg(ids.size());
      post([this, status] { status_->setText(status + tr(" — generating…")); });
      for (const bool withAdapter : {false, true}) {
        if (withAdapter && !g.hasAdapter())
          break;
        g.setAdapterEnabled(withAdapter);
        const job::GenerationResult result = g.generate(
            ids, sampling,
            [&](const std::string& piece) {
              post([this, withAdapter, text = QString::fromStdString(piece)] {
                append(withAdapter, text);
              });
              return true;
            },
            {}, cancel.get());
        if (result.stopReason != "stopped")  // a stopped answer is short by request
          post([this, withAdapter] { answerEnded(withAdapter); });
        status += (withAdapter ? tr(" · adapter: ") : tr(" · base: ")) + summary(result);
        if (result.stopReason == "stopped")
          break;
      }
      post([this, status] { done(status); });
    } catch (const std::exception& e) {
      post([this, message = QString::fromStdString(e.what())] {
        done(tr("Could not generate: %1").arg(message));
      });
    }
  });
  worker_->setParent(this);  // freed with the page, which waits for it first
  connect(worker_, &QThread::finished, this, [this, generator, key] {
    if (*generator) {
      generator_ = *generator;
      loadedKey_ = key;
    }
    worker_->deleteLater();
    worker_ = nullptr;
    updateButtons();
    emit finished();
  });
  worker_->start();
  updateButtons();
}

}  // namespace lorascope::app
