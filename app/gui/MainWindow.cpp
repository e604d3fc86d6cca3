// gui/MainWindow.cpp — window layout, run actions, event fan-out, export, remembered layout.
#include "gui/MainWindow.h"

#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDesktopServices>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressDialog>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextBrowser>
#include <QToolBar>
#include <QUrl>
#include <QVBoxLayout>
#include <functional>

#include "common/Build.h"  // defines: buildInfo
#include "external/CommandHost.h"
#include "external/SupervisedRun.h"
#include "gui/AppPaths.h"  // defines: engineProgram
#include "gui/CommandSetup.h"
#include "gui/EngineAdapter.h"
#include "gui/GpuCheckDialog.h"
#include "gui/ProcessesPage.h"
#include "gui/RunExporter.h"
#include "gui/RunSetupPage.h"
#include "gui/RunsPage.h"
#include "gui/Theme.h"
#include "gui/TryItPage.h"
#include "profiles/Builtins.h"
#include "profiles/ProfileStore.h"
#include "runs/RunFolder.h"  // defines: unusedFolder
#include "widgets/ControlsPanel.h"
#include "widgets/Dashboard.h"
#include "widgets/DisplayText.h"  // defines: pathToQString, toPath
#include "widgets/EventLogModel.h"
#include "widgets/EventLogPanel.h"
#include "widgets/MemoryMapPanel.h"
#include "widgets/ProfileBar.h"

