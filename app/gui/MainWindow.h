// gui/MainWindow.h — the main window: run actions (start, pause, resume, stop, checkpoint now,
// export the adapter or a merged model, open the run folder), the profile bar, the setup / runs /
// dashboard / memory map / processes / log pages, the controls dock, the About box, light and
// dark palettes; the layout, the last page and the colour scheme are remembered (QSettings).
//
// The window talks to an engine only through widgets::EngineClient: events are handed to every
// page, commands the pages request are sent. Start sends the setup page's run config (or one set
// with setRunConfig). Without an engine it shows the empty state.
//
// A run owns its state (README, "A run owns its state"): the profile is one setting that the
// setup page and the profile bar both show — chosen in either, before or during a run, it applies
// to the engine now and is the next run's profile (its config.json records it). The engine is
// assumed to start on profiles::defaultProfile(), as gui/main.cpp starts it. A toggle changed in
// the Controls dock lasts for the run in progress only: each run starts from the setup page's
// options, and the dock shows them, as Setup's values, until the engine reports. The dock shows
// the state of the run the dashboard shows; the status bar says what the runs page says of a run
// that ended, and why the profile buttons and the dock are off when they are.
#pragma once

#include <QMainWindow>
#include <memory>
#include <nlohmann/json.hpp>

#include "widgets/AboutDialog.h"
#include "widgets/EngineTypes.h"

class QAction;
class QActionGroup;
class QLabel;
class QMenu;
class QProgressDialog;
class QTabWidget;

namespace lorascope::external {
struct SupervisedCommand;
}  // namespace lorascope::external
namespace lorascope::profiles {
struct Profile;
}  // namespace lorascope::profiles
namespace lorascope::widgets {
class ControlsPanel;
class Dashboard;
class EventLogModel;
class EventLogPanel;
class MemoryMapPanel;
class ProfileBar;
}  // namespace lorascope::widgets

namespace lorascope::app {

class ProcessesPage;
class RunExporter;
class RunSetupPage;
class RunsPage;
struct RunSummary;
class TryItPage;

// The facts of this build, as the About box shows them; its GPUs come from the engine's hello
// (addEngineFacts): the window asks no GPU runtime itself.
widgets::AboutFacts collectAboutFacts();
void addEngineFacts(widgets::AboutFacts& facts, const engine::HelloEvent& hello);

class EngineAdapter;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  static constexpr int kControlsDockWidthPx = 270;  // at first start; the user may widen it

  explicit MainWindow(widgets::AboutFacts facts, QWidget* parent = nullptr);
  ~MainWindow() override;  // ends a supervised command still running

  // The engine to talk to (not owned; it must outlive the window or be replaced first).
  void setEngine(widgets::EngineClient* engine);
  // A run configuration Start sends instead of the setup page's (the trainer's schema).
  void setRunConfig(nlohmann::json config);
  // lorascope-train, which exports runs and writes the demo the setup page inspects (default:
  // beside this program).
  void setEngineProgram(const QString& program);

  // The run folder of the last run started here ("" before the first).
  QString runFolder() const { return runFolder_; }
  // Starts `lorascope-train export` of the current run into `destination`.
  void exportRun(bool merged, const QString& destination);

  widgets::Dashboard* dashboard() const { return dashboard_; }
  widgets::MemoryMapPanel* memoryMap() const { return memoryMap_; }
  widgets::ControlsPanel* controls() const { return controls_; }
  widgets::ProfileBar* profileBar() const { return profileBar_; }
  widgets::EventLogModel* eventLog() const { return eventLog_; }
  const widgets::AboutFacts& aboutFacts() const { return facts_; }
  RunSetupPage* setupPage() const { return setup_; }
  RunsPage* runsPage() const { return runs_; }
  ProcessesPage* processesPage() const { return processes_; }
  TryItPage* tryItPage() const { return tryIt_; }
  RunExporter* exporter() const { return exporter_; }
  QTabWidget* pages() const { return pages_; }
  QAction* startAction() const { return start_; }
  QAction* pauseAction() const { return pause_; }
  QAction* resumeAction() const { return resume_; }
  QAction* stopAction() const { return stop_; }
  QAction* checkpointAction() const { return checkpoint_; }
  QAction* exportAdapterAction() const { return exportAdapter_; }
  QAction* exportMergedAction() const { return exportMerged_; }
  QAction* openRunFolderAction() const { return openRunFolder_; }
  QActionGroup* colorSchemeActions() const { return schemes_; }

