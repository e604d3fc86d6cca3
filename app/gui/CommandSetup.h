// gui/CommandSetup.h — the setup page's "Run a command": a trainer of the user's own (a PyTorch
// script, Hugging Face Trainer, accelerate, kohya-ss, Lightning) with the fields of
// `lorascope-train supervise` — the command line, the folder it starts in, the profile, the output
// parser, the resume argument and checkpoint glob, the batch argument and first batch, the hang
// limit. The fields are remembered per command line (QSettings "commands/"): typing a command
// run before brings its fields back. command() checks them as the CLI does (the program found,
// the parser's regex compiled, the templates' placeholders present) and names what is wrong.
#pragma once

#include <QGroupBox>
#include <QString>
#include <optional>

#include "external/LaunchPlan.h"

class QComboBox;
class QLineEdit;
class QSpinBox;

namespace lorascope::app {

class CommandSetup : public QGroupBox {
  Q_OBJECT

 public:
  explicit CommandSetup(QWidget* parent = nullptr);

  // The command to supervise, or nullopt with `error` saying what is wrong.
  std::optional<external::SupervisedCommand> command(QString* error) const;
  QString commandLine() const;
  QString profileName() const;
  void setProfiles(const QStringList& names, const QString& current);

  // Remembers the fields under the current command line; restore() brings back those of
  // `commandLine` (nothing when it was never run).
  void save() const;
  void restore(const QString& commandLine);

  QLineEdit* commandEdit() const { return command_; }
  QLineEdit* folderEdit() const { return folder_; }
  QComboBox* parserEdit() const { return parser_; }
  QLineEdit* resumeEdit() const { return resume_; }
  QLineEdit* globEdit() const { return glob_; }
  QLineEdit* batchArgEdit() const { return batchArg_; }
  QSpinBox* batchEdit() const { return batch_; }
  QSpinBox* hangEdit() const { return hang_; }

 signals:
  void changed();

 private:
  QLineEdit* command_;
  QLineEdit* folder_;
  QComboBox* profile_;
  QComboBox* parser_;
  QLineEdit* resume_;
  QLineEdit* glob_;
  QLineEdit* batchArg_;
  QSpinBox* batch_;
  QSpinBox* hang_;
};

}  // namespace lorascope::app