namespace lorascope::app {

using namespace lorascope::engine;

widgets::AboutFacts collectAboutFacts() {
  const common::BuildInfo& info = common::buildInfo();
  widgets::AboutFacts facts;
  facts.version = QString::fromStdString(info.version);
  facts.flavour = QString::fromStdString(info.flavour);
  facts.gpuTargets = QString::fromStdString(info.gpuTargets);
  facts.noDeviceReason = QObject::tr("not reported yet: the engine lists the GPUs as it starts");
  return facts;
}

void addEngineFacts(widgets::AboutFacts& facts, const engine::HelloEvent& hello) {
  facts.gpuRuntime = QString::fromStdString(hello.gpuRuntime);
  facts.noDeviceReason = QString::fromStdString(hello.noDeviceReason);
  facts.devices.clear();
  for (std::size_t i = 0; i < hello.devices.size(); ++i) {
    const engine::DeviceSummary& d = hello.devices[i];
    facts.devices << QStringLiteral("%1: %2 [%3], %4 MiB")
                         .arg(i)
                         .arg(QString::fromStdString(d.name),
                              QString::fromStdString(d.architecture))
                         .arg(d.totalBytes >> 20);
  }
}

namespace {

// What a profile sets over the run options, as the setup page says it under the profile's name.
QString profileNote(const profiles::Profile& p) {
  QStringList sets;
  using settings::Toggle;
  const profiles::LiveToggles& t = p.toggles;
  auto on = [&](const Toggle& toggle, const nlohmann::json& value) {
    return profiles::toggleValue(t, toggle) == value;
  };
  if (const auto microBatch = profiles::toggleValue(t, Toggle::MicroBatch)) {
    sets << QObject::tr("micro-batch %1 (the effective batch stays: more accumulation)")
                .arg(microBatch->get<int>());
  }
  if (on(Toggle::ActivationCheckpointing, true)) {
    sets << QObject::tr("activation checkpointing on");
  }
  if (on(Toggle::Serialize, true)) {
    sets << QObject::tr("serialized kernels");
  }
  if (on(Toggle::Blocking, true)) {
    sets << QObject::tr("blocking launches");
  }
  if (on(Toggle::CpuFallback, true)) {
    sets << QObject::tr("the CPU as the device");
  }
  if (on(Toggle::GemmBackend, settings::gemmName(settings::Gemm::BuiltIn))) {
    sets << QObject::tr("the built-in GEMM");
  }
  if (!p.environment.empty()) {
    QStringList variables;
    for (const auto& [name, value] : p.environment) {
      variables << QString::fromStdString(name + "=" + value);
    }
    sets << QObject::tr("the GPU runtime's environment %1")
                .arg(variables.join(QStringLiteral(", ")));
  }
  if (sets.isEmpty()) {
    return {};
  }
  return QObject::tr("%1 sets %2, over the options on this page.")
      .arg(QString::fromStdString(p.name), sets.join(QStringLiteral("; ")));
}

}  // namespace

MainWindow::MainWindow(widgets::AboutFacts facts, QWidget* parent)
    : QMainWindow(parent),
      facts_(std::move(facts)),
      engineProfile_(QString::fromStdString(profiles::defaultProfile().name)) {
  widgets::registerEngineMetaTypes();
  setWindowTitle(tr("LoRAscope"));
  resize(1280, 820);

  setup_ = new RunSetupPage(this);
  runs_ = new RunsPage(this);
  dashboard_ = new widgets::Dashboard(this);
  memoryMap_ = new widgets::MemoryMapPanel(this);
  processes_ = new ProcessesPage(/*live=*/true, this);
  eventLog_ = new widgets::EventLogModel(this);
  eventLogPanel_ = new widgets::EventLogPanel(eventLog_, this);
  pages_ = new QTabWidget(this);
  pages_->setDocumentMode(true);
  pages_->addTab(setup_, tr("&Setup"));
  pages_->addTab(runs_, tr("&Runs"));
  pages_->addTab(dashboard_, tr("&Dashboard"));
  pages_->addTab(memoryMap_, tr("&Memory map"));
  pages_->addTab(processes_, tr("&Processes"));
  pages_->addTab(eventLogPanel_, tr("&Log and incidents"));
  tryIt_ = new TryItPage(this);
  tryIt_->restoreSettings();
  tryIt_->setProfile(engineProfile_);
  pages_->addTab(tryIt_, tr("&Try it"));
  setCentralWidget(pages_);
  // The Try it page starts from the setup's model and the newest run (until the user edits them).
  connect(pages_, &QTabWidget::currentChanged, this, [this] {
    if (pages_->currentWidget() == tryIt_)
      tryIt_->suggest(setup_->effectiveModelDir(), runFolder_);
  });
  exporter_ = new RunExporter(engineProgram(), this);

  controls_ = new widgets::ControlsPanel(widgets::liveControls(), this);
  auto* controlsDock = new QDockWidget(tr("Controls"), this);
  controlsDock->setObjectName(QStringLiteral("controlsDock"));
  controlsDock->setWidget(controls_);
  addDockWidget(Qt::RightDockWidgetArea, controlsDock);
  // Narrow, so that at 1024 px the dashboard's two chart columns keep room for their plots (the
  // dock's rows wrap; a saved layout overrides this).
  resizeDocks({controlsDock}, {kControlsDockWidthPx}, Qt::Horizontal);

  profileBar_ = new widgets::ProfileBar(profiles::ProfileStore::defaultUserDir(), this);
  QToolBar* profileToolbar = addToolBar(tr("Profiles"));
  profileToolbar->setObjectName(QStringLiteral("profileToolbar"));
  profileToolbar->addWidget(profileBar_);

  connect(memoryMap_, &widgets::MemoryMapPanel::commandRequested, this, &MainWindow::sendCommand);
  connect(controls_, &widgets::ControlsPanel::commandRequested, this, &MainWindow::sendCommand);
  connect(profileBar_, &widgets::ProfileBar::commandRequested, this, &MainWindow::sendCommand);
  connect(setup_, &RunSetupPage::changed, this, &MainWindow::updateActions);
  connect(setup_, &RunSetupPage::changed, this, &MainWindow::showConfiguredToggles);
  showConfiguredToggles();
  connect(setup_, &RunSetupPage::changed, this, [this] { runs_->setFolder(setup_->outputDir()); });
  runs_->setFolder(setup_->outputDir());
  connect(pages_, &QTabWidget::currentChanged, this, [this] {
    if (pages_->currentWidget() == runs_) {
      runs_->refresh();  // runs written meanwhile, by this window or the command line
    }
  });
  auto report = [this](const QString& problem) {
    if (!problem.isEmpty()) {
      logLine(LogLevel::Warning, problem);
      QMessageBox::warning(this, tr("Cannot open"), problem);
    }
  };
  connect(runs_, &RunsPage::openRequested, this,
          [this, report](const RunSummary& run) { report(openRun(run.dir)); });
  connect(runs_, &RunsPage::resumeRequested, this,
          [this](const RunSummary& run) { resumeRun(run.dir); });
  connect(runs_, &RunsPage::recordingChosen, this,
          [this, report](const QString& file) { report(openRecording(file)); });
  // One profile setting, shown on the setup page and the profile bar (README: "A run owns its
  // state"): choosing it in either place applies it now and to the next run.
  connect(setup_, &RunSetupPage::profileChosen, this, &MainWindow::chooseProfile);
  setup_->setDevices(facts_.devices, facts_.flavour != QLatin1String("cpu"));
  QMap<QString, QString> notes;
  QMap<QString, profiles::LiveToggles> toggles;
  for (const QString& name : profileBar_->profileNames()) {
    notes.insert(name, profileNote(*profileBar_->profile(name)));
    toggles.insert(name, profileBar_->profile(name)->toggles);
  }
  setup_->setProfiles(profileBar_->profileNames(), engineProfile_, notes, toggles);
  profileBar_->select(setup_->profileName());
  showConfiguredToggles();  // with the profile Setup shows now
  // The dock shows the state of the run the dashboard shows: the live engine's, or a recording's.
  connect(dashboard_, &widgets::Dashboard::shownRunChanged, this, [this](int run) {
    if (run == dashboard_->liveRun()) {
      controls_->showLive();
    } else {
      controls_->showRecorded(dashboard_->runName(run), dashboard_->runEvents(run));
    }
  });
  connect(exporter_, &RunExporter::lineReceived, this, [this](const QString& line) {
    logLine(LogLevel::Info, tr("export: %1").arg(line));
    // A merge reports "merging:  40% (1.20 GiB of 2.97 GiB)": the dialog shows the fraction.
    static const QRegularExpression merging(QStringLiteral("^merging: *(\\d+)%"));
    const QRegularExpressionMatch match = merging.match(line);
    if (match.hasMatch() && exportProgress_ != nullptr) {
      exportProgress_->setRange(0, 100);
      exportProgress_->setValue(match.captured(1).toInt());
    }
  });
  connect(exporter_, &RunExporter::finished, this, [this](bool ok, const QString& message) {
    if (exportProgress_ != nullptr) {
      exportProgress_->hide();
    }
    logLine(ok ? LogLevel::Info : LogLevel::Error,
            ok ? tr("export finished: %1").arg(message) : message);
    statusBar()->showMessage(ok ? tr("Export finished") : message, 10000);
    updateActions();
  });

  buildActions();
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(controlsDock->toggleViewAction());
  view->addAction(profileToolbar->toggleViewAction());
  buildViewMenu(view);
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About LoRAscope"), this, &MainWindow::showAbout);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
  help->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showShortcuts);
  help->addSeparator();
  help->addAction(tr("&Check this GPU…"), this, &MainWindow::checkGpu);

