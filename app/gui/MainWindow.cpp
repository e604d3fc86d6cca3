// gui/MainWindow.cpp — window layout, run actions, event fan-out, remembered layout.
#include "gui/MainWindow.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>

#include "compute/BuildInfo.h"
#include "profiles/ProfileStore.h"
#include "widgets/ControlsPanel.h"
#include "widgets/Dashboard.h"
#include "widgets/EventLogModel.h"
#include "widgets/EventLogPanel.h"
#include "widgets/MemoryMapPanel.h"
#include "widgets/ProfileBar.h"

namespace lorascope::app {

using namespace lorascope::engine;

widgets::AboutFacts collectAboutFacts() {
  const compute::BuildInfo& info = compute::buildInfo();
  const compute::GpuInventory inventory = compute::queryGpuInventory();
  widgets::AboutFacts facts;
  facts.version = QString::fromStdString(info.version);
  facts.flavour = QString::fromStdString(info.flavour);
  facts.gpuTargets = QString::fromStdString(info.gpuTargets);
  facts.gpuRuntime = QString::fromStdString(inventory.runtime);
  facts.noDeviceReason = QString::fromStdString(inventory.unavailableReason);
  for (const compute::GpuDeviceInfo& d : inventory.devices) {
    facts.devices << QStringLiteral("%1: %2 [%3], %4 MiB")
                         .arg(d.index)
                         .arg(QString::fromStdString(d.name),
                              QString::fromStdString(d.architecture))
                         .arg(d.totalBytes >> 20);
  }
  return facts;
}

MainWindow::MainWindow(widgets::AboutFacts facts, QWidget* parent)
    : QMainWindow(parent), facts_(std::move(facts)) {
  engine::registerEngineMetaTypes();
  setWindowTitle(tr("LoRAscope"));
  resize(1280, 820);

  dashboard_ = new widgets::Dashboard(this);
  memoryMap_ = new widgets::MemoryMapPanel(this);
  eventLog_ = new widgets::EventLogModel(this);
  eventLogPanel_ = new widgets::EventLogPanel(eventLog_, this);
  pages_ = new QTabWidget(this);
  pages_->setDocumentMode(true);
  pages_->addTab(dashboard_, tr("&Dashboard"));
  pages_->addTab(memoryMap_, tr("&Memory map"));
  pages_->addTab(eventLogPanel_, tr("&Log and incidents"));
  setCentralWidget(pages_);

  controls_ = new widgets::ControlsPanel(this);
  auto* controlsDock = new QDockWidget(tr("Controls"), this);
  controlsDock->setObjectName(QStringLiteral("controlsDock"));
  controlsDock->setWidget(controls_);
  addDockWidget(Qt::RightDockWidgetArea, controlsDock);

  profileBar_ = new widgets::ProfileBar(profiles::ProfileStore::defaultUserDir(), this);
  QToolBar* profileToolbar = addToolBar(tr("Profiles"));
  profileToolbar->setObjectName(QStringLiteral("profileToolbar"));
  profileToolbar->addWidget(profileBar_);

  connect(memoryMap_, &widgets::MemoryMapPanel::commandRequested, this, &MainWindow::sendCommand);
  connect(controls_, &widgets::ControlsPanel::commandRequested, this, &MainWindow::sendCommand);
  connect(profileBar_, &widgets::ProfileBar::commandRequested, this, &MainWindow::sendCommand);

  buildActions();
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(controlsDock->toggleViewAction());
  view->addAction(profileToolbar->toggleViewAction());
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About LoRAscope"), this, &MainWindow::showAbout);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);

  engineLabel_ = new QLabel(this);
  stateLabel_ = new QLabel(this);
  statusBar()->addWidget(engineLabel_, 1);
  statusBar()->addPermanentWidget(stateLabel_);
  const QString gpus = facts_.devices.isEmpty()
                           ? tr("no GPU (%1)").arg(facts_.noDeviceReason)
                           : tr("%n GPU(s)", nullptr, static_cast<int>(facts_.devices.size()));
  engineLabel_->setText(tr("%1 build · %2 · no engine connected").arg(facts_.flavour, gpus));
  restoreLayout();
  updateActions();
}

void MainWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(memoryMap_->openAction());
  file->addAction(memoryMap_->saveAction());
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  QToolBar* toolbar = addToolBar(tr("Run"));
  toolbar->setObjectName(QStringLiteral("runToolbar"));
  auto add = [&](const QString& text, const QKeySequence& keys, const QString& tip, auto command) {
    QAction* action = run->addAction(text);
    action->setShortcut(keys);
    action->setToolTip(QStringLiteral("%1 (%2)").arg(tip, keys.toString(QKeySequence::NativeText)));
    toolbar->addAction(action);
    connect(action, &QAction::triggered, this, [this, command] { sendCommand(command()); });
    return action;
  };
  start_ = add(tr("&Start"), QKeySequence(Qt::CTRL | Qt::Key_Return), tr("Start the run"),
               [this] { return Command{StartCommand{runConfig_}}; });
  pause_ = add(tr("&Pause"), QKeySequence(Qt::CTRL | Qt::Key_P),
               tr("Pause at the next step boundary"), [] { return Command{PauseCommand{}}; });
  resume_ = add(tr("R&esume"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P),
                tr("Resume the paused run"), [] { return Command{ResumeCommand{}}; });
  stop_ = add(tr("S&top"), QKeySequence(Qt::CTRL | Qt::Key_Period),
              tr("Stop the run; the engine writes a checkpoint first"),
              [] { return Command{StopCommand{}}; });
  run->addSeparator();
  checkpoint_ = add(tr("&Checkpoint now"), QKeySequence(Qt::CTRL | Qt::Key_K),
                    tr("Write a checkpoint at the next step boundary"),
                    [] { return Command{CheckpointNowCommand{}}; });
}

