// widgets/ProfileBar.h — built-in and user profiles as one row of buttons: one click sends a
// SwitchProfileCommand. Each button's tooltip gives the profile's description, rationale and
// whether switching restarts the engine (its environment differs: backend/profiles' planSwitch).
// "New…" and "Edit…" open the profile editor; files that fail to load are listed, never hidden.
// The chosen profile is shown pressed from the start (select), before any engine is connected;
// while there is no engine to switch, the buttons are off and their tooltip says why.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>
#include <filesystem>
#include <optional>

#include "profiles/ProfileStore.h"
#include "widgets/EngineTypes.h"

class QAbstractButton;
class QButtonGroup;
class QHBoxLayout;
class QLabel;
class QToolButton;

namespace lorascope::widgets {

class ProfileBar : public QWidget {
  Q_OBJECT

 public:
  explicit ProfileBar(std::filesystem::path userDir, QWidget* parent = nullptr);

  QStringList profileNames() const;
  QAbstractButton* button(const QString& name) const;
  QString requestedProfile() const { return requested_; }
  QStringList loadProblems() const { return problems_; }
  const profiles::ProfileStore& store() const { return store_; }
  std::optional<profiles::Profile> profile(const QString& name) const;
  // "Switching restarts the engine: …" when the environment differs from the current profile.
  QString switchSummary(const QString& name) const;

 public slots:
  void reload();
  void switchTo(const QString& name);
  // Shows `name` as the chosen profile without sending anything (the setup page chose it).
  void select(const QString& name);
  // `why`: the reason the buttons are off when not available ("no engine is connected").
  void setEngineAvailable(bool available, const QString& why = {});
  void newProfile();
  void editRequested();  // edits the requested user profile, or copies a built-in one

 signals:
  void commandRequested(const lorascope::engine::Command& command);

 private:
  void editProfile(const profiles::Profile& profile);
  void updateTooltips();

  profiles::ProfileStore store_;
  std::vector<profiles::ParsedProfile> profiles_;
  QStringList problems_;
  QString requested_;
  bool engineAvailable_ = false;
  QString unavailableReason_;
  QHBoxLayout* buttonsLayout_;
  QButtonGroup* group_;
  QLabel* problemsLabel_;
  QToolButton* edit_;
};

}  // namespace lorascope::widgets
