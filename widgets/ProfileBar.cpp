// widgets/ProfileBar.cpp — profile buttons, switch requests, the editor entry points.
#include "widgets/ProfileBar.h"

#include <QButtonGroup>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

#include "profiles/Builtins.h"
#include "profiles/SwitchPlan.h"
#include "widgets/ProfileEditorDialog.h"

namespace lorascope::widgets {

using namespace lorascope::profiles;

ProfileBar::ProfileBar(std::filesystem::path userDir, QWidget* parent)
    : QWidget(parent), store_(std::move(userDir)) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 0, 4, 0);
  layout->addWidget(new QLabel(tr("Profile:"), this));
  buttonsLayout_ = new QHBoxLayout;
  buttonsLayout_->setSpacing(2);
  layout->addLayout(buttonsLayout_);
  group_ = new QButtonGroup(this);
  group_->setExclusive(true);

  auto* create = new QToolButton(this);
  create->setText(tr("New…"));
  create->setToolTip(tr("Create a user profile"));
  connect(create, &QToolButton::clicked, this, &ProfileBar::newProfile);
  edit_ = new QToolButton(this);
  edit_->setText(tr("Edit…"));
  edit_->setToolTip(tr("Edit the selected user profile (a built-in one is copied first)"));
  connect(edit_, &QToolButton::clicked, this, &ProfileBar::editRequested);
  problemsLabel_ = new QLabel(this);
  problemsLabel_->setObjectName(QStringLiteral("profileProblems"));
  layout->addWidget(create);
  layout->addWidget(edit_);
  layout->addWidget(problemsLabel_);
  layout->addStretch();
  reload();
}

void ProfileBar::reload() {
  for (QAbstractButton* b : group_->buttons()) {
    group_->removeButton(b);
    b->deleteLater();
  }
  const ProfileListing listing = store_.load();
  profiles_ = listing.profiles;
  problems_.clear();
  for (const ProfileLoadProblem& p : listing.problems) {
    problems_ << QString::fromStdString(p.message);
  }
  for (const ParsedProfile& parsed : profiles_) {
    const QString name = QString::fromStdString(parsed.profile.name);
    auto* button = new QToolButton(this);
    button->setText(name);
    button->setCheckable(true);
    button->setChecked(name == requested_);
    button->setEnabled(engineAvailable_);
    button->setObjectName(QStringLiteral("profile:") + name);
    group_->addButton(button);
    buttonsLayout_->addWidget(button);
    connect(button, &QToolButton::clicked, this, [this, name] { switchTo(name); });
  }
  problemsLabel_->setVisible(!problems_.isEmpty());
  problemsLabel_->setText(
      tr("⚠ %n profile file(s) not loaded", nullptr, static_cast<int>(problems_.size())));
  problemsLabel_->setToolTip(problems_.join(QLatin1Char('\n')));
  updateTooltips();
}

QStringList ProfileBar::profileNames() const {
  QStringList names;
  for (const ParsedProfile& p : profiles_) {
    names << QString::fromStdString(p.profile.name);
  }
  return names;
}

QAbstractButton* ProfileBar::button(const QString& name) const {
  for (QAbstractButton* b : group_->buttons()) {
    if (b->text() == name) {
      return b;
    }
  }
  return nullptr;
}

std::optional<Profile> ProfileBar::profile(const QString& name) const {
  for (const ParsedProfile& p : profiles_) {
    if (QString::fromStdString(p.profile.name) == name) {
      return p.profile;
    }
  }
  return std::nullopt;
}

QString ProfileBar::switchSummary(const QString& name) const {
  const auto target = profile(name);
  if (!target) {
    return {};
  }
  // Before any switch the engine runs with the environment it was started with; the run setup
  // chooses that profile, the default one until it exists.
  const Profile from = profile(requested_).value_or(defaultProfile());
  const SwitchPlan plan = planSwitch(from, *target);
  if (!plan.restartEngine) {
    return tr("Switching applies its toggles at the next step, without a restart.");
  }
  QStringList changes;
  for (const std::string& c : plan.environmentChanges) {
    changes << QString::fromStdString(c);
  }
  return tr("Switching restarts the engine (the HIP runtime reads its environment only at "
            "start-up) and resumes from the last step: %1")
      .arg(changes.join(QStringLiteral(", ")));
}

void ProfileBar::updateTooltips() {
  for (const ParsedProfile& p : profiles_) {
    const QString name = QString::fromStdString(p.profile.name);
    QAbstractButton* b = button(name);
    if (b == nullptr) {
      continue;
    }
    QString tip = QStringLiteral("<b>%1</b>%2<p>%3</p>")
                      .arg(name.toHtmlEscaped(), p.profile.builtin ? tr(" (built-in)") : QString(),
                           QString::fromStdString(p.profile.description).toHtmlEscaped());
    if (!p.profile.rationale.empty()) {
      tip += QStringLiteral("<p>%1</p>")
                 .arg(QString::fromStdString(p.profile.rationale).toHtmlEscaped());
    }
    tip += QStringLiteral("<p><i>%1</i></p>").arg(switchSummary(name).toHtmlEscaped());
    if (!engineAvailable_ && !unavailableReason_.isEmpty()) {
      tip += QStringLiteral("<p><b>%1</b></p>")
                 .arg(tr("Off now: %1").arg(unavailableReason_).toHtmlEscaped());
    }
    for (const ProfileNote& note : p.notes) {
      tip +=
          QStringLiteral("<p>⚠ %1</p>").arg(QString::fromStdString(note.message).toHtmlEscaped());
    }
    b->setToolTip(tip);
  }
}

void ProfileBar::switchTo(const QString& name) {
  if (!profile(name) || !engineAvailable_) {
    return;
  }
  select(name);
  emit commandRequested(engine::SwitchProfileCommand{name.toStdString()});
}

void ProfileBar::select(const QString& name) {
  if (!profile(name)) {
    return;
  }
  requested_ = name;
  if (QAbstractButton* b = button(name)) {
    b->setChecked(true);
  }
  updateTooltips();
}

void ProfileBar::setEngineAvailable(bool available, const QString& why) {
  const bool changed = available != engineAvailable_ || why != unavailableReason_;
  engineAvailable_ = available;
  unavailableReason_ = why;
  for (QAbstractButton* b : group_->buttons()) {
    b->setEnabled(available);
  }
  if (changed) {
    updateTooltips();
  }
}

void ProfileBar::newProfile() {
  Profile blank;
  blank.description = tr("My profile").toStdString();
  editProfile(blank);
}

void ProfileBar::editRequested() {
  editProfile(profile(requested_).value_or(defaultProfile()));
}

void ProfileBar::editProfile(const Profile& p) {
  ProfileEditorDialog dialog(store_, p, this);
  if (dialog.exec() == QDialog::Accepted) {
    reload();
  }
}

}  // namespace lorascope::widgets