 public slots:
  void showAbout();
  // Help → Keyboard shortcuts: the menus' shortcuts and the pages' Alt keys, in a dialog.
  void showShortcuts();
  // The profile the next run starts with, chosen on the setup page or the profile bar: both show
  // it, and the trainer's engine switches to it now (the run in progress too).
  void chooseProfile(const QString& name);
  // Help → Check this GPU: `lorascope-train doctor` in a dialog (gui/GpuCheckDialog.h).
  void checkGpu();
  void sendCommand(const lorascope::engine::Command& command);
  // Continues the run in `runDir` from its newest checkpoint (the runs page's Resume).
  void resumeRun(const QString& runDir);
  // Adds a run folder's curves (its metrics.jsonl) to the dashboard; "" or why it could not.
  QString openRun(const QString& runDir);
  // Replays an event recording on the dashboard and, when it holds one, its last allocator
  // snapshot on the memory map; "" or why it could not.
  QString openRecording(const QString& file);
  void handleEvent(const lorascope::engine::TimedEvent& event);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildActions();
  void buildViewMenu(QMenu* view);
  void startRun();
  void startCommand();
  void resumeCommand(const QString& runDir);
  void launchCommand(const external::SupervisedCommand& command, const profiles::Profile& profile,
                     const QString& runDir);
  // The setup page's run name is taken: resume that run, start under `freeName`, or neither.
  enum class ExistingRunChoice { Resume, NewName, Cancel };
  ExistingRunChoice askAboutExistingRun(const QString& runDir, const QString& freeName);
  void chooseExportDestination(bool merged);
  void logLine(engine::LogLevel level, const QString& text);
  // A resumed run's steps before its checkpoint, from its metrics.jsonl (none, with a warning in
  // the log, when that file cannot be read).
  std::vector<engine::TimedEvent> earlierSteps(const QString& runDir);
  void updateActions();
  void syncEngineProfile();
  void showConfiguredToggles();
  QString stateText() const;
  void restoreLayout();
  void saveLayout() const;

  widgets::AboutFacts facts_;
  widgets::EngineClient* engine_ = nullptr;
  widgets::EngineClient* trainingEngine_ = nullptr;  // the trainer's (setEngine)
  std::unique_ptr<EngineAdapter> commandEngine_;  // the last "Run a command"; replaced by the next
  nlohmann::json runConfig_;  // set by setRunConfig: sent instead of the setup page's
  QString runFolder_;
  bool hasCheckpoint_ = false;  // the current run has one to export
  std::int64_t lastEventMs_ = 0;
  engine::RunState state_ = engine::RunState::Idle;
  bool runEnded_ = false;  // the last run started here is over (its folder says how)
  QString engineProfile_;  // the profile the trainer's engine has, as far as this window knows
  QString engineText_;     // the trainer's engine as its hello describes it
  std::int64_t step_ = 0;
  bool quitWhenStopped_ = false;  // the user chose "stop and quit": close once the run is over
  RunSetupPage* setup_;
  RunsPage* runs_;
  ProcessesPage* processes_;
  TryItPage* tryIt_;
  RunExporter* exporter_;
  QProgressDialog* exportProgress_ = nullptr;
  widgets::Dashboard* dashboard_;
  widgets::MemoryMapPanel* memoryMap_;
  widgets::ControlsPanel* controls_;
  widgets::ProfileBar* profileBar_;
  widgets::EventLogModel* eventLog_;
  widgets::EventLogPanel* eventLogPanel_;
  QTabWidget* pages_;
  QLabel* engineLabel_ = nullptr;
  QLabel* stateLabel_ = nullptr;
  QAction* start_ = nullptr;
  QAction* pause_ = nullptr;
  QAction* resume_ = nullptr;
  QAction* stop_ = nullptr;
  QAction* checkpoint_ = nullptr;
  QAction* exportAdapter_ = nullptr;
  QAction* exportMerged_ = nullptr;
  QAction* openRunFolder_ = nullptr;
  QActionGroup* schemes_ = nullptr;
};

}  // namespace lorascope::app
