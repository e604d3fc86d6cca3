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

namespace lorascope::widgets {

using namespace lorascope::engine;

namespace {

QString valueText(const nlohmann::json& value) {
  if (value.is_boolean()) {
    return value.get<bool>() ? ControlsPanel::tr("on") : ControlsPanel::tr("off");
  }
  return QString::fromStdString(value.is_string() ? value.get<std::string>() : value.dump());
}

}  // namespace

ControlsPanel::ApplyMode ControlsPanel::applyMode(Toggle toggle) const {
  return row(toggle).spec.live ? ApplyMode::Live : ApplyMode::Restart;
}

ControlsPanel::ControlsPanel(const std::vector<ControlSpec>& controls, QWidget* parent)
    : QWidget(parent) {
  auto* grid = new QGridLayout;
  int line = 0;
  for (const ControlSpec& spec : controls) {
    const Toggle toggle = spec.toggle;
    Row& r = rows_[toggle];
    r.spec = spec;
    auto* label = new QLabel(spec.label, this);
    label->setWordWrap(true);  // the dock stays narrow beside a 1024-pixel dashboard
    label->setToolTip(spec.help);
    switch (spec.editor) {
      case ControlSpec::Editor::Number: {
        auto* spin = new QSpinBox(this);
        spin->setRange(spec.min, spec.max);
        spin->setKeyboardTracking(false);  // one command per committed value, not per keystroke
        connect(spin, &QSpinBox::valueChanged, this,
                [this, toggle](int v) { requestToggle(toggle, v); });
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
    updateStatus(toggle);
    ++line;
  }
  effectiveBatch_ = new QLabel(this);
  effectiveBatch_->setObjectName(QStringLiteral("effectiveBatch"));
  effectiveBatch_->setWordWrap(true);
  effectiveBatch_->setText(tr("Effective batch: n/a (no step reported yet)"));
  ladder_ = new QLabel(tr("Recovery ladder: vendor_blas (nothing stepped down)"), this);
  ladder_->setObjectName(QStringLiteral("recoveryLadder"));
  ladder_->setWordWrap(true);
  ladder_->setToolTip(
      tr("After a GPU error the supervisor restarts the engine one rung more cautious: vendor "
         "BLAS → built-in GEMM → serialize → smaller micro-batch → CPU"));
  undoRung_ = new QPushButton(tr("Undo"), this);
  undoRung_->setObjectName(QStringLiteral("undoRung"));
  undoRung_->setToolTip(tr("Step back the last rung the recovery ladder took"));
  connect(undoRung_, &QPushButton::clicked, this,
          [this] { emit commandRequested(UndoRungCommand{}); });
  auto* ladderRow = new QHBoxLayout;
  ladderRow->addWidget(ladder_, 1);
  ladderRow->addWidget(undoRung_);
  auto* layout = new QVBoxLayout(this);
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

ControlsPanel::Status ControlsPanel::status(Toggle toggle) const {
  const Row& r = row(toggle);
  if (r.pending) {
    return Status::Pending;
  }
  if (!r.refusal.isEmpty()) {
    return Status::Refused;
  }
  if (!r.notApplicable.isEmpty()) {
    return Status::NotApplicable;
  }
  return r.applied ? Status::Applied : Status::NotReported;
}

QString ControlsPanel::statusText(Toggle toggle) const {
  return row(toggle).status->text();
}

QWidget* ControlsPanel::editor(Toggle toggle) const {
  return row(toggle).editor;
}

std::optional<nlohmann::json> ControlsPanel::appliedValue(Toggle toggle) const {
  return row(toggle).applied;
}

QString ControlsPanel::effectiveBatchText() const {
  return effectiveBatch_->text();
}

void ControlsPanel::setEngineAvailable(bool available) {
  engineAvailable_ = available;
  undoRung_->setEnabled(engineAvailable_ && undoableRungs_ > 0);
  for (auto& [toggle, r] : rows_) {
    updateEnabled(toggle);
  }
}

void ControlsPanel::updateEnabled(Toggle toggle) {
  Row& r = row(toggle);
  r.editor->setEnabled(engineAvailable_ && r.notApplicable.isEmpty());
  r.editor->setToolTip(r.notApplicable.isEmpty()
                           ? r.spec.help
                           : tr("Not applicable on this device: %1").arg(r.notApplicable));
}

void ControlsPanel::requestToggle(Toggle toggle, const nlohmann::json& value) {
  Row& r = row(toggle);
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
    spin->setValue(value.is_number_integer() ? value.get<int>() : spin->value());
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
  const Row& r = row(toggle);
  switch (status(toggle)) {
    case Status::NotReported:
      r.status->setText(tr("not reported yet"));
      r.status->setToolTip(tr("The engine has not said which value is in effect"));
      break;
    case Status::Pending:
      r.status->setText(tr("pending: %1").arg(valueText(*r.pending)));
      r.status->setToolTip(tr("Sent; waiting for the engine to apply it at the next step"));
      break;
    case Status::Applied:
      r.status->setText(tr("applied at step %1").arg(r.appliedStep));
      r.status->setToolTip(tr("The engine confirmed %1").arg(valueText(*r.applied)));
      break;
    case Status::Refused:
      r.status->setText(tr("refused: %1").arg(r.refusal));
      r.status->setToolTip(r.applied ? tr("The engine kept %1").arg(valueText(*r.applied))
                                     : tr("The engine kept its value"));
      break;
    case Status::NotApplicable:
      r.status->setText(tr("not applicable here"));
      r.status->setToolTip(r.notApplicable);
      break;
  }
}

void ControlsPanel::handleEvent(const TimedEvent& timed) {
  if (const auto* applied = std::get_if<ToggleAppliedEvent>(&timed.event)) {
    if (!hasControl(applied->toggle)) {
      return;  // a toggle without a live row (activation checkpointing is fixed at the start)
    }
    Row& r = row(applied->toggle);
    r.applied = applied->value;
    r.appliedStep = applied->step;
    r.notApplicable = QString::fromStdString(applied->notApplicable);
    if (r.pending && *r.pending == applied->value) {
      r.pending.reset();
      r.refusal.clear();
    }
    showValue(applied->toggle, r.pending ? *r.pending : applied->value);
    updateStatus(applied->toggle);
    updateEnabled(applied->toggle);
  } else if (const auto* refused = std::get_if<ToggleRefusedEvent>(&timed.event)) {
    Row& r = row(refused->toggle);
    if (!r.pending || *r.pending != refused->value) {
      return;  // not the user's change (a profile's, the ladder's): the row stays as it is
    }
    r.pending.reset();
    r.refusal = QString::fromStdString(refused->reason);
    if (r.applied) {
      showValue(refused->toggle, *r.applied);  // the editor goes back to what is in effect
    }
    updateStatus(refused->toggle);
  } else if (const auto* ladder = std::get_if<LadderEvent>(&timed.event)) {
    undoableRungs_ = ladder->undoable;
    ladder_->setText(
        tr("Recovery ladder: %1 since step %2 (from %3: %4)")
            .arg(QString::fromStdString(ladder->rung))
            .arg(ladder->step)
            .arg(QString::fromStdString(ladder->from), QString::fromStdString(ladder->why)));
    undoRung_->setEnabled(engineAvailable_ && undoableRungs_ > 0);
  } else if (const auto* step = std::get_if<StepEvent>(&timed.event)) {
    // A supervised trainer may not report them (0): unknown, not a batch of 0.
    if (step->microBatch > 0 && step->accumulation > 0) {
      effectiveBatch_->setText(tr("Effective batch: %1 × %2 accumulation = %3 sequences")
                                   .arg(step->microBatch)
                                   .arg(step->accumulation)
                                   .arg(step->microBatch * step->accumulation));
    } else if (step->microBatch > 0) {
      effectiveBatch_->setText(
          tr("Effective batch: micro-batch %1, accumulation not reported").arg(step->microBatch));
    } else {
      effectiveBatch_->setText(tr("Effective batch: not reported by the trainer"));
    }
  }
}

}  // namespace lorascope::widgets