  engineLabel_ = new QLabel(this);
  stateLabel_ = new QLabel(this);
  engineLabel_->setObjectName(QStringLiteral("engineStatus"));
  // One line, cut at the window's edge (the whole text in its tooltip): a wrapped status bar took
  // 75 px of a 700 px window's height from the dashboard's plots, an unwrapped one widened it.
  engineLabel_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  stateLabel_->setObjectName(QStringLiteral("runStatus"));
  statusBar()->addWidget(engineLabel_, 1);
  statusBar()->addPermanentWidget(stateLabel_);
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

  QMenu* run = menuBar()->addMenu(tr("R&un"));  // Alt+R is the Runs page's
  addToolBarBreak();  // a row of its own: beside the profile bar it overflowed at 1024 px
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
  start_ = run->addAction(tr("&Start"));
  start_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  start_->setToolTip(tr("Start a run with the setup page's settings (%1)")
                         .arg(start_->shortcut().toString(QKeySequence::NativeText)));
  toolbar->addAction(start_);
  connect(start_, &QAction::triggered, this, &MainWindow::startRun);
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
  run->addSeparator();
  auto local = [&](const QString& text, const QKeySequence& keys, const QString& tip) {
    QAction* action = run->addAction(text);
    action->setShortcut(keys);
    action->setToolTip(QStringLiteral("%1 (%2)").arg(tip, keys.toString(QKeySequence::NativeText)));
    return action;
  };
  exportAdapter_ = local(tr("&Export adapter…"), QKeySequence(Qt::CTRL | Qt::Key_E),
                         tr("Write the run's adapter in PEFT's format to a folder"));
  connect(exportAdapter_, &QAction::triggered, this, [this] { chooseExportDestination(false); });
  exportMerged_ = local(tr("Export &merged model…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
                        tr("Merge the adapter into the base model and write it to a folder"));
  connect(exportMerged_, &QAction::triggered, this, [this] { chooseExportDestination(true); });
  openRunFolder_ = local(tr("&Open run folder"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O),
                         tr("Show the run's folder (checkpoints, metrics, config)"));
  connect(openRunFolder_, &QAction::triggered, this,
          [this] { QDesktopServices::openUrl(QUrl::fromLocalFile(runFolder_)); });
  toolbar->addSeparator();
  toolbar->addAction(exportAdapter_);
  toolbar->addAction(openRunFolder_);
}

void MainWindow::buildViewMenu(QMenu* view) {
  view->addSeparator();
  // Ctrl+Tab goes through the pages wherever the focus is (a page's own editor does not take it).
  auto page = [this, view](const QString& text, const QList<QKeySequence>& keys, int delta) {
    QAction* action = view->addAction(text);
    action->setShortcuts(keys);
    action->setShortcutContext(Qt::WindowShortcut);
    connect(action, &QAction::triggered, this, [this, delta] {
      const int count = pages_->count();
      pages_->setCurrentIndex((pages_->currentIndex() + delta + count) % count);
    });
  };
  page(tr("&Next page"), {QKeySequence(Qt::CTRL | Qt::Key_Tab)}, 1);
  // Shift+Tab arrives as Backtab; the first is the one the menu and the shortcuts list show.
  page(tr("&Previous page"),
       {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Tab),
        QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Backtab)},
       -1);
  view->addSeparator();
  QMenu* schemes = view->addMenu(tr("&Colours"));
  schemes_ = new QActionGroup(this);
  const ColorScheme saved =
      colorSchemeFromString(QSettings().value(QStringLiteral("view/colorScheme")).toString());
  for (const auto& [scheme, text] :
       {std::pair{ColorScheme::System, tr("Follow the &system")},
        std::pair{ColorScheme::Light, tr("&Light")}, std::pair{ColorScheme::Dark, tr("&Dark")}}) {
    QAction* action = schemes->addAction(text);
    action->setCheckable(true);
    action->setChecked(scheme == saved);
    action->setData(toString(scheme));
    schemes_->addAction(action);
  }
  connect(schemes_, &QActionGroup::triggered, this, [](QAction* action) {
    const ColorScheme scheme = colorSchemeFromString(action->data().toString());
    applyColorScheme(scheme);
    QSettings().setValue(QStringLiteral("view/colorScheme"), toString(scheme));
  });
  if (saved != ColorScheme::System) {
    applyColorScheme(saved);
  }
}

