// widgets/ProfileEditorDialog.h — creates or edits a user profile: name, description, rationale,
// environment variables, live toggles, allocator mode and ladder rung.
//
// Every change is checked by backend/profiles' own parser (the profile is written with
// profileToJson and read back with parseProfile): a forbidden variable (outside the allow-list,
// e.g. LD_PRELOAD) blocks saving with the parser's message; a folklore variable (e.g.
// HIP_SERIALIZE_KERNEL, read by nothing) is flagged on its row with the real alternative.
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>
#include <optional>
#include <utility>
#include <vector>

#include "profiles/Profile.h"
#include "profiles/ProfileStore.h"
#include "settings/Registry.h"  // defines: Setting

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace lorascope::widgets {

class ProfileEditorDialog : public QDialog {
  Q_OBJECT

 public:
  enum EnvColumn { VariableColumn, ValueColumn, CheckColumn };

  ProfileEditorDialog(const profiles::ProfileStore& store, const profiles::Profile& initial,
                      QWidget* parent = nullptr);

  profiles::Profile profile() const;  // what the fields say now
  QString problems() const;           // parser errors; "" when the profile can be saved
  QString notes() const;              // folklore flags and allocator mappings
  bool canSave() const;
  QTableWidget* environmentTable() const { return environment_; }
  QLineEdit* nameEdit() const { return name_; }
  void addEnvironmentRow(const QString& variable, const QString& value);

  // Saves through the store; returns "" or why not (also shown in the dialog).
  QString save();

 public slots:
  void accept() override;

 private slots:
  void revalidate();

 private:
  QWidget* toggleEditor(const settings::Setting& setting,
                        const std::optional<nlohmann::json>& value);
  static std::optional<nlohmann::json> toggleEditorValue(
      const QWidget* editor);  // unset: unchanged

  const profiles::ProfileStore& store_;
  std::string originalName_;         // a renamed user profile replaces its old file
  profiles::EngineLocation engine_;  // kept as the file has it: this dialog does not edit it
  QLineEdit* name_;
  QLineEdit* description_;
  QPlainTextEdit* rationale_;
  QTableWidget* environment_;
  // The toggles' editors, in the registry's order.
  std::vector<std::pair<const settings::Setting*, QWidget*>> toggleEditors_;
  QComboBox* allocatorMode_;
  QSpinBox* maxSplitMb_;
  QComboBox* ladderRung_;
  QLabel* problemsLabel_;
  QLabel* notesLabel_;
  QPushButton* saveButton_;
  QString problems_;
  QString notes_;
};

}  // namespace lorascope::widgets
