// widgets/ControlsPanel.h — the run's live options, one row per engine toggle: micro-batch size
// (with the effective batch), device (CPU fallback), serialize, blocking launches, GEMM backend,
// allocator policy. The rows come from the app (ControlSpec, made from the option table in
// backend/job/RunOptions.h): label, help, editor and range are not written here.
//
// A change sends a SetToggleCommand and the row says "pending" until the engine confirms it with
// a ToggleAppliedEvent; the editor then shows what the engine applied (which is also how changes
// made by a profile switch or the recovery ladder appear). A refusal of the user's change
// (ToggleRefusedEvent) shows its reason and puts the editor back to the applied value; refusals of
// changes the user did not make (a profile's) leave the row as it is. A toggle that does nothing
// where the run computes now (a GPU setting on a CPU run) is disabled with the reason as tooltip.
// Until the engine has reported a toggle its row says so rather than pretending to know the value.
// Each row is marked live (applied at the next step by our code) or restart (the engine restarts to
// apply it). Below the rows: the recovery ladder's rung (LadderEvent) with an Undo that steps back
// the last rung the supervisor took.
#pragma once

#include <QList>
#include <QPair>
#include <QWidget>
#include <map>
#include <optional>
#include <vector>

#include "widgets/EngineTypes.h"

class QLabel;
class QPushButton;

namespace lorascope::widgets {

// One row of the panel, as the app describes it.
struct ControlSpec {
  enum class Editor { Check, Number, Choice };
  engine::Toggle toggle = engine::Toggle::Serialize;
  QString label;
  QString help;
  Editor editor = Editor::Check;
  int min = 0, max = 0;                                // Number
  QList<QPair<QString, nlohmann::json>> choices = {};  // Choice: shown text → the toggle's value
  bool live = true;  // applied at the next step; false: the engine restarts to apply it
};

class ControlsPanel : public QWidget {
  Q_OBJECT

 public:
  enum class ApplyMode { Live, Restart };
  enum class Status { NotReported, Pending, Applied, Refused, NotApplicable };

  explicit ControlsPanel(const std::vector<ControlSpec>& controls, QWidget* parent = nullptr);

  bool hasControl(engine::Toggle toggle) const { return rows_.count(toggle) != 0; }
  ApplyMode applyMode(engine::Toggle toggle) const;
  Status status(engine::Toggle toggle) const;
  QString statusText(engine::Toggle toggle) const;
  QWidget* editor(engine::Toggle toggle) const;
  std::optional<nlohmann::json> appliedValue(engine::Toggle toggle) const;
  QString effectiveBatchText() const;
  // The recovery ladder's rung and why; Undo steps back the last step down (UndoRungCommand),
  // enabled while the supervisor reports one that can be undone.
  QString ladderText() const;
  bool canUndoRung() const;
  QPushButton* undoRungButton() const;

 public slots:
  void handleEvent(const lorascope::engine::TimedEvent& event);
  // Sends the change and marks the row pending; what the editors call.
  void requestToggle(lorascope::engine::Toggle toggle, const nlohmann::json& value);
  void setEngineAvailable(bool available);

 signals:
  void commandRequested(const lorascope::engine::Command& command);

 private:
  struct Row {
    ControlSpec spec;
    QWidget* editor = nullptr;
    QLabel* status = nullptr;
    std::optional<nlohmann::json> applied;
    std::optional<nlohmann::json> pending;
    std::int64_t appliedStep = 0;
    QString refusal;        // the engine's reason for refusing the user's last change
    QString notApplicable;  // why the toggle does nothing on this device ("" when it applies)
  };
  Row& row(engine::Toggle toggle);
  const Row& row(engine::Toggle toggle) const;
  void showValue(engine::Toggle toggle, const nlohmann::json& value);
  void updateStatus(engine::Toggle toggle);
  void updateEnabled(engine::Toggle toggle);

  std::map<engine::Toggle, Row> rows_;
  QLabel* effectiveBatch_;
  QLabel* ladder_;
  QPushButton* undoRung_;
  std::int64_t undoableRungs_ = 0;
  bool engineAvailable_ = false;
};

}  // namespace lorascope::widgets