MainWindow::~MainWindow() = default;

void MainWindow::startRun() {
  if (setup_->usesCommand() && !runConfig_.is_object()) {
    startCommand();
    return;
  }
  if (engine_ != trainingEngine_) {
    setEngine(trainingEngine_);  // back from a supervised command
  }
  syncEngineProfile();  // the run starts on the profile Setup shows
  std::optional<nlohmann::json> config =
      runConfig_.is_object() ? std::optional(runConfig_) : setup_->runConfig();
  if (!config) {
    pages_->setCurrentWidget(setup_);  // the page lists what is missing
    return;
  }
  setup_->saveSettings();
  const QString out = QString::fromStdString(config->value("out", std::string()));
  if (QFileInfo::exists(QDir(out).filePath(QStringLiteral("config.json")))) {
    const QString freeName = widgets::pathToQString(runs::unusedFolder(widgets::toPath(out)));
    switch (askAboutExistingRun(out, freeName)) {
      case ExistingRunChoice::Resume:
        resumeRun(out);
        return;
      case ExistingRunChoice::NewName:
        (*config)["out"] = freeName.toStdString();
        break;
      case ExistingRunChoice::Cancel:
        return;
    }
  }
  runFolder_ = QString::fromStdString(config->value("out", std::string()));
  hasCheckpoint_ = false;
  runEnded_ = false;
  controls_->startRun(/*fromConfigured=*/true);  // Setup's values until the new run reports
  sendCommand(Command{StartCommand{*config}});   // the dashboard starts a new run's curves
  pages_->setCurrentWidget(dashboard_);
  updateActions();
}

// "Run a command": the setup page's command under a CommandHost (external/, what `lorascope-train
// supervise` runs), its events on the same dashboard, memory map and log as a training run's; its
// folder (command-<time> in the runs folder) is a run the Runs page lists.
void MainWindow::startCommand() {
  QString error;
  const std::optional<external::SupervisedCommand> command =
      setup_->commandSetup()->command(&error);
  if (!command) {
    logLine(LogLevel::Error, error);
    pages_->setCurrentWidget(setup_);
    return;
  }
  try {
    const profiles::Profile profile =
        external::findProfile(setup_->commandSetup()->profileName().toStdString());
    setup_->saveSettings();  // also remembers the command's fields
    // A folder of its own, also for a second command started within the same second (which
    // would otherwise append its steps to the first's metrics.jsonl).
    const QString name = QStringLiteral("command-") +
                         QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    const QString runDir = widgets::pathToQString(
        runs::unusedFolder(widgets::toPath(QDir(setup_->outputDir()).filePath(name))));
    launchCommand(*command, profile, runDir);
  } catch (const external::ExternalError& e) {
    logLine(LogLevel::Error, QString::fromStdString(e.what()));
    pages_->setCurrentWidget(setup_);
  }
}

// The Runs page's Resume on a supervised command's run: its command again, in its folder, the
// first attempt with the resume argument at the newest checkpoint.
void MainWindow::resumeCommand(const QString& runDir) {
  try {
    const std::filesystem::path dir = widgets::toPath(runDir);
    external::SupervisedRun run = external::readSupervisedRun(dir);
    run.command.resumeFirst = true;
    run.command.resumedAfterStep = external::lastRecordedStep(dir);
    launchCommand(run.command, external::findProfile(run.profile), runDir);
  } catch (const std::exception& e) {
    logLine(LogLevel::Error, QString::fromUtf8(e.what()));
  }
}

void MainWindow::launchCommand(const external::SupervisedCommand& command,
                               const profiles::Profile& profile, const QString& runDir) {
  external::CommandHostOptions options;
  options.runDirectory = widgets::toPath(runDir);
  if (engine_ == commandEngine_.get()) {
    setEngine(trainingEngine_);
  }
  commandEngine_.reset();
  controls_->startRun(/*fromConfigured=*/false);  // a command reports none of the trainer's toggles
  if (command.resumeFirst) {
    // A resumed command's run is one run too: its entry goes on after its last recorded step.
    dashboard_->resumeRun(runDir, QFileInfo(runDir).fileName(), earlierSteps(runDir),
                          command.resumedAfterStep);
  } else {  // new curves, named after the run's folder
    dashboard_->noteCommand(Command{StartCommand{{{"out", runDir.toStdString()}}}});
  }
  commandEngine_ = std::make_unique<EngineAdapter>([&](engine::HostListener listener) {
    return std::make_unique<external::CommandHost>(command, profile, options, std::move(listener));
  });
  runFolder_ = runDir;
  hasCheckpoint_ = false;
  runEnded_ = false;
  setEngine(commandEngine_.get());
  logLine(
      LogLevel::Info,
      tr("supervising %1 with profile '%2'; its log is %3/command.log")
          .arg(QString::fromStdString(external::commandLine(command.program, command.arguments)),
               QString::fromStdString(profile.name), runFolder_));
  pages_->setCurrentWidget(dashboard_);
  updateActions();
}

