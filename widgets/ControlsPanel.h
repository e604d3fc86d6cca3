// widgets/ControlsPanel.h — the run's live options, one row per engine toggle: micro-batch size
// (with the effective batch), device (CPU fallback), serialize, blocking launches, GEMM backend,
// allocator policy. The rows are the settings registry's live settings (liveControls(), from
// backend/settings/Registry.h): label, help, editor and range are not written here.
//
// A change sends a SetToggleCommand and the row says "pending" until the engine confirms it with
// a ToggleAppliedEvent; the editor then shows what the engine applied (which is also how changes
// made by a profile switch or the recovery ladder appear). A refusal of the user's change
// (ToggleRefusedEvent) shows its reason and puts the editor back to the applied value; refusals of
// changes the user did not make (a profile's) leave the row as it is. A toggle that does nothing
// where the run computes now (a GPU setting on a CPU run) is disabled with the reason as tooltip.
// Until the engine has reported a toggle its row says so rather than pretending to know the value:
// it shows the value the run starts with (setConfigured), marked as Setup's, as the profile's or
// as the recovery ladder's (a rung taken in an earlier run stays for the next, which the supervisor
// starts on it), or no value when there is none (a number row shows a dash, not its minimum, and
// never sends it). Each row is marked live (applied at the next step by our code) or restart (the
// engine restarts to apply it). Below the rows: the recovery ladder's rung (LadderEvent) in plain
// words, with an Undo that steps back the last rung the supervisor took.
//
// The panel shows one run's state. A new run starts from nothing reported (startRun); when a run
// ends, a pending change or a refusal of it is over too (endRun). While a recording or a saved
// run is shown (showRecorded) the rows are that run's, read only, under a line that says so; the
// live engine's events keep filling its own state, shown again by showLive.
#pragma once

#include <QList>
#include <QPair>
#include <QWidget>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "profiles/Profile.h"   // defines: LiveToggles
#include "settings/Ladder.h"    // defines: Rung
#include "settings/Registry.h"  // defines: Registry
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

// The rows of the registry's live settings (Apply::Live with a toggle), in the registry's order.
std::vector<ControlSpec> liveControls(const settings::Registry& registry = settings::registry());
// The live toggles' values in a run started with `options` (option name → value as the command
// line writes it: the Setup page's options()), mapped by the registry (device cpu → CPU fallback
// on). A value that is none of its toggle's (batch-size auto, device auto) is left out: the
// engine decides it when the run starts.
std::map<engine::Toggle, nlohmann::json> configuredToggles(
    const std::map<std::string, std::string>& options,
    const settings::Registry& registry = settings::registry());

class ControlsPanel : public QWidget {
  Q_OBJECT

 public:
  enum class ApplyMode { Live, Restart };
  // Configured: not reported yet; the row shows Setup's value, the one the run starts with.
  enum class Status { NotReported, Configured, Pending, Applied, Refused, NotApplicable };

  explicit ControlsPanel(const std::vector<ControlSpec>& controls = liveControls(),
                         QWidget* parent = nullptr);

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
  // "" while the live engine's state is shown, else the shown run's name.
  QString shownRecording() const { return recording_ ? recording_->name : QString(); }
  QLabel* sourceLabel() const { return source_; }

 public slots:
  void handleEvent(const lorascope::engine::TimedEvent& event);
  // Sends the change and marks the row pending; what the editors call.
  void requestToggle(lorascope::engine::Toggle toggle, const nlohmann::json& value);
  void setEngineAvailable(bool available);
  // The values the next run starts with: `values` (configuredToggles of the Setup page's
  // options) with the toggles the profile `profile` sets at a run's start over them
  // (profiles::setAtStart). A live row the engine has not reported shows its value, marked as
  // Setup's or the profile's, before the first run and in a run started from them.
  void setConfigured(std::map<engine::Toggle, nlohmann::json> values, const QString& profile = {},
                     const profiles::LiveToggles& profileToggles = {});
  // A new run: nothing reported yet (the recovery ladder's rung stays: it outlives a run).
  // `fromConfigured`: it starts from the configured values; a resumed run starts from its own
  // config.json and a supervised command reports none of these toggles, so their rows show no
  // value until the engine reports one.
  void startRun(bool fromConfigured);
  // The run is over: no change is pending any more, and no refusal of one is current.
  void endRun();
  // Shows a recorded run's toggles, read only; the live state is kept for showLive.
  void showRecorded(const QString& name, const std::vector<engine::TimedEvent>& events);
  void showLive();

 signals:
  void commandRequested(const lorascope::engine::Command& command);

 private:
  struct Row {
    ControlSpec spec;
    QWidget* editor = nullptr;
    QLabel* status = nullptr;
  };
  // What the engine said about one toggle.
  struct RowState {
    std::optional<nlohmann::json> applied;
    std::optional<nlohmann::json> pending;
    std::int64_t appliedStep = 0;
    QString refusal;        // the engine's reason for refusing the user's last change
    QString notApplicable;  // why the toggle does nothing on this device ("" when it applies)
  };
  // One run's state as the panel shows it.
  struct State {
    QString name;  // a recording's; "" for the live engine
    std::map<engine::Toggle, RowState> rows;
    QString effectiveBatch;
    QString ladder;
    std::int64_t undoableRungs = 0;
    settings::Rung rung = settings::Rung::VendorBlas;  // the ladder's, as its last event said
    bool showsConfigured = false;  // unreported rows show configured_ (the live run's, from Setup)
  };
  Row& row(engine::Toggle toggle);
  const Row& row(engine::Toggle toggle) const;
  const State& shown() const { return recording_ ? *recording_ : live_; }
  const RowState& rowState(engine::Toggle toggle) const;
  // The value the run starts with, shown in the row while the engine has reported none: the
  // ladder's, else Setup's or the profile's; nullptr when there is none.
  const nlohmann::json* configured(engine::Toggle toggle) const;
  // byLadder_ from the live rung over configured_, as Supervisor::adoptRun and sendRungToggles
  // set a run's start: each rung's value up to the rung, the micro-batch halved where a rung
  // halves it (a Setup value above 1; auto stays auto).
  void overlayLadder();
  // The rows the engine has not reported show configured() again.
  void displayUnreported();
  void apply(State& state, const engine::TimedEvent& event) const;
  void display();  // every row, the batch and the ladder from shown()
  void displayRow(engine::Toggle toggle);
  void showValue(engine::Toggle toggle, const nlohmann::json& value);
  void updateStatus(engine::Toggle toggle);
  void updateEnabled(engine::Toggle toggle);

  std::map<engine::Toggle, Row> rows_;
  State live_;
  std::map<engine::Toggle, nlohmann::json> configured_;  // setConfigured
  QString configuredProfile_;                            // the profile that set ...
  std::set<engine::Toggle> byProfile_;                   // ... these of them
  std::map<engine::Toggle, nlohmann::json> byLadder_;    // overlayLadder
  std::optional<State> recording_;
  QLabel* source_;
  QLabel* effectiveBatch_;
  QLabel* ladder_;
  QPushButton* undoRung_;
  bool engineAvailable_ = false;
};

}  // namespace lorascope::widgets
