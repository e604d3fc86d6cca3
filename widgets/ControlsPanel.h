// widgets/ControlsPanel.h — the stability toggles: serialize, blocking launches, micro-batch size
// (with the effective batch), CPU fallback, GEMM backend, allocator policy, activation
// checkpointing.
//
// A change sends a SetToggleCommand and the row says "pending" until the engine confirms it with
// a ToggleAppliedEvent; the editor then shows what the engine applied (which is also how changes
// made by a profile switch or the recovery ladder appear). Until the engine has reported a toggle
// its row says so rather than pretending to know the value. Each row is marked live (applied at
// the next step by our code) or restart (the engine restarts to apply it).
#pragma once

#include <QWidget>
#include <array>
#include <optional>

#include "widgets/EngineTypes.h"

class QLabel;

namespace lorascope::widgets {

class ControlsPanel : public QWidget {
  Q_OBJECT

 public:
  enum class ApplyMode { Live, Restart };
  enum class Status { NotReported, Pending, Applied };
  static constexpr int kToggleCount = 7;

  explicit ControlsPanel(QWidget* parent = nullptr);

  static ApplyMode applyMode(engine::Toggle toggle);
  Status status(engine::Toggle toggle) const;
  QString statusText(engine::Toggle toggle) const;
  QWidget* editor(engine::Toggle toggle) const;
  std::optional<nlohmann::json> appliedValue(engine::Toggle toggle) const;
  QString effectiveBatchText() const;

 public slots:
  void handleEvent(const lorascope::engine::TimedEvent& event);
  // Sends the change and marks the row pending; what the editors call.
  void requestToggle(lorascope::engine::Toggle toggle, const nlohmann::json& value);
  void setEngineAvailable(bool available);

 signals:
  void commandRequested(const lorascope::engine::Command& command);

 private:
  struct Row {
    QWidget* editor = nullptr;
    QLabel* status = nullptr;
    std::optional<nlohmann::json> applied;
    std::optional<nlohmann::json> pending;
    std::int64_t appliedStep = 0;
  };
  Row& row(engine::Toggle toggle);
  const Row& row(engine::Toggle toggle) const;
  void showValue(engine::Toggle toggle, const nlohmann::json& value);
  void updateStatus(engine::Toggle toggle);

  std::array<Row, kToggleCount> rows_;
  QLabel* effectiveBatch_;
};

}  // namespace lorascope::widgets
