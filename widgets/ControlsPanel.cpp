// widgets/ControlsPanel.cpp — one row per live option: editor, live/restart badge, confirmation
// state.
#include "widgets/ControlsPanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <climits>

#include "settings/Options.h"     // defines: parseOptionValue, UsageError
#include "widgets/DisplayText.h"  // defines: toggleValueText, rungText, counted

namespace lorascope::widgets {

using namespace lorascope::engine;

namespace {

QString noRungText() {
  return ControlsPanel::tr("Recovery: nothing stepped down (the run uses %1)")
      .arg(rungText("vendor_blas"));
}

QString noBatchText() {
  return ControlsPanel::tr("Effective batch: n/a (no step reported yet)");
}

}  // namespace

std::vector<ControlSpec> liveControls(const settings::Registry& registry) {
  std::vector<ControlSpec> rows;
  for (const settings::Setting& setting : registry.all()) {
    if (setting.apply != settings::Apply::Live || !setting.toggle) {
      continue;
    }
    ControlSpec row;
    row.toggle = *setting.toggle;
    const settings::OptionSpec& value = setting.toggleValue;
    // A tick over an option of other values (device cpu/gpu: CPU fallback on/off) is named by
    // what the tick means, not by the option.
    const bool tickOverChoice = value.type == settings::OptionType::Bool &&
                                setting.option.type != settings::OptionType::Bool;
    row.label = QString::fromStdString(tickOverChoice ? setting.eventName : setting.label);
    row.help = QString::fromStdString(setting.option.help);
    row.live = true;
    switch (value.type) {
      case settings::OptionType::Bool:
        row.editor = ControlSpec::Editor::Check;
        break;
      case settings::OptionType::Integer:
        row.editor = ControlSpec::Editor::Number;
        row.min = static_cast<int>(value.min);
        row.max = static_cast<int>(std::min<double>(value.max, INT_MAX));
        break;
      default:
        row.editor = ControlSpec::Editor::Choice;
        if (!setting.toggleValues.empty()) {
          for (const auto& [choice, toggleValue] : setting.toggleValues) {
            row.choices.append({QString::fromStdString(choice), toggleValue});
          }
        } else {
          for (const std::string& choice : setting.toggleValue.choices) {
            row.choices.append({QString::fromStdString(choice), nlohmann::json(choice)});
          }
        }
        break;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::map<Toggle, nlohmann::json> configuredToggles(
    const std::map<std::string, std::string>& options, const settings::Registry& registry) {
  std::map<Toggle, nlohmann::json> values;
  for (const settings::Setting& setting : registry.all()) {
    const auto text = options.find(setting.option.name);
    if (setting.apply != settings::Apply::Live || !setting.toggle || text == options.end()) {
      continue;
    }
    try {
      nlohmann::json value = settings::toggleValueOf(
          setting, settings::parseOptionValue(setting.option, text->second));
      if (settings::toggleValueProblem(setting, value).empty()) {
        values[*setting.toggle] = std::move(value);
      }
    } catch (const settings::UsageError&) {
      // A value the registry refuses: Setup lists it, and no run starts with it.
    }
  }
  return values;
}

ControlsPanel::ApplyMode ControlsPanel::applyMode(Toggle toggle) const {
  return row(toggle).spec.live ? ApplyMode::Live : ApplyMode::Restart;
}

ControlsPanel::ControlsPanel(const std::vector<ControlSpec>& controls, QWidget* parent)
    : QWidget(parent) {
  live_.effectiveBatch = noBatchText();
  live_.ladder = noRungText();
  live_.showsConfigured = true;  // before the first run the dock speaks of the run Setup starts
  source_ = new QLabel(this);
  source_->setObjectName(QStringLiteral("controlsSource"));
  source_->setWordWrap(true);
  source_->setVisible(false);
  auto* grid = new QGridLayout;
  int line = 0;
  for (const ControlSpec& spec : controls) {
    const Toggle toggle = spec.toggle;
    Row& r = rows_[toggle];
    r.spec = spec;
    live_.rows[toggle];
    auto* label = new QLabel(spec.label, this);
    label->setWordWrap(true);  // the dock stays narrow beside a 1024-pixel dashboard
    label->setToolTip(spec.help);
    switch (spec.editor) {
      case ControlSpec::Editor::Number: {
        auto* spin = new QSpinBox(this);
        spin->setKeyboardTracking(false);  // one command per committed value, not per keystroke
        connect(spin, &QSpinBox::valueChanged, this, [this, toggle](int v) {
          if (v >= row(toggle).spec.min) {  // below it: showValue's "no value", never sent
            requestToggle(toggle, v);
          }
        });
        r.editor = spin;
        break;
      }
      case ControlSpec::Editor::Choice: {
        auto* combo = new QComboBox(this);
        for (const auto& [text, value] : spec.choices) {
          combo->addItem(text, QString::fromStdString(value.is_string() ? value.get<std::string>()
                                                                        : value.dump()));
        }
        combo->setCurrentIndex(-1);
        connect(combo, &QComboBox::activated, this, [this, toggle](int index) {
          requestToggle(toggle, row(toggle).spec.choices.at(index).second);
        });
        r.editor = combo;
        break;
      }
      case ControlSpec::Editor::Check: {
        auto* check = new QCheckBox(this);
        connect(check, &QCheckBox::clicked, this,
                [this, toggle](bool on) { requestToggle(toggle, on); });
        r.editor = check;
        break;
      }
    }
    r.editor->setToolTip(spec.help);
    label->setBuddy(r.editor);
    auto* mode = new QLabel(spec.live ? tr("live") : tr("restart"), this);
    mode->setToolTip(spec.live ? tr("Applied at the next step, without a restart")
                               : tr("Applying it restarts the engine, which resumes from the last "
                                    "step"));
    mode->setEnabled(false);  // a quiet badge
    r.status = new QLabel(this);
    r.status->setMinimumWidth(64);
    r.status->setMaximumWidth(260);
    r.status->setWordWrap(true);  // a refusal's reason is shown whole
    grid->addWidget(label, line, 0);
    grid->addWidget(r.editor, line, 1);
    grid->addWidget(mode, line, 2);
    grid->addWidget(r.status, line, 3);
    displayRow(toggle);  // nothing known yet: no value
    ++line;
  }
  effectiveBatch_ = new QLabel(this);
  effectiveBatch_->setObjectName(QStringLiteral("effectiveBatch"));
  effectiveBatch_->setWordWrap(true);
  effectiveBatch_->setText(live_.effectiveBatch);
  ladder_ = new QLabel(live_.ladder, this);
  ladder_->setObjectName(QStringLiteral("recoveryLadder"));
  ladder_->setWordWrap(true);
  ladder_->setToolTip(
      tr("After a GPU error the engine is restarted one step more cautious each time: the "
         "built-in GEMM instead of the vendor BLAS, then serialized kernels, then a smaller "
         "micro-batch, then the CPU. Undo steps back the last one."));
  undoRung_ = new QPushButton(tr("Undo"), this);
  undoRung_->setObjectName(QStringLiteral("undoRung"));
  undoRung_->setToolTip(tr("Step back the last rung the recovery ladder took"));
  connect(undoRung_, &QPushButton::clicked, this,
          [this] { emit commandRequested(UndoRungCommand{}); });
  auto* ladderRow = new QHBoxLayout;
  ladderRow->addWidget(ladder_, 1);
  ladderRow->addWidget(undoRung_);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(source_);
  layout->addLayout(grid);
  layout->addWidget(effectiveBatch_);
  layout->addLayout(ladderRow);
  layout->addStretch();
  setEngineAvailable(false);
}

QString ControlsPanel::ladderText() const {
  return ladder_->text();
}

bool ControlsPanel::canUndoRung() const {
  return undoRung_->isEnabled();
}

QPushButton* ControlsPanel::undoRungButton() const {
  return undoRung_;
}

ControlsPanel::Row& ControlsPanel::row(Toggle toggle) {
  return rows_.at(toggle);
}
const ControlsPanel::Row& ControlsPanel::row(Toggle toggle) const {
  return rows_.at(toggle);
}

const ControlsPanel::RowState& ControlsPanel::rowState(Toggle toggle) const {
  return shown().rows.at(toggle);
}

const nlohmann::json* ControlsPanel::configured(Toggle toggle) const {
  if (!shown().showsConfigured) {
    return nullptr;
  }
  if (const auto ladder = byLadder_.find(toggle); ladder != byLadder_.end()) {
    return &ladder->second;
  }
  const auto it = configured_.find(toggle);
  return it != configured_.end() ? &it->second : nullptr;
}

void ControlsPanel::overlayLadder() {
  byLadder_.clear();
  for (auto r = static_cast<int>(settings::Rung::VendorBlas) + 1; r <= static_cast<int>(live_.rung);
       ++r) {
    for (const settings::Setting* s : settings::registry().setByRung(settings::Rung(r))) {
      if (!s->toggle || !rows_.contains(*s->toggle)) {
        continue;
      }
      if (!s->ladder->halves) {
        byLadder_[*s->toggle] = s->ladder->value;
        continue;
      }
      const auto given = configured_.find(*s->toggle);
      if (given != configured_.end() && given->second.is_number_integer() &&
          given->second.get<std::int64_t>() > 1) {
        byLadder_[*s->toggle] = given->second.get<std::int64_t>() / 2;
      }
    }
  }
}

void ControlsPanel::displayUnreported() {
  if (recording_) {
    return;
  }
  for (const auto& [toggle, r] : live_.rows) {
    if (!r.pending && !r.applied) {
      displayRow(toggle);  // a value the engine reported, or a change pending, stays
    }
  }
}

ControlsPanel::Status ControlsPanel::status(Toggle toggle) const {
  const RowState& r = rowState(toggle);
  if (r.pending) {
    return Status::Pending;
  }
  if (!r.refusal.isEmpty()) {
    return Status::Refused;
  }
  if (!r.notApplicable.isEmpty()) {
    return Status::NotApplicable;
  }
  if (r.applied) {
    return Status::Applied;
  }
  return configured(toggle) != nullptr ? Status::Configured : Status::NotReported;
}

QString ControlsPanel::statusText(Toggle toggle) const {
  return row(toggle).status->text();
}

QWidget* ControlsPanel::editor(Toggle toggle) const {
  return row(toggle).editor;
}

std::optional<nlohmann::json> ControlsPanel::appliedValue(Toggle toggle) const {
  return rowState(toggle).applied;
}

QString ControlsPanel::effectiveBatchText() const {
  return effectiveBatch_->text();
}

void ControlsPanel::setEngineAvailable(bool available) {
  engineAvailable_ = available;
  undoRung_->setEnabled(engineAvailable_ && !recording_ && shown().undoableRungs > 0);
  for (const auto& [toggle, r] : rows_) {
    updateEnabled(toggle);
  }
}

void ControlsPanel::updateEnabled(Toggle toggle) {
  Row& r = row(toggle);
  const RowState& state = rowState(toggle);
  r.editor->setEnabled(engineAvailable_ && !recording_ && state.notApplicable.isEmpty());
  r.editor->setToolTip(state.notApplicable.isEmpty()
                           ? r.spec.help
                           : tr("Not applicable on this device: %1").arg(state.notApplicable));
}

void ControlsPanel::displayRow(Toggle toggle) {
  const RowState& r = rowState(toggle);
  if (r.pending || r.applied) {
    showValue(toggle, r.pending ? *r.pending : *r.applied);
  } else if (const nlohmann::json* value = configured(toggle)) {
    showValue(toggle, *value);
  } else {
    showValue(toggle, nlohmann::json());  // nothing known: no value shown
  }
  updateStatus(toggle);
  updateEnabled(toggle);
}

void ControlsPanel::display() {
  const State& state = shown();
  for (const auto& [toggle, r] : state.rows) {
    displayRow(toggle);
  }
  effectiveBatch_->setText(state.effectiveBatch);
  ladder_->setText(state.ladder);
  undoRung_->setEnabled(engineAvailable_ && !recording_ && state.undoableRungs > 0);
  source_->setVisible(recording_.has_value());
  source_->setText(recording_ ? tr("<b>Showing %1</b> (read only): the settings that run "
                                   "reported. Choose the live run on the dashboard to change "
                                   "the engine's.")
                                    .arg(recording_->name.toHtmlEscaped())
                              : QString());
}

void ControlsPanel::setConfigured(std::map<Toggle, nlohmann::json> values, const QString& profile,
                                  const profiles::LiveToggles& profileToggles) {
  configured_ = std::move(values);
  configuredProfile_ = profile;
  byProfile_.clear();
  for (const auto& [toggle, value] : profileToggles) {
    if (rows_.contains(toggle) && profiles::setAtStart(toggle, value)) {
      configured_[toggle] = value;
      byProfile_.insert(toggle);
    }
  }
  overlayLadder();
  displayUnreported();
}

void ControlsPanel::startRun(bool fromConfigured) {
  for (auto& [toggle, r] : live_.rows) {
    r = RowState{};
  }
  live_.showsConfigured = fromConfigured;
  live_.effectiveBatch = noBatchText();
  if (!recording_) {
    display();
  }
}

void ControlsPanel::endRun() {
  for (auto& [toggle, r] : live_.rows) {
    r.pending.reset();
    r.refusal.clear();
  }
  if (!recording_) {
    display();
  }
}

void ControlsPanel::showRecorded(const QString& name, const std::vector<TimedEvent>& events) {
  State state;
  state.name = name;
  for (const auto& [toggle, r] : rows_) {
    state.rows[toggle];
  }
  state.effectiveBatch = noBatchText();
  state.ladder = noRungText();
  for (const TimedEvent& e : events) {
    apply(state, e);
  }
  recording_ = std::move(state);
  display();
}

void ControlsPanel::showLive() {
  recording_.reset();
  display();
}

void ControlsPanel::requestToggle(Toggle toggle, const nlohmann::json& value) {
  if (recording_) {
    return;  // a recording's settings are not the engine's
  }
  RowState& r = live_.rows.at(toggle);
  if (!r.pending && r.applied && *r.applied == value) {
    return;  // already in effect
  }
  r.pending = value;
  r.refusal.clear();
  showValue(toggle, value);
  updateStatus(toggle);
  emit commandRequested(SetToggleCommand{toggle, value});
}

void ControlsPanel::showValue(Toggle toggle, const nlohmann::json& value) {
  QWidget* editor = row(toggle).editor;
  const QSignalBlocker blocker(editor);
  if (auto* check = qobject_cast<QCheckBox*>(editor)) {
    check->setChecked(value.is_boolean() && value.get<bool>());
  } else if (auto* spin = qobject_cast<QSpinBox*>(editor)) {
    // No value: one below the range, shown as a dash; the minimum would read as the value.
    const ControlSpec& spec = row(toggle).spec;
    const bool known = value.is_number_integer();
    spin->setSpecialValueText(known ? QString() : QStringLiteral("—"));
    spin->setRange(known ? spec.min : spec.min - 1, spec.max);
    spin->setValue(known ? value.get<int>() : spin->minimum());
  } else if (auto* combo = qobject_cast<QComboBox*>(editor)) {
    const auto& choices = row(toggle).spec.choices;
    int index = -1;
    for (int i = 0; i < choices.size(); ++i) {
      index = choices[i].second == value ? i : index;
    }
    combo->setCurrentIndex(index);
  }
}

void ControlsPanel::updateStatus(Toggle toggle) {
  const RowState& r = rowState(toggle);
  QLabel* label = row(toggle).status;
  switch (status(toggle)) {
    case Status::NotReported:
      label->setText(recording_ ? tr("not recorded") : tr("not reported yet"));
      label->setToolTip(tr("The engine has not said which value is in effect"));
      break;
    case Status::Configured:
      if (byLadder_.contains(toggle)) {
        label->setText(tr("from the recovery ladder"));
        label->setToolTip(tr("The value the run starts with: the recovery ladder uses %1 since "
                             "an earlier fault, and a rung outlives a run; Undo rung steps it "
                             "back. The engine has not reported it yet")
                              .arg(rungText(settings::rungName(live_.rung))));
      } else if (byProfile_.contains(toggle)) {
        label->setText(tr("from the profile"));
        label->setToolTip(tr("The value the run starts with: the profile '%1' sets it over the "
                             "Setup page's; the engine has not reported it yet (a step down of "
                             "the recovery ladder applies over it)")
                              .arg(configuredProfile_));
      } else {
        label->setText(tr("from Setup"));
        label->setToolTip(
            tr("The value the run starts with, as the Setup page has it; the engine has not "
               "reported it yet (a step down of the recovery ladder applies over it)"));
      }
      break;
    case Status::Pending:
      label->setText(tr("pending: %1").arg(toggleValueText(*r.pending)));
      label->setToolTip(tr("Sent; waiting for the engine to apply it at the next step"));
      break;
    case Status::Applied:
      label->setText(tr("applied at step %1").arg(r.appliedStep));
      label->setToolTip(tr("The engine confirmed %1").arg(toggleValueText(*r.applied)));
      break;
    case Status::Refused:
      label->setText(tr("refused: %1").arg(r.refusal));
      label->setToolTip(r.applied ? tr("The engine kept %1").arg(toggleValueText(*r.applied))
                                  : tr("The engine kept its value"));
      break;
    case Status::NotApplicable:
      label->setText(tr("not applicable here"));
      label->setToolTip(r.notApplicable);
      break;
  }
}

void ControlsPanel::handleEvent(const TimedEvent& timed) {
  apply(live_, timed);
  if (std::holds_alternative<LadderEvent>(timed.event)) {
    overlayLadder();  // the next run starts on the rung
  }
  if (recording_) {
    return;  // kept for showLive
  }
  // Only what the event changed is shown again: an editor the user is typing into stays.
  if (const auto* applied = std::get_if<ToggleAppliedEvent>(&timed.event);
      applied && hasControl(applied->toggle)) {
    displayRow(applied->toggle);
  } else if (const auto* refused = std::get_if<ToggleRefusedEvent>(&timed.event);
             refused && hasControl(refused->toggle)) {
    displayRow(refused->toggle);
  } else if (std::holds_alternative<LadderEvent>(timed.event)) {
    ladder_->setText(live_.ladder);
    undoRung_->setEnabled(engineAvailable_ && live_.undoableRungs > 0);
    displayUnreported();
  } else if (std::holds_alternative<StepEvent>(timed.event)) {
    effectiveBatch_->setText(live_.effectiveBatch);
  }
}

void ControlsPanel::apply(State& state, const TimedEvent& timed) const {
  if (const auto* applied = std::get_if<ToggleAppliedEvent>(&timed.event)) {
    if (!hasControl(applied->toggle)) {
      return;  // a toggle without a live row (activation checkpointing is fixed at the start)
    }
    RowState& r = state.rows.at(applied->toggle);
    r.applied = applied->value;
    r.appliedStep = applied->step;
    r.notApplicable = QString::fromStdString(applied->notApplicable);
    if (r.pending && *r.pending == applied->value) {
      r.pending.reset();
      r.refusal.clear();
    }
  } else if (const auto* refused = std::get_if<ToggleRefusedEvent>(&timed.event)) {
    if (!hasControl(refused->toggle)) {
      return;
    }
    RowState& r = state.rows.at(refused->toggle);
    if (!r.pending || *r.pending != refused->value) {
      return;  // not the user's change (a profile's, the ladder's): the row stays as it is
    }
    r.pending.reset();
    r.refusal = QString::fromStdString(refused->reason);
  } else if (const auto* ladder = std::get_if<LadderEvent>(&timed.event)) {
    state.undoableRungs = ladder->undoable;
    state.rung = settings::parseRungName(ladder->rung).value_or(state.rung);
    state.ladder = ladder->undoable > 0 || ladder->rung != "vendor_blas"
                       ? tr("Recovery: since step %1 the run uses %2 (it used %3; why: %4)")
                             .arg(ladder->step)
                             .arg(rungText(ladder->rung), rungText(ladder->from),
                                  QString::fromStdString(ladder->why))
                       : tr("Recovery: nothing stepped down since step %1 (%2; the run uses %3)")
                             .arg(ladder->step)
                             .arg(QString::fromStdString(ladder->why), rungText(ladder->rung));
  } else if (const auto* step = std::get_if<StepEvent>(&timed.event)) {
    // A supervised trainer may not report them (0): unknown, not a batch of 0.
    if (step->microBatch > 0 && step->accumulation > 0) {
      state.effectiveBatch =
          tr("Effective batch: %1 × %2 accumulation = %3")
              .arg(step->microBatch)
              .arg(step->accumulation)
              .arg(counted(static_cast<std::int64_t>(step->microBatch) * step->accumulation,
                           tr("sequence"), tr("sequences")));
    } else if (step->microBatch > 0) {
      state.effectiveBatch =
          tr("Effective batch: micro-batch %1, accumulation not reported").arg(step->microBatch);
    } else {
      state.effectiveBatch = tr("Effective batch: not reported by the trainer");
    }
  }
}

}  // namespace lorascope::widgets