MainWindow::ExistingRunChoice MainWindow::askAboutExistingRun(const QString& runDir,
                                                              const QString& freeName) {
  const std::optional<RunSummary> run = readRunSummary(runDir);
  const bool resumable = run && run->status == RunSummary::Status::Resumable;
  QMessageBox ask(QMessageBox::Question, tr("This run exists"),
                  tr("%1 already holds a run (%2). Resume it from its checkpoint, or start this "
                     "one under a new name?")
                      .arg(QDir::toNativeSeparators(runDir), run ? statusText(*run) : QString()),
                  QMessageBox::NoButton, this);
  ask.setObjectName(QStringLiteral("existingRunPrompt"));
  QPushButton* resume = ask.addButton(tr("Resume it"), QMessageBox::AcceptRole);
  resume->setEnabled(resumable);
  if (!resumable) {
    resume->setToolTip(tr("It has no checkpoint to resume from"));
  }
  QPushButton* rename =
      ask.addButton(tr("Start as %1").arg(QFileInfo(freeName).fileName()), QMessageBox::ActionRole);
  ask.addButton(QMessageBox::Cancel);
  ask.setDefaultButton(resumable ? resume : rename);
  ask.exec();
  if (ask.clickedButton() == resume) {
    return ExistingRunChoice::Resume;
  }
  return ask.clickedButton() == rename ? ExistingRunChoice::NewName : ExistingRunChoice::Cancel;
}

std::vector<TimedEvent> MainWindow::earlierSteps(const QString& runDir) {
  try {
    return metricsAsEvents(runDir);
  } catch (const std::exception& e) {
    logLine(
        LogLevel::Warning,
        tr("the resumed run's earlier steps are not shown: %1").arg(QString::fromUtf8(e.what())));
    return {};
  }
}

void MainWindow::resumeRun(const QString& runDir) {
  if (external::isSupervisedRunFolder(widgets::toPath(runDir))) {
    resumeCommand(runDir);
    return;
  }
  if (engine_ != trainingEngine_) {
    setEngine(trainingEngine_);  // back from a supervised command
  }
  if (engine_ == nullptr || !engine_->isConnected()) {
    return;
  }
  runFolder_ = runDir;
  hasCheckpoint_ = true;  // a resumable run has one
  runEnded_ = false;
  // One run: its entry goes on from the checkpoint, its earlier steps from its metrics.jsonl
  // when this window did not show them.
  const std::optional<RunSummary> run = readRunSummary(runDir);
  std::vector<TimedEvent> earlier = earlierSteps(runDir);
  controls_->startRun(/*fromConfigured=*/false);  // it starts from its own config.json
  dashboard_->resumeRun(runDir, QFileInfo(runDir).fileName(), std::move(earlier),
                        run ? run->checkpointStep : 0);
  sendCommand(Command{StartCommand{{{"out", runDir.toStdString()}, {"resume", true}}}});
  pages_->setCurrentWidget(dashboard_);
  updateActions();
}

