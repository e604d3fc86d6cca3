// widgets/ProfileEditorDialog.cpp — form fields ↔ Profile, validation through the profile parser.
#include "widgets/ProfileEditorDialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <map>

#include "profiles/Environment.h"
#include "profiles/ProfileJson.h"
#include "settings/Registry.h"  // defines: registry (the toggles a profile sets)

namespace lorascope::widgets {

using namespace lorascope::profiles;

ProfileEditorDialog::ProfileEditorDialog(const ProfileStore& store, const Profile& initial,
                                         QWidget* parent)
    : QDialog(parent), store_(store) {
  originalName_ = initial.builtin ? std::string() : initial.name;
  engine_ = initial.engine;
  setWindowTitle(initial.name.empty()
                     ? tr("New profile")
                     : tr("Edit profile “%1”").arg(QString::fromStdString(initial.name)));
  name_ = new QLineEdit(
      QString::fromStdString(initial.builtin ? initial.name + " (custom)" : initial.name), this);
  description_ = new QLineEdit(QString::fromStdString(initial.description), this);
  rationale_ = new QPlainTextEdit(QString::fromStdString(initial.rationale), this);
  rationale_->setMaximumHeight(80);

  environment_ = new QTableWidget(0, 3, this);
  environment_->setHorizontalHeaderLabels({tr("Variable"), tr("Value"), tr("Check")});
  environment_->horizontalHeader()->setSectionResizeMode(CheckColumn, QHeaderView::Stretch);
  environment_->verticalHeader()->setVisible(false);
  std::map<std::string, std::string> environment = initial.externalEnvironment;
  environment.insert(initial.environment.begin(), initial.environment.end());
  for (const auto& [variable, value] : environment) {
    addEnvironmentRow(QString::fromStdString(variable), QString::fromStdString(value));
  }
  auto* addRow = new QPushButton(tr("Add variable"), this);
  auto* removeRow = new QPushButton(tr("Remove variable"), this);
  connect(addRow, &QPushButton::clicked, this, [this] {
    addEnvironmentRow({}, {});
    environment_->editItem(environment_->item(environment_->rowCount() - 1, VariableColumn));
  });
  connect(removeRow, &QPushButton::clicked, this, [this] {
    if (environment_->currentRow() >= 0) {
      environment_->removeRow(environment_->currentRow());
      revalidate();
    }
  });
  connect(environment_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
    if (item->column() != CheckColumn) {
      revalidate();
    }
  });

  // One editor per toggle a profile may set: the settings registry's (Setting::profileKey).
  for (const settings::Setting& setting : settings::registry().all()) {
    if (!setting.profileKey.empty()) {
      toggleEditors_.emplace_back(
          &setting, toggleEditor(setting, toggleValue(initial.toggles, *setting.toggle)));
    }
  }
  allocatorMode_ = new QComboBox(this);
  allocatorMode_->addItems({tr("unchanged"), tr("caching"), tr("planned arena")});
  allocatorMode_->setCurrentIndex(
      initial.allocator.mode ? (*initial.allocator.mode == AllocatorMode::Caching ? 1 : 2) : 0);
  maxSplitMb_ = new QSpinBox(this);
  maxSplitMb_->setRange(0, 1 << 20);
  maxSplitMb_->setSuffix(tr(" MiB"));
  maxSplitMb_->setSpecialValueText(tr("unchanged"));
  maxSplitMb_->setValue(static_cast<int>(initial.allocator.maxSplitSizeBytes.value_or(0) >> 20));
  ladderRung_ = new QComboBox(this);
  for (auto rung = settings::Rung::VendorBlas; rung <= settings::Rung::Cpu;
       rung = settings::Rung(static_cast<int>(rung) + 1)) {
    ladderRung_->addItem(QString::fromLatin1(settings::rungProfileName(rung)),
                         static_cast<int>(rung));
  }
  ladderRung_->setCurrentIndex(static_cast<int>(initial.ladderRung));

  auto* form = new QFormLayout;
  form->addRow(tr("&Name"), name_);
  form->addRow(tr("&Description"), description_);
  form->addRow(tr("&Rationale"), rationale_);
  for (const auto& [setting, editor] : toggleEditors_) {
    QString label = QString::fromStdString(setting->eventName);  // "micro-batch", "CPU fallback"
    label[0] = label[0].toUpper();
    form->addRow(label, editor);
  }
  form->addRow(tr("Allocator"), allocatorMode_);
  form->addRow(tr("Max split size"), maxSplitMb_);
  form->addRow(tr("Recovery ladder rung"), ladderRung_);

