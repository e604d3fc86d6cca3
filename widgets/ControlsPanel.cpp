// widgets/ControlsPanel.cpp — one row per toggle: editor, live/restart badge, confirmation state.
#include "widgets/ControlsPanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

namespace lorascope::widgets {

using namespace lorascope::engine;

namespace {

struct ToggleInfo {
  Toggle toggle;
  const char* label;
  const char* tooltip;
};

// Order of the rows, and what each toggle does for the user.
const std::array<ToggleInfo, ControlsPanel::kToggleCount> kToggleInfo = {{
    {Toggle::Serialize, QT_TRANSLATE_NOOP("ControlsPanel", "Serialize kernels"),
     QT_TRANSLATE_NOOP("ControlsPanel",
                       "Synchronise the device before and after every launch, so a crash points "
                       "at the kernel that caused it (like AMD_SERIALIZE_KERNEL=3, without a "
                       "restart). Several times slower.")},
    {Toggle::Blocking, QT_TRANSLATE_NOOP("ControlsPanel", "Blocking launches"),
     QT_TRANSLATE_NOOP("ControlsPanel",
                       "Wait for each launch to finish before returning, so errors are reported "
                       "against the op that failed (like HIP_LAUNCH_BLOCKING=1).")},
    {Toggle::MicroBatch, QT_TRANSLATE_NOOP("ControlsPanel", "Micro-batch size"),
     QT_TRANSLATE_NOOP("ControlsPanel",
                       "Sequences per forward/backward pass. Smaller uses less memory; the "
                       "accumulation steps grow so the effective batch stays the same.")},
    {Toggle::CpuFallback, QT_TRANSLATE_NOOP("ControlsPanel", "CPU fallback"),
     QT_TRANSLATE_NOOP("ControlsPanel",
                       "Continue the run on the CPU from the same step (slow, but it cannot crash "
                       "the GPU driver).")},
    {Toggle::GemmBackend, QT_TRANSLATE_NOOP("ControlsPanel", "GEMM backend"),
     QT_TRANSLATE_NOOP("ControlsPanel",
                       "Vendor BLAS (hipBLAS/hipBLASLt, fastest) or LoRAscope's built-in GEMM "
                       "(for HIPBLAS_STATUS_INTERNAL_ERROR).")},
    {Toggle::AllocatorPolicy, QT_TRANSLATE_NOOP("ControlsPanel", "Allocator policy"),
     QT_TRANSLATE_NOOP("ControlsPanel",
                       "Caching (PyTorch-style split/merge) or a planned arena for activations, "
                       "which stops steady-state fragmentation.")},
    {Toggle::ActivationCheckpointing,
     QT_TRANSLATE_NOOP("ControlsPanel", "Activation checkpointing"),
     QT_TRANSLATE_NOOP("ControlsPanel",
                       "Recompute activations in backward instead of storing them: less memory, "
                       "about a third more compute.")},
}};

QString valueText(const nlohmann::json& value) {
  if (value.is_boolean()) {
    return value.get<bool>() ? ControlsPanel::tr("on") : ControlsPanel::tr("off");
  }
  return QString::fromStdString(value.is_string() ? value.get<std::string>() : value.dump());
}

}  // namespace

ControlsPanel::ApplyMode ControlsPanel::applyMode(Toggle toggle) {
  // DESIGN "Live vs restart": all seven are applied by our own code at the next step boundary.
  // Environment variables (profiles) are the restart kind; the profile bar marks those.
  switch (toggle) {
    case Toggle::Serialize:
    case Toggle::Blocking:
    case Toggle::MicroBatch:
    case Toggle::CpuFallback:
    case Toggle::GemmBackend:
    case Toggle::AllocatorPolicy:
    case Toggle::ActivationCheckpointing:
      return ApplyMode::Live;
  }
  return ApplyMode::Restart;
}

ControlsPanel::ControlsPanel(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout;
  int line = 0;
  for (const ToggleInfo& info : kToggleInfo) {
    const Toggle toggle = info.toggle;
    Row& r = row(toggle);
    const QString tip = tr(info.tooltip);
    auto* label = new QLabel(tr(info.label), this);
    label->setToolTip(tip);
    switch (toggle) {
      case Toggle::MicroBatch: {
        auto* spin = new QSpinBox(this);
        spin->setRange(1, 4096);
        spin->setKeyboardTracking(false);  // one command per committed value, not per keystroke
        connect(spin, &QSpinBox::valueChanged, this,
                [this, toggle](int v) { requestToggle(toggle, v); });
        r.editor = spin;
        break;
      }
      case Toggle::GemmBackend:
      case Toggle::AllocatorPolicy: {
        auto* combo = new QComboBox(this);
        const bool gemm = toggle == Toggle::GemmBackend;
        combo->addItem(gemm ? tr("vendor BLAS") : tr("caching"), gemm ? "vendor" : "caching");
        combo->addItem(gemm ? tr("built-in") : tr("planned arena"), gemm ? "builtin" : "arena");
        combo->setCurrentIndex(-1);
        connect(combo, &QComboBox::activated, this, [this, toggle, combo](int index) {
          requestToggle(toggle, combo->itemData(index).toString().toStdString());
        });
        r.editor = combo;
        break;
      }
      case Toggle::Serialize:
      case Toggle::Blocking:
      case Toggle::CpuFallback:
      case Toggle::ActivationCheckpointing: {
        auto* check = new QCheckBox(this);
        connect(check, &QCheckBox::clicked, this,
                [this, toggle](bool on) { requestToggle(toggle, on); });
        r.editor = check;
        break;
      }
    }
    r.editor->setToolTip(tip);
    label->setBuddy(r.editor);
    const bool live = applyMode(toggle) == ApplyMode::Live;
    auto* mode = new QLabel(live ? tr("live") : tr("restart"), this);
    mode->setToolTip(live ? tr("Applied at the next step, without a restart")
                          : tr("Applying it restarts the engine, which resumes from the last "
                               "step"));
    mode->setEnabled(false);  // a quiet badge
    r.status = new QLabel(this);
    r.status->setMinimumWidth(120);
    grid->addWidget(label, line, 0);
    grid->addWidget(r.editor, line, 1);
    grid->addWidget(mode, line, 2);
    grid->addWidget(r.status, line, 3);
    updateStatus(toggle);
    ++line;
  }
  effectiveBatch_ = new QLabel(this);
  effectiveBatch_->setObjectName(QStringLiteral("effectiveBatch"));
  effectiveBatch_->setText(tr("Effective batch: n/a (no step reported yet)"));
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(grid);
  layout->addWidget(effectiveBatch_);
  layout->addStretch();
  setEngineAvailable(false);
}

ControlsPanel::Row& ControlsPanel::row(Toggle toggle) {
  return rows_[static_cast<std::size_t>(toggle)];
}
const ControlsPanel::Row& ControlsPanel::row(Toggle toggle) const {
  return rows_[static_cast<std::size_t>(toggle)];
}

ControlsPanel::Status ControlsPanel::status(Toggle toggle) const {
  const Row& r = row(toggle);
  if (r.pending) {
    return Status::Pending;
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
  for (Row& r : rows_) {
    r.editor->setEnabled(available);
  }
}

void ControlsPanel::requestToggle(Toggle toggle, const nlohmann::json& value) {
  Row& r = row(toggle);
  if (!r.pending && r.applied && *r.applied == value) {
    return;  // already in effect
  }
  r.pending = value;
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
    combo->setCurrentIndex(
        combo->findData(QString::fromStdString(value.is_string() ? value.get<std::string>() : "")));
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
  }
}

void ControlsPanel::handleEvent(const TimedEvent& timed) {
  if (const auto* applied = std::get_if<ToggleAppliedEvent>(&timed.event)) {
    Row& r = row(applied->toggle);
    r.applied = applied->value;
    r.appliedStep = applied->step;
    if (r.pending && *r.pending == applied->value) {
      r.pending.reset();
    }
    showValue(applied->toggle, r.pending ? *r.pending : applied->value);
    updateStatus(applied->toggle);
  } else if (const auto* step = std::get_if<StepEvent>(&timed.event)) {
    effectiveBatch_->setText(tr("Effective batch: %1 × %2 accumulation = %3 sequences")
                                 .arg(step->microBatch)
                                 .arg(step->accumulation)
                                 .arg(step->microBatch * step->accumulation));
  }
}

}  // namespace lorascope::widgets
