// gui/TryItPage.cpp — the form, the two answer panes, and the engine's events that fill them.
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
#include <QVBoxLayout>
#include <climits>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "common/OsError.h"  // defines: pathText
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

QString summary(const engine::AnswerEndEvent& end) {
  return QObject::tr("%1 tokens (%2), %3 tokens/s")
      .arg(end.tokens)
      .arg(QString::fromStdString(end.stopReason))
      .arg(end.tokensPerS, 0, 'f', 1);
}

// The --quantize of the run that holds `adapter` (the run folder, its adapter/ or one of its
// checkpoints/step-N), or nothing when the folder is not in a run. Throws naming config.json when
// the run's setting does not read (absent: a run made before the option, as stored).
std::optional<std::string> runQuantization(const QString& adapter) {
  std::filesystem::path run = widgets::toPath(QDir::cleanPath(adapter));
  if (run.filename() == runs::kFinalAdapterDir)
    run = run.parent_path();
  else if (run.parent_path().filename() == runs::kCheckpointsDir)
    run = run.parent_path().parent_path();
  const std::filesystem::path config = run / runs::kRunConfigFile;
  if (!std::filesystem::exists(config))
    return std::nullopt;
  const runs::RunFolder folder = runs::RunFolder::open(run);
  const nlohmann::json& settings = folder.config();
  const auto training = settings.find("training");
  if (training == settings.end() || !training->is_object())
    throw std::runtime_error(common::pathText(config) + ": no \"training\" settings");
  const auto quantize = training->find("quantize");
  if (quantize == training->end())
    return "none";
  if (!quantize->is_string() || (*quantize != "none" && *quantize != "nf4"))
    throw std::runtime_error(common::pathText(config) +
                             ": \"training\".\"quantize\" is not \"none\" or \"nf4\"");
  return quantize->get<std::string>();
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

TryItPage::~TryItPage() = default;

void TryItPage::setProfile(const QString& name) {
  if (name == profile_)
    return;
  profile_ = name;
  if (engine_ != nullptr)
    engine_->send(engine::SwitchProfileCommand{name.toStdString()});
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
  std::string quantization = "none";
  const QString adapter = adapter_->text().trimmed();
  if (!adapter.isEmpty()) {
    try {
      quantization = runQuantization(adapter).value_or(quantization);
    } catch (const std::exception& e) {
      status_->setText(tr("Base weights: %1; choose them by hand.").arg(e.what()));
    }
  }
  baseWeights_->setCurrentIndex(baseWeights_->findData(QString::fromStdString(quantization)));
}

void TryItPage::stop() {
  if (generating_)
    engine_->send(engine::CancelGenerationCommand{generationId_});
}

void TryItPage::updateButtons() {
  generate_->setEnabled(!generating_);
  stop_->setEnabled(generating_);
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
  generating_ = false;
  status_->setText(status);
  updateButtons();
  emit finished();
}

void TryItPage::showStatus() {
  status_->setText(statusLine_ + summaries_ + (generating_ ? tr(" — generating…") : QString()));
}

void TryItPage::generate() {
  if (generating_)
    return;
  const QString model = model_->text().trimmed();
  const QString prompt = prompt_->toPlainText();
  if (model.isEmpty() || prompt.isEmpty()) {
    status_->setText(model.isEmpty() ? tr("Choose a model folder first.")
                                     : tr("Write a prompt first."));
    return;
  }
  if (engine_ == nullptr) {
    if (!makeEngine_) {
      status_->setText(tr("No engine to generate with."));
      return;
    }
    engine_ = makeEngine_(profile_);
    connect(engine_.get(), &widgets::EngineClient::eventReceived, this, &TryItPage::handleEvent);
  }
  saveSettings();  // what was asked is kept, also through a crash
  for (auto [pane, note] : {std::pair{baseAnswer_, baseNote_}, {adapterAnswer_, adapterNote_}}) {
    pane->clear();
    QTextOption option = pane->document()->defaultTextOption();
    option.setFlags(option.flags() & ~(QTextOption::ShowTabsAndSpaces |
                                       QTextOption::ShowLineAndParagraphSeparators));
    pane->document()->setDefaultTextOption(option);
    note->setVisible(false);
  }
  const QString adapter = adapter_->text().trimmed();
  if (adapter.isEmpty())
    adapterAnswer_->setPlaceholderText(tr("No adapter chosen: only the base model answers."));
  engine::GenerateCommand command;
  command.id = ++generationId_;
  command.model = model.toStdString();
  command.adapter = adapter.toStdString();
  command.device = device_->currentText().toStdString();
  command.baseWeights = baseWeights_->currentData().toString().toStdString();
  command.system = system_->text().toStdString();
  command.prompt = prompt.toStdString();
  command.maxNewTokens = maxNewTokens_->value();
  command.temperature = temperature_->value();
  command.topP = topP_->value();
  command.seed = static_cast<std::uint64_t>(seed_->value());
  generating_ = true;
  statusLine_ = tr("Starting…");
  summaries_.clear();
  showStatus();
  updateButtons();
  engine_->send(command);
}

void TryItPage::handleEvent(const engine::TimedEvent& timed) {
  const auto ours = [this](std::int64_t id) { return generating_ && id == generationId_; };
  if (const auto* status = std::get_if<engine::GenerationStatusEvent>(&timed.event)) {
    if (ours(status->id)) {
      statusLine_ = QString::fromStdString(status->text);
      showStatus();
    }
  } else if (const auto* token = std::get_if<engine::TokenEvent>(&timed.event)) {
    if (ours(token->id))
      append(token->answer == engine::Answer::Adapter, QString::fromStdString(token->text));
  } else if (const auto* end = std::get_if<engine::AnswerEndEvent>(&timed.event)) {
    if (!ours(end->id))
      return;
    const bool adapter = end->answer == engine::Answer::Adapter;
    if (end->stopReason != "stopped")  // a stopped answer is short by request
      answerEnded(adapter);
    summaries_ += (adapter ? tr(" · adapter: ") : tr(" · base: ")) + summary(*end);
    showStatus();
  } else if (const auto* generation = std::get_if<engine::GenerationEndEvent>(&timed.event)) {
    if (!ours(generation->id))
      return;
    if (generation->outcome == engine::GenerationOutcome::Failed)
      done(tr("Could not generate: %1").arg(QString::fromStdString(generation->message)));
    else
      done(statusLine_ + summaries_);
  } else if (const auto* incident = std::get_if<engine::IncidentEvent>(&timed.event)) {
    // The engine died (the generation's failed end came first): what happened, and that a new
    // engine takes the next Generate.
    status_->setText(
        status_->text() + QLatin1Char('\n') +
        tr("The generation engine stopped: %1 → %2.")
            .arg(QString::fromStdString(incident->what), QString::fromStdString(incident->action)));
  }
}

}  // namespace lorascope::app