void MainWindow::setEngine(widgets::EngineClient* engine) {
  if (engine_ != nullptr) {
    disconnect(engine_, nullptr, this, nullptr);
  }
  engine_ = engine;
  if (engine_ != nullptr) {
    connect(engine_, &widgets::EngineClient::eventReceived, this, &MainWindow::handleEvent);
    connect(engine_, &widgets::EngineClient::connectedChanged, this, &MainWindow::updateActions);
  }
  updateActions();
}

void MainWindow::setRunConfig(nlohmann::json config) {
  runConfig_ = std::move(config);
  updateActions();
}

void MainWindow::sendCommand(const Command& command) {
  if (engine_ == nullptr || !engine_->isConnected()) {
    return;
  }
  dashboard_->noteCommand(command);
  engine_->send(command);
}

void MainWindow::handleEvent(const TimedEvent& timed) {
  dashboard_->handleEvent(timed);
  memoryMap_->handleEvent(timed);
  controls_->handleEvent(timed);
  eventLog_->handleEvent(timed);
  if (const auto* state = std::get_if<StateEvent>(&timed.event)) {
    state_ = state->state;
    step_ = state->step;
    updateActions();
  } else if (const auto* step = std::get_if<StepEvent>(&timed.event)) {
    step_ = step->step;
    stateLabel_->setText(tr("%1 · step %2").arg(QLatin1String(toString(state_))).arg(step_));
  } else if (const auto* hello = std::get_if<HelloEvent>(&timed.event)) {
    QStringList devices;
    for (const DeviceSummary& d : hello->devices) {
      devices << QString::fromStdString(d.name);
    }
    engineLabel_->setText(tr("engine %1 (%2 build) · %3")
                              .arg(QString::fromStdString(hello->version),
                                   QString::fromStdString(hello->flavour),
                                   devices.isEmpty() ? tr("CPU") : devices.join(", ")));
  }
}

void MainWindow::updateActions() {
  const bool connected = engine_ != nullptr && engine_->isConnected();
  const bool idle =
      state_ == RunState::Idle || state_ == RunState::Finished || state_ == RunState::Failed;
  const bool running = state_ == RunState::Running;
  const bool paused = state_ == RunState::Paused;
  start_->setEnabled(connected && idle && runConfig_.is_object());
  pause_->setEnabled(connected && running);
  resume_->setEnabled(connected && paused);
  stop_->setEnabled(connected && (running || paused));
  checkpoint_->setEnabled(connected && (running || paused));
  controls_->setEngineAvailable(connected);
  profileBar_->setEngineAvailable(connected);
  stateLabel_->setText(connected
                           ? tr("%1 · step %2").arg(QLatin1String(toString(state_))).arg(step_)
                           : tr("no engine"));
}

void MainWindow::restoreLayout() {
  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  pages_->setCurrentIndex(settings.value(QStringLiteral("window/page"), 0).toInt());
}

void MainWindow::saveLayout() const {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  settings.setValue(QStringLiteral("window/page"), pages_->currentIndex());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  saveLayout();
  QMainWindow::closeEvent(event);
}

void MainWindow::showAbout() {
  widgets::AboutDialog dialog(facts_, this);
  dialog.exec();
}

}  // namespace lorascope::app
