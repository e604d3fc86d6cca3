// gui/CommandSetup.cpp — the fields of "Run a command", their checks and their memory.
#include "gui/CommandSetup.h"

#include <QComboBox>
#include <QCryptographicHash>
#include <QDir>
#include <QFormLayout>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>

#include "common/ChildProcess.h"  // defines: findExecutable
#include "external/OutputParser.h"

namespace lorascope::app {
namespace {

// QSettings keys may not hold every character a command line does: one hash per command.
QString settingsGroup(const QString& commandLine) {
  return QStringLiteral("commands/") +
         QString::fromLatin1(
             QCryptographicHash::hash(commandLine.trimmed().toUtf8(), QCryptographicHash::Sha1)
                 .toHex());
}

}  // namespace

CommandSetup::CommandSetup(QWidget* parent) : QGroupBox(tr("Run a command"), parent) {
  command_ = new QLineEdit;
  command_->setPlaceholderText(tr("python3 -m lorascope_probe train.py --output_dir out"));
  command_->setToolTip(
      tr("The trainer's command line, as in a shell (quotes keep blanks inside one argument). "
         "With python -m lorascope_probe (python/ of LoRAscope's source on PYTHONPATH), "
         "PyTorch's memory reaches the memory map"));
  folder_ = new QLineEdit;
  folder_->setPlaceholderText(tr("the folder it starts in (default: the current folder)"));
  profile_ = new QComboBox;
  profile_->setToolTip(tr("The stability profile whose environment the command starts with"));
  parser_ = new QComboBox;
  parser_->setEditable(true);
  parser_->addItems({QStringLiteral("hf"), QStringLiteral("tqdm"), QStringLiteral("kohya"),
                     QStringLiteral("lightning"),
                     QStringLiteral("regex:step (?<step>\\d+) loss (?<loss>[0-9.e+-]+)")});
  parser_->setToolTip(
      tr("How progress is read from the output: hf, tqdm, kohya, lightning, or "
         "regex:PATTERN with named groups step, loss, lr, epoch"));
  resume_ = new QLineEdit;
  resume_->setPlaceholderText(tr("--resume_from_checkpoint {checkpoint_dir}"));
  resume_->setToolTip(tr("Added on a restart, {checkpoint_dir} being the newest checkpoint"));
  glob_ = new QLineEdit;
  glob_->setPlaceholderText(tr("out/checkpoint-*"));
  batchArg_ = new QLineEdit;
  batchArg_->setPlaceholderText(tr("--per_device_train_batch_size {batch}"));
  batchArg_->setToolTip(tr("How the batch is passed; the ladder halves it after out of memory"));
  batch_ = new QSpinBox;
  batch_->setRange(0, 1 << 20);
  batch_->setSpecialValueText(tr("none"));
  hang_ = new QSpinBox;
  hang_->setRange(0, 7 * 24 * 3600);
  hang_->setSuffix(tr(" s"));
  hang_->setSpecialValueText(tr("no hang watch"));
  hang_->setToolTip(tr("Seconds without an output line or a probe step that count as a hang"));

  auto* form = new QFormLayout(this);
  form->addRow(tr("Co&mmand"), command_);
  form->addRow(tr("Fo&lder"), folder_);
  form->addRow(tr("Profile"), profile_);
  form->addRow(tr("Output &parser"), parser_);
  form->addRow(tr("Resume argument"), resume_);
  form->addRow(tr("Checkpoints"), glob_);
  form->addRow(tr("Batch argument"), batchArg_);
  form->addRow(tr("First batch"), batch_);
  form->addRow(tr("Hang after"), hang_);

  connect(command_, &QLineEdit::editingFinished, this, [this] { restore(commandLine()); });
  for (QLineEdit* edit : {command_, folder_, resume_, glob_, batchArg_}) {
    connect(edit, &QLineEdit::textChanged, this, &CommandSetup::changed);
  }
  connect(parser_, &QComboBox::currentTextChanged, this, &CommandSetup::changed);
}

QString CommandSetup::commandLine() const {
  return command_->text().trimmed();
}

QString CommandSetup::profileName() const {
  return profile_->currentText();
}

void CommandSetup::setProfiles(const QStringList& names, const QString& current) {
  const QString keep = profile_->currentText().isEmpty() ? current : profile_->currentText();
  profile_->clear();
  profile_->addItems(names);
  profile_->setCurrentText(keep);
}

std::optional<external::SupervisedCommand> CommandSetup::command(QString* error) const {
  auto fail = [&](const QString& text) {
    if (error != nullptr)
      *error = text;
    return std::optional<external::SupervisedCommand>();
  };
  const std::vector<std::string> words = external::splitTemplate(commandLine().toStdString());
  if (words.empty())
    return fail(tr("Run a command: no command"));
  external::SupervisedCommand c;
  c.workingDirectory = folder_->text().trimmed().toStdString();
  if (!c.workingDirectory.empty() && !QDir(folder_->text().trimmed()).exists())
    return fail(tr("Run a command: the folder %1 does not exist").arg(folder_->text()));
  std::string program = words.front();
  if (program.find('/') != std::string::npos && program.front() != '/' &&
      !c.workingDirectory.empty())
    program = c.workingDirectory + "/" + program;
  c.program = common::findExecutable(program);
  if (c.program.empty())
    return fail(tr("Run a command: %1 is not an executable file or a program on PATH")
                    .arg(QString::fromStdString(words.front())));
  c.arguments.assign(words.begin() + 1, words.end());
  c.parser = parser_->currentText().trimmed().toStdString();
  try {
    external::makeOutputParser(c.parser);
  } catch (const external::ExternalError& e) {
    return fail(tr("Run a command: %1").arg(QString::fromStdString(e.what())));
  }
  c.resumeArgument = resume_->text().trimmed().toStdString();
  c.checkpointGlob = glob_->text().trimmed().toStdString();
  if (!c.resumeArgument.empty() &&
      (c.resumeArgument.find("{checkpoint_dir}") == std::string::npos || c.checkpointGlob.empty()))
    return fail(
        tr("Run a command: the resume argument needs {checkpoint_dir} and a checkpoint "
           "glob"));
  c.batchArgument = batchArg_->text().trimmed().toStdString();
  c.batch = batch_->value();
  if (!c.batchArgument.empty() &&
      (c.batchArgument.find("{batch}") == std::string::npos || c.batch == 0))
    return fail(tr("Run a command: the batch argument needs {batch} and a first batch"));
  c.hangAfterSeconds = hang_->value();
  return c;
}

void CommandSetup::save() const {
  if (commandLine().isEmpty())
    return;
  QSettings settings;
  settings.setValue(QStringLiteral("commands/last"), commandLine());
  settings.beginGroup(settingsGroup(commandLine()));
  settings.setValue(QStringLiteral("folder"), folder_->text());
  settings.setValue(QStringLiteral("profile"), profile_->currentText());
  settings.setValue(QStringLiteral("parser"), parser_->currentText());
  settings.setValue(QStringLiteral("resume"), resume_->text());
  settings.setValue(QStringLiteral("glob"), glob_->text());
  settings.setValue(QStringLiteral("batch_arg"), batchArg_->text());
  settings.setValue(QStringLiteral("batch"), batch_->value());
  settings.setValue(QStringLiteral("hang_after"), hang_->value());
}

void CommandSetup::restore(const QString& commandLine) {
  QSettings settings;
  const QString line = commandLine.isEmpty()
                           ? settings.value(QStringLiteral("commands/last")).toString()
                           : commandLine;
  settings.beginGroup(settingsGroup(line));
  if (!settings.contains(QStringLiteral("parser")))
    return;  // never run: the fields stay as they are
  if (command_->text().trimmed() != line)
    command_->setText(line);
  folder_->setText(settings.value(QStringLiteral("folder")).toString());
  profile_->setCurrentText(settings.value(QStringLiteral("profile")).toString());
  parser_->setCurrentText(settings.value(QStringLiteral("parser")).toString());
  resume_->setText(settings.value(QStringLiteral("resume")).toString());
  glob_->setText(settings.value(QStringLiteral("glob")).toString());
  batchArg_->setText(settings.value(QStringLiteral("batch_arg")).toString());
  batch_->setValue(settings.value(QStringLiteral("batch")).toInt());
  hang_->setValue(settings.value(QStringLiteral("hang_after")).toInt());
}

}  // namespace lorascope::app