  problemsLabel_ = new QLabel(this);
  problemsLabel_->setWordWrap(true);
  problemsLabel_->setStyleSheet(QStringLiteral("color: #c62828"));
  notesLabel_ = new QLabel(this);
  notesLabel_->setWordWrap(true);
  notesLabel_->setStyleSheet(QStringLiteral("color: #a15c00"));

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
  saveButton_ = buttons->button(QDialogButtonBox::Save);
  connect(buttons, &QDialogButtonBox::accepted, this, &ProfileEditorDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* envButtons = new QHBoxLayout;
  envButtons->addWidget(addRow);
  envButtons->addWidget(removeRow);
  envButtons->addStretch();
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(new QLabel(tr("Environment (read by the HIP runtime at start-up: changing it "
                                  "restarts the engine)"),
                               this));
  layout->addWidget(environment_);
  layout->addLayout(envButtons);
  layout->addWidget(problemsLabel_);
  layout->addWidget(notesLabel_);
  layout->addWidget(buttons);

  for (QLineEdit* edit : {name_, description_}) {
    connect(edit, &QLineEdit::textChanged, this, &ProfileEditorDialog::revalidate);
  }
  for (QComboBox* combo : {allocatorMode_, ladderRung_}) {
    connect(combo, &QComboBox::currentIndexChanged, this, &ProfileEditorDialog::revalidate);
  }
  connect(maxSplitMb_, &QSpinBox::valueChanged, this, &ProfileEditorDialog::revalidate);
  revalidate();
}

namespace {

// A choice's value as the toggle takes it: on/off as true/false, a name as itself.
nlohmann::json choiceValue(const QVariant& item) {
  return item.typeId() == QMetaType::Bool ? nlohmann::json(item.toBool())
                                          : nlohmann::json(item.toString().toStdString());
}

}  // namespace

// "unchanged" first: a profile sets only the toggles it names.
QWidget* ProfileEditorDialog::toggleEditor(const settings::Setting& setting,
                                           const std::optional<nlohmann::json>& value) {
  const settings::OptionSpec& spec = setting.toggleValue;
  if (spec.type == settings::OptionType::Integer) {
    auto* spin = new QSpinBox(this);
    spin->setRange(static_cast<int>(spec.min) - 1, static_cast<int>(spec.max));
    spin->setSpecialValueText(tr("unchanged"));  // the minimum
    spin->setValue(value ? value->get<int>() : spin->minimum());
    connect(spin, &QSpinBox::valueChanged, this, &ProfileEditorDialog::revalidate);
    return spin;
  }
  auto* combo = new QComboBox(this);
  combo->addItem(tr("unchanged"));
  if (spec.type == settings::OptionType::Bool) {
    combo->addItem(tr("on"), true);
    combo->addItem(tr("off"), false);
  } else {
    for (const std::string& choice : spec.choices) {
      combo->addItem(QString::fromStdString(choice), QString::fromStdString(choice));
    }
  }
  for (int i = 1; value && i < combo->count(); ++i) {
    if (choiceValue(combo->itemData(i)) == *value) {
      combo->setCurrentIndex(i);
    }
  }
  connect(combo, &QComboBox::currentIndexChanged, this, &ProfileEditorDialog::revalidate);
  return combo;
}

std::optional<nlohmann::json> ProfileEditorDialog::toggleEditorValue(const QWidget* editor) {
  if (const auto* spin = qobject_cast<const QSpinBox*>(editor)) {
    return spin->value() == spin->minimum() ? std::nullopt
                                            : std::optional<nlohmann::json>(spin->value());
  }
  const auto* combo = qobject_cast<const QComboBox*>(editor);
  if (combo->currentIndex() == 0) {
    return std::nullopt;
  }
  return choiceValue(combo->currentData());
}

void ProfileEditorDialog::addEnvironmentRow(const QString& variable, const QString& value) {
  const QSignalBlocker blocker(environment_);
  const int r = environment_->rowCount();
  environment_->insertRow(r);
  environment_->setItem(r, VariableColumn, new QTableWidgetItem(variable));
  environment_->setItem(r, ValueColumn, new QTableWidgetItem(value));
  auto* check = new QTableWidgetItem;
  check->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  environment_->setItem(r, CheckColumn, check);
  revalidate();
}

Profile ProfileEditorDialog::profile() const {
  Profile p;
  p.name = name_->text().trimmed().toStdString();
  p.description = description_->text().toStdString();
  p.rationale = rationale_->toPlainText().toStdString();
  for (int r = 0; r < environment_->rowCount(); ++r) {
    const QString variable = environment_->item(r, VariableColumn)->text().trimmed();
    if (!variable.isEmpty()) {
      p.environment[variable.toStdString()] =
          environment_->item(r, ValueColumn)->text().toStdString();
    }
  }
  for (const auto& [setting, editor] : toggleEditors_) {
    if (const std::optional<nlohmann::json> value = toggleEditorValue(editor)) {
      p.toggles[*setting->toggle] = *value;
    }
  }
  if (allocatorMode_->currentIndex() > 0) {
    p.allocator.mode =
        allocatorMode_->currentIndex() == 1 ? AllocatorMode::Caching : AllocatorMode::Arena;
  }
  if (maxSplitMb_->value() > 0) {
    p.allocator.maxSplitSizeBytes = static_cast<std::uint64_t>(maxSplitMb_->value()) << 20;
  }
  p.ladderRung = static_cast<settings::Rung>(ladderRung_->currentData().toInt());
  p.engine = engine_;
  return p;
}

void ProfileEditorDialog::revalidate() {
  const QSignalBlocker blocker(environment_);
  for (int r = 0; r < environment_->rowCount(); ++r) {
    const std::string variable =
        environment_->item(r, VariableColumn)->text().trimmed().toStdString();
    QTableWidgetItem* check = environment_->item(r, CheckColumn);
    if (variable.empty()) {
      check->setText(tr("(empty: ignored)"));
      check->setForeground(palette().color(QPalette::PlaceholderText));
    } else if (const VariablePolicy policy = variablePolicy(variable);
               policy.external == VariableUse::Refuse) {
      check->setText(tr("forbidden: %1").arg(QString::fromStdString(policy.reason)));
      check->setForeground(QColor(0xc6, 0x28, 0x28));
    } else if (policy.engine == VariableUse::Ignore) {
      check->setText(tr("external trainers only: %1").arg(QString::fromStdString(policy.reason)));
      check->setForeground(palette().color(QPalette::Text));
    } else if (const auto advice = folkloreAdvice(variable)) {
      check->setText(tr("folklore: %1").arg(QString::fromStdString(*advice)));
      check->setForeground(QColor(0xa1, 0x5c, 0x00));
    } else if (isAllocatorConfVariable(variable)) {
      check->setText(tr("mapped onto LoRAscope's allocator"));
      check->setForeground(palette().color(QPalette::Text));
    } else {
      check->setText(tr("ok"));
      check->setForeground(palette().color(QPalette::Text));
    }
    check->setToolTip(check->text());
  }
  problems_.clear();
  QStringList notes;
  try {
    const ParsedProfile parsed = parseProfile(profileToJson(profile()), "this profile");
    for (const ProfileNote& note : parsed.notes) {
      notes << QString::fromStdString(note.field + ": " + note.message);
    }
  } catch (const ProfileError& e) {
    problems_ = QString::fromUtf8(e.what());
  }
  notes_ = notes.join(QLatin1Char('\n'));
  problemsLabel_->setText(problems_);
  problemsLabel_->setVisible(!problems_.isEmpty());
  notesLabel_->setText(notes_);
  notesLabel_->setVisible(!notes_.isEmpty());
  saveButton_->setEnabled(problems_.isEmpty());
}

QString ProfileEditorDialog::problems() const {
  return problems_;
}
QString ProfileEditorDialog::notes() const {
  return notes_;
}
bool ProfileEditorDialog::canSave() const {
  return problems_.isEmpty();
}

QString ProfileEditorDialog::save() {
  if (!canSave()) {
    return problems_;
  }
  const Profile p = profile();
  try {
    store_.save(p);
    if (!originalName_.empty() && originalName_ != p.name) {
      store_.remove(originalName_);
    }
  } catch (const std::exception& e) {  // ProfileError or a filesystem error
    problems_ = QString::fromUtf8(e.what());
    problemsLabel_->setText(problems_);
    problemsLabel_->setVisible(true);
    return problems_;
  }
  return {};
}

void ProfileEditorDialog::accept() {
  if (save().isEmpty()) {
    QDialog::accept();
  }
}

}  // namespace lorascope::widgets
