// gui/MainWindow.h — the main window: run actions (start, pause, resume, stop, checkpoint now),
// the profile bar, the dashboard / memory map / log pages, the controls dock, the About box; the
// layout and the last page are remembered (QSettings).
//
// The window talks to an engine only through widgets::EngineClient: events are handed to every
// page, commands the pages request are sent. Without an engine it shows the empty state.
#pragma once

#include <QMainWindow>
#include <nlohmann/json.hpp>

#include "widgets/AboutDialog.h"
#include "widgets/EngineTypes.h"

class QAction;
class QLabel;
class QTabWidget;

namespace lorascope::widgets {
class ControlsPanel;
class Dashboard;
class EventLogModel;
class EventLogPanel;
class MemoryMapPanel;
class ProfileBar;
}  // namespace lorascope::widgets

namespace lorascope::app {

// The facts of this build and its GPUs, as the About box shows them.
widgets::AboutFacts collectAboutFacts();

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(widgets::AboutFacts facts, QWidget* parent = nullptr);

  // The engine to talk to (not owned; it must outlive the window or be replaced first).
  void setEngine(widgets::EngineClient* engine);
  // The run configuration Start sends (the trainer's schema); Start stays disabled without one.
  void setRunConfig(nlohmann::json config);

  widgets::Dashboard* dashboard() const { return dashboard_; }
  widgets::MemoryMapPanel* memoryMap() const { return memoryMap_; }
  widgets::ControlsPanel* controls() const { return controls_; }
  widgets::ProfileBar* profileBar() const { return profileBar_; }
  widgets::EventLogModel* eventLog() const { return eventLog_; }
  QTabWidget* pages() const { return pages_; }
  QAction* startAction() const { return start_; }
  QAction* pauseAction() const { return pause_; }
  QAction* resumeAction() const { return resume_; }
  QAction* stopAction() const { return stop_; }
  QAction* checkpointAction() const { return checkpoint_; }

 public slots:
  void showAbout();
  void sendCommand(const lorascope::engine::Command& command);
  void handleEvent(const lorascope::engine::TimedEvent& event);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildActions();
  void updateActions();
  void restoreLayout();
  void saveLayout() const;

  widgets::AboutFacts facts_;
  widgets::EngineClient* engine_ = nullptr;
  nlohmann::json runConfig_;
  engine::RunState state_ = engine::RunState::Idle;
  std::int64_t step_ = 0;
  widgets::Dashboard* dashboard_;
  widgets::MemoryMapPanel* memoryMap_;
  widgets::ControlsPanel* controls_;
  widgets::ProfileBar* profileBar_;
  widgets::EventLogModel* eventLog_;
  widgets::EventLogPanel* eventLogPanel_;
  QTabWidget* pages_;
  QLabel* engineLabel_;
  QLabel* stateLabel_;
  QAction* start_ = nullptr;
  QAction* pause_ = nullptr;
  QAction* resume_ = nullptr;
  QAction* stop_ = nullptr;
  QAction* checkpoint_ = nullptr;
};

}  // namespace lorascope::app