QString MainWindow::openRun(const QString& runDir) {
  try {
    dashboard_->addRun(tr("%1 (saved)").arg(QFileInfo(runDir).fileName()), metricsAsEvents(runDir));
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  pages_->setCurrentWidget(dashboard_);
  return {};
}

QString MainWindow::openRecording(const QString& file) {
  std::vector<TimedEvent> events;
  try {
    events = readRecording(file);
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  const QString name = QFileInfo(file).fileName();
  std::vector<SnapshotEvent> snapshots;  // a run on several GPUs recorded each card's
  for (const TimedEvent& e : events) {
    if (const auto* snapshot = std::get_if<SnapshotEvent>(&e.event)) {
      snapshots.push_back(*snapshot);
    }
  }
  if (!snapshots.empty()) {
    const QString problem =
        memoryMap_->showSnapshots(snapshots, tr("from the recording %1").arg(name));
    if (!problem.isEmpty()) {
      return tr("%1: its snapshot cannot be shown: %2").arg(file, problem);
    }
  } else {  // not the snapshot of a recording shown before
    memoryMap_->clearSnapshot(tr("The recording %1 holds no allocator snapshot.").arg(name));
  }
  logLine(LogLevel::Info, tr("replaying the recording %1: its rows follow, marked [%2]")
                              .arg(QDir::toNativeSeparators(file), name));
  eventLog_->addRecording(name, events);  // its errors and incidents among the rows
  dashboard_->addRun(tr("%1 (recording)").arg(name), std::move(events));
  pages_->setCurrentWidget(dashboard_);
  return {};
}

void MainWindow::setEngineProgram(const QString& program) {
  exporter_->setProgram(program);
  setup_->setTrainProgram(program);
}

void MainWindow::chooseExportDestination(bool merged) {
  const QString destination = QFileDialog::getExistingDirectory(
      this, merged ? tr("Folder for the merged model") : tr("Folder for the adapter"),
      QFileInfo(runFolder_).absolutePath());
  if (!destination.isEmpty()) {
    exportRun(merged, destination);
  }
}

void MainWindow::exportRun(bool merged, const QString& destination) {
  if (runFolder_.isEmpty() ||
      !exporter_->start(runFolder_, destination,
                        merged ? RunExporter::Kind::MergedModel : RunExporter::Kind::Adapter)) {
    return;
  }
  logLine(LogLevel::Info,
          tr("exporting %1 of %2 to %3")
              .arg(merged ? tr("a merged model") : tr("the adapter"), runFolder_, destination));
  if (exportProgress_ == nullptr) {
    exportProgress_ = new QProgressDialog(this);
    exportProgress_->setMinimumDuration(500);
    connect(exportProgress_, &QProgressDialog::canceled, exporter_, &RunExporter::cancel);
  }
  exportProgress_->setRange(0, 0);  // busy until a merge reports its fraction
  exportProgress_->setLabelText(merged ? tr("Merging the adapter into the base model …")
                                       : tr("Exporting the adapter …"));
  exportProgress_->show();
  updateActions();
}

void MainWindow::logLine(LogLevel level, const QString& text) {
  eventLog_->handleEvent({lastEventMs_, LogEvent{level, text.toStdString()}});
}

void MainWindow::setEngine(widgets::EngineClient* engine) {
  if (engine != commandEngine_.get()) {
    trainingEngine_ = engine;
  }
  if (engine_ != nullptr) {
    disconnect(engine_, nullptr, this, nullptr);
  }
  engine_ = engine;
  if (engine_ != nullptr) {
    connect(engine_, &widgets::EngineClient::eventReceived, this, &MainWindow::handleEvent);
    connect(engine_, &widgets::EngineClient::connectedChanged, this, [this] {
      syncEngineProfile();
      updateActions();
    });
  }
  syncEngineProfile();
  updateActions();
}

void MainWindow::setRunConfig(nlohmann::json config) {
  runConfig_ = std::move(config);
  showConfiguredToggles();
  updateActions();
}

// The Controls dock's values before the engine reports: the options Start sends, the setup page's,
// with the toggles its profile sets over them (none when Start sends a config set with
// setRunConfig, or runs a command, which reports none).
void MainWindow::showConfiguredToggles() {
  if (runConfig_.is_object() || setup_->usesCommand()) {
    controls_->setConfigured({});
    return;
  }
  const QString profile = setup_->profileName();
  const std::optional<profiles::Profile> chosen = profileBar_->profile(profile);
  controls_->setConfigured(widgets::configuredToggles(setup_->options()), profile,
                           chosen ? chosen->toggles : profiles::LiveToggles{});
}

void MainWindow::sendCommand(const Command& command) {
  if (engine_ == nullptr || !engine_->isConnected()) {
    return;
  }
  if (const auto* sw = std::get_if<SwitchProfileCommand>(&command)) {
    // The profile bar's click: Setup shows it too, and the next run starts with it.
    const QString name = QString::fromStdString(sw->name);
    setup_->setProfile(name);
    tryIt_->setProfile(name);
    if (engine_ == trainingEngine_) {
      engineProfile_ = name;
    }
  }
  dashboard_->noteCommand(command);
  engine_->send(command);
}

void MainWindow::chooseProfile(const QString& name) {
  setup_->setProfile(name);
  tryIt_->setProfile(name);
  profileBar_->select(name);
  syncEngineProfile();
}

// The trainer's engine runs the profile Setup shows: the window switches it when they differ (a
// choice made while no engine was connected).
void MainWindow::syncEngineProfile() {
  const QString wanted = setup_->profileName();
  if (wanted.isEmpty() || wanted == engineProfile_ || trainingEngine_ == nullptr ||
      !trainingEngine_->isConnected() || engine_ != trainingEngine_) {
    return;
  }
  engineProfile_ = wanted;
  sendCommand(SwitchProfileCommand{wanted.toStdString()});
}

void MainWindow::handleEvent(const TimedEvent& timed) {
  lastEventMs_ = timed.timeMs;
  dashboard_->handleEvent(timed);
  memoryMap_->handleEvent(timed);
  controls_->handleEvent(timed);
  eventLog_->handleEvent(timed);
  if (const auto* state = std::get_if<StateEvent>(&timed.event)) {
    state_ = state->state;
    step_ = state->step;
    if (state_ == RunState::Finished || state_ == RunState::Failed) {
      runEnded_ = true;
      controls_->endRun();  // a pending change or a refusal of it ends with the run
      runs_->refresh();
      if (engine_ == commandEngine_.get() && engine_ != nullptr) {
        // The command is over: the trainer's engine is the one the window drives again (its
        // profile bar and Controls dock), the command's curves stay on the dashboard.
        QMetaObject::invokeMethod(
            this,
            [this] {
              if (engine_ == commandEngine_.get() && trainingEngine_ != nullptr) {
                setEngine(trainingEngine_);
              }
            },
            Qt::QueuedConnection);
      }
    } else if (state_ == RunState::Running) {
      runEnded_ = false;
    }
    updateActions();
    if (quitWhenStopped_ &&
        (state_ == RunState::Finished || state_ == RunState::Failed || state_ == RunState::Idle)) {
      QMetaObject::invokeMethod(this, &QWidget::close, Qt::QueuedConnection);
    }
  } else if (std::holds_alternative<CheckpointEvent>(timed.event)) {
    hasCheckpoint_ = true;
    updateActions();
  } else if (const auto* memory = std::get_if<MemoryEvent>(&timed.event)) {
    processes_->setOurReservedBytes(memory->reservedBytes, memory->card);
  } else if (const auto* step = std::get_if<StepEvent>(&timed.event)) {
    step_ = step->step;
    stateLabel_->setText(stateText());
  } else if (const auto* hello = std::get_if<HelloEvent>(&timed.event);
             hello != nullptr && engine_ == trainingEngine_) {
    addEngineFacts(facts_, *hello);  // the About box and the setup page list its GPUs
    setup_->setDevices(facts_.devices, facts_.flavour != QLatin1String("cpu"));
    setup_->setGroupUnavailable(QString::fromStdString(hello->noCollectiveReason));
    QStringList devices;
    for (const DeviceSummary& d : hello->devices) {
      devices << QString::fromStdString(d.name);
    }
    engineText_ =
        tr("engine %1 (%2 build) · %3")
            .arg(QString::fromStdString(hello->version), QString::fromStdString(hello->flavour),
                 devices.isEmpty() ? tr("CPU") : devices.join(", "));
    updateActions();
  }
}

// The run's state as the runs page says it once the run is over ("stopped · checkpoint at step
// 44", "finished"), from its folder; while it runs, the engine's state and step.
QString MainWindow::stateText() const {
  if (runEnded_ && !runFolder_.isEmpty()) {
    if (const std::optional<RunSummary> run = readRunSummary(runFolder_);
        run && run->status != RunSummary::Status::Unreadable) {
      // A supervised command's status says how it ended; a training run's says where it stopped.
      return state_ == RunState::Failed && !run->supervised
                 ? tr("failed · %1").arg(statusText(*run))
                 : statusText(*run);
    }
  }
  return tr("%1 · step %2").arg(QLatin1String(toString(state_))).arg(step_);
}

void MainWindow::updateActions() {
  if (start_ == nullptr || engineLabel_ == nullptr) {
    return;  // still building the window (the setup page reports its first state)
  }
  const bool connected = engine_ != nullptr && engine_->isConnected();
  const bool idle =
      state_ == RunState::Idle || state_ == RunState::Finished || state_ == RunState::Failed;
  const bool running = state_ == RunState::Running;
  const bool paused = state_ == RunState::Paused;
  // Start needs the engine it will use: the trainer's, or no command still running.
  const bool canStart = setup_->usesCommand()
                            ? !(commandEngine_ && commandEngine_->isConnected())
                            : trainingEngine_ != nullptr && trainingEngine_->isConnected();
  start_->setEnabled(canStart && idle && (runConfig_.is_object() || setup_->problems().isEmpty()));
  const bool exporting = exporter_->isRunning();
  exportAdapter_->setEnabled(hasCheckpoint_ && !exporting);
  exportMerged_->setEnabled(hasCheckpoint_ && !exporting);
  openRunFolder_->setEnabled(!runFolder_.isEmpty() && QFileInfo::exists(runFolder_));
  pause_->setEnabled(connected && running);
  resume_->setEnabled(connected && paused);
  stop_->setEnabled(connected && (running || paused));
  checkpoint_->setEnabled(connected && (running || paused));
  // The profile bar and the Controls dock act on LoRAscope's own trainer; a supervised command
  // takes Stop only. When they are off, the status bar says why.
  const bool command = engine_ != nullptr && engine_ == commandEngine_.get();
  QString why;
  if (command && connected) {
    why =
        tr("a supervised command is running: it takes Stop only, so the profile buttons and "
           "the Controls dock are off until it ends");
  } else if (!connected) {
    why = trainingEngine_ == nullptr ? tr("no training engine is connected")
                                     : tr("the training engine is not running (it is starting "
                                          "or could not start: see Log and incidents)");
  }
  const bool trainer = connected && !command;
  controls_->setEngineAvailable(trainer);
  runs_->setCanResume(trainingEngine_ != nullptr && trainingEngine_->isConnected() && idle);
  profileBar_->setEngineAvailable(trainer, why);
  stateLabel_->setText(connected || runEnded_ ? stateText() : tr("no engine"));
  const QString gpus = facts_.devices.isEmpty()
                           ? tr("no GPU (%1)").arg(facts_.noDeviceReason)
                           : tr("%n GPU(s)", nullptr, static_cast<int>(facts_.devices.size()));
  const QString engine =
      engineText_.isEmpty() ? tr("%1 build · %2").arg(facts_.flavour, gpus) : engineText_;
  engineLabel_->setText(why.isEmpty() ? engine
                                      : tr("%1 · profiles and Controls off: %2").arg(engine, why));
  engineLabel_->setToolTip(engineLabel_->text());
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
  tryIt_->saveSettings();
}

// Quitting mid-run asks first. There is no "keep running without the window": the engine stops
// (with a checkpoint) when the window that drives it goes, so the choice is stop-and-quit or stay.
void MainWindow::closeEvent(QCloseEvent* event) {
  const bool runInProgress = engine_ != nullptr && engine_->isConnected() &&
                             (state_ == RunState::Running || state_ == RunState::Paused ||
                              state_ == RunState::Starting || state_ == RunState::Stopping);
  if (runInProgress && !quitWhenStopped_) {
    QMessageBox ask(QMessageBox::Question, tr("A run is in progress"),
                    tr("The run is at step %1. Quitting stops it: its last completed step is "
                       "saved as a checkpoint in %2 (lorascope-train train --resume %2 "
                       "continues it).")
                        .arg(step_)
                        .arg(runFolder_),
                    QMessageBox::NoButton, this);
    ask.setObjectName(QStringLiteral("quitPrompt"));
    QPushButton* stop =
        ask.addButton(tr("Stop with a checkpoint and quit"), QMessageBox::AcceptRole);
    ask.addButton(QMessageBox::Cancel);
    ask.setDefaultButton(QMessageBox::Cancel);
    ask.exec();
    if (ask.clickedButton() != stop) {
      event->ignore();
      return;
    }
    quitWhenStopped_ = true;
    if (state_ != RunState::Stopping) {
      sendCommand(StopCommand{});
    }
    event->ignore();  // closed when the engine reports the run finished (its checkpoint written)
    return;
  }
  if (runInProgress) {
    event->ignore();  // still stopping
    return;
  }
  saveLayout();
  QMainWindow::closeEvent(event);
}

void MainWindow::checkGpu() {
  auto* dialog =
      new GpuCheckDialog(exporter_->program(), runFolder_, profileBar_->requestedProfile(), this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->show();
}

// Help → Keyboard shortcuts: every menu action that has one, as the menus name it, and the pages'
// Alt+letter keys.
void MainWindow::showShortcuts() {
  QString html = QStringLiteral("<table cellspacing=4>");
  auto row = [&html](const QString& keys, const QString& what) {
    html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                .arg(keys.toHtmlEscaped(), what.toHtmlEscaped());
  };
  for (QAction* menuAction : menuBar()->actions()) {
    QMenu* menu = menuAction->menu();
    if (menu == nullptr) {
      continue;
    }
    const QString menuName = menuAction->text().remove(QLatin1Char('&'));
    const std::function<void(QMenu*, const QString&)> list = [&](QMenu* m, const QString& path) {
      for (QAction* a : m->actions()) {
        const QString name = path + QStringLiteral(" → ") + a->text().remove(QLatin1Char('&'));
        if (a->menu() != nullptr) {
          list(a->menu(), name);
        } else if (!a->shortcut().isEmpty()) {
          row(a->shortcut().toString(QKeySequence::NativeText), name);
        }
      }
    };
    list(menu, menuName);
  }
  for (int page = 0; page < pages_->count(); ++page) {
    const QString text = pages_->tabText(page);
    const int amp = text.indexOf(QLatin1Char('&'));
    if (amp >= 0 && amp + 1 < text.size()) {
      row(QKeySequence(Qt::ALT | QKeySequence(text.at(amp + 1).toUpper())[0].key())
              .toString(QKeySequence::NativeText),
          tr("the %1 page").arg(QString(text).remove(QLatin1Char('&'))));
    }
  }
  html += QStringLiteral("</table>");
  QDialog dialog(this);
  dialog.setObjectName(QStringLiteral("shortcutsDialog"));
  dialog.setWindowTitle(tr("Keyboard shortcuts"));
  auto* text = new QTextBrowser(&dialog);
  text->setObjectName(QStringLiteral("shortcutsText"));
  text->setHtml(html);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  auto* layout = new QVBoxLayout(&dialog);
  layout->addWidget(text);
  layout->addWidget(buttons);
  dialog.resize(520, 480);
  dialog.exec();
}

void MainWindow::showAbout() {
  widgets::AboutDialog dialog(facts_, this);
  dialog.exec();
}

}  // namespace lorascope::app
