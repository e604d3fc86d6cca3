// gui/RunsPage.cpp — reading run folders into summaries, and the page that lists them.
#include "gui/RunsPage.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "common/OsError.h"               // defines: pathText
#include "external/ExternalSupervisor.h"  // defines: commandLine
#include "external/SupervisedRun.h"
#include "runs/RunFolder.h"
#include "widgets/DisplayText.h"  // defines: toPath, epochText

namespace lorascope::app {
namespace {

constexpr int kDirRole = Qt::UserRole;

enum Column { Name, Status, Steps, LastLoss, BestEvalLoss, Profile, Device, Created, ColumnCount };

}  // namespace

QString statusText(const RunSummary& run) {
  if (run.supervised) {
    QString text;
    switch (run.status) {
      case RunSummary::Status::Finished:
        text = QObject::tr("finished");
        break;
      case RunSummary::Status::Resumable:
        text = QObject::tr("%1 · checkpoint at step %2")
                   .arg(run.lastState.isEmpty() ? QObject::tr("stopped") : run.lastState)
                   .arg(run.checkpointStep);
        break;
      case RunSummary::Status::NoCheckpoint:
        text = QObject::tr("%1 · no checkpoint")
                   .arg(run.lastState.isEmpty() ? QObject::tr("stopped") : run.lastState);
        break;
      case RunSummary::Status::Unreadable:
        return QObject::tr("unreadable: %1").arg(run.problem);
    }
    if (run.incidents == 0) {
      return text;
    }
    return run.incidents == 1 ? QObject::tr("%1 · 1 incident").arg(text)
                              : QObject::tr("%1 · %2 incidents").arg(text).arg(run.incidents);
  }
  switch (run.status) {
    case RunSummary::Status::Finished:
      return QObject::tr("finished");
    case RunSummary::Status::Resumable:
      return QObject::tr("stopped · checkpoint at step %1").arg(run.checkpointStep);
    case RunSummary::Status::NoCheckpoint:
      return QObject::tr("stopped · no checkpoint");
    case RunSummary::Status::Unreadable:
      return QObject::tr("unreadable: %1").arg(run.problem);
  }
  return {};
}

QString createdText(const QString& created) {
  QDateTime when = QDateTime::fromString(created, Qt::ISODateWithMs);
  if (!when.isValid()) {
    return created;  // not a time this build can read: as written
  }
  return QLocale().toString(when.toLocalTime(), QStringLiteral("yyyy-MM-dd HH:mm"));
}

namespace {

// The last step of the folder's metrics.jsonl (its loss, its device) and its best evaluation.
void readMetrics(RunSummary& run, const std::filesystem::path& dir) {
  const std::filesystem::path metrics = dir / runs::kMetricsFile;
  if (!std::filesystem::exists(metrics)) {
    return;
  }
  const std::vector<runs::StepRecord> steps = runs::readStepRecords(metrics);
  if (!steps.empty()) {
    run.steps = steps.back().step;
    run.lastLoss = steps.back().loss;
    run.lastEpoch = steps.back().epoch;
    run.device = QString::fromStdString(steps.back().device);
  }
  for (const runs::StepRecord& m : steps) {
    if (m.eval && std::isfinite(m.eval->loss) &&
        (!run.bestEvalLoss || m.eval->loss < *run.bestEvalLoss)) {
      run.bestEvalLoss = m.eval->loss;
      run.bestEvalStep = m.step;
    }
  }
}

// A supervised command's run: its command and profile from config.json, steps from metrics.jsonl,
// how it ended and its incidents from events.jsonl, its checkpoint from the command's glob.
void readSupervisedSummary(RunSummary& run) {
  const std::filesystem::path dir = widgets::toPath(run.dir);
  const external::SupervisedRun command = external::readSupervisedRun(dir);
  run.supervised = true;
  run.commandLine = QString::fromStdString(
      external::commandLine(command.command.program, command.command.arguments));
  run.profile = QString::fromStdString(command.profile);
  std::ifstream in(dir / runs::kRunConfigFile, std::ios::binary);
  run.created = QString::fromStdString(
      nlohmann::json::parse(in, nullptr, false).value("created", std::string()));
  readMetrics(run, dir);
  const external::SupervisedRunStatus status = external::readSupervisedRunStatus(dir);
  run.incidents = status.incidents;
  // A run stopped on request ends "finished" too; only an exit 0 is finished here.
  run.lastState = status.state == "finished" && !status.finishedWell
                      ? QObject::tr("stopped")
                      : QString::fromStdString(status.state);
  const std::optional<std::filesystem::path> checkpoint =
      external::resumableCheckpoint(command.command);
  run.checkpointStep =
      checkpoint ? std::max<std::int64_t>(1, external::checkpointStep(*checkpoint)) : 0;
  if (status.finishedWell) {
    run.status = RunSummary::Status::Finished;
  } else if (checkpoint) {
    run.status = RunSummary::Status::Resumable;
  } else {
    run.status = RunSummary::Status::NoCheckpoint;
  }
}

}  // namespace

std::optional<RunSummary> readRunSummary(const QString& dir) {
  if (!QFileInfo::exists(QDir(dir).filePath(QString::fromLatin1(runs::kRunConfigFile)))) {
    return std::nullopt;
  }
  RunSummary run;
  run.dir = QDir(dir).absolutePath();
  run.name = QFileInfo(run.dir).fileName();
  if (external::isSupervisedRunFolder(widgets::toPath(run.dir))) {
    try {
      readSupervisedSummary(run);
    } catch (const std::exception& e) {
      run.status = RunSummary::Status::Unreadable;
      run.problem = QString::fromUtf8(e.what());
    }
    return run;
  }
  try {
    const runs::RunFolder folder = runs::RunFolder::open(widgets::toPath(dir));
    const nlohmann::json& config = folder.config();
    const nlohmann::json training = config.value("training", nlohmann::json::object());
    run.totalSteps = training.value("max_steps", std::int64_t{0});
    run.profile = QString::fromStdString(training.value("profile", std::string()));
    run.device = QString::fromStdString(training.value("device", std::string()));
    run.created = QString::fromStdString(config.value("created", std::string()));
    readMetrics(run, folder.dir());
    const std::vector<std::int64_t> checkpoints = folder.checkpointSteps();
    run.checkpointStep = checkpoints.empty() ? 0 : checkpoints.back();
    const bool done = run.totalSteps == 0 || run.steps >= run.totalSteps;
    if (std::filesystem::is_directory(folder.finalAdapterDir()) && done) {
      run.status = RunSummary::Status::Finished;
    } else if (run.checkpointStep > 0) {
      run.status = RunSummary::Status::Resumable;
    } else {
      run.status = RunSummary::Status::NoCheckpoint;
    }
  } catch (const std::exception& e) {
    run.status = RunSummary::Status::Unreadable;
    run.problem = QString::fromUtf8(e.what());
  }
  return run;
}

std::vector<RunSummary> listRuns(const QString& folder) {
  std::vector<RunSummary> runs;
  const QFileInfoList entries =
      QDir(folder).entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name);
  for (const QFileInfo& entry : entries) {
    if (std::optional<RunSummary> run = readRunSummary(entry.absoluteFilePath())) {
      runs.push_back(std::move(*run));
    }
  }
  std::stable_sort(runs.begin(), runs.end(),
                   [](const RunSummary& a, const RunSummary& b) { return a.created > b.created; });
  return runs;
}

std::vector<engine::TimedEvent> metricsAsEvents(const QString& runDir) {
  const std::filesystem::path file = widgets::toPath(runDir) / runs::kMetricsFile;
  if (!std::filesystem::exists(file)) {
    throw std::runtime_error(common::pathText(file) +
                             ": no such file (the run has no completed step)");
  }
  std::vector<engine::TimedEvent> events;
  // The run's time, as the live dashboard's axis counts it: each step's cycle (the wall-clock
  // time since the step before completed, an evaluation between them included; pauses not).
  // Lines written before cycles were recorded have the step's own time and the evaluation's.
  double seconds = 0;
  std::optional<runs::EvalRecord> best;
  for (const runs::StepRecord& m : runs::readStepRecords(file)) {
    const bool cycled = m.cycleSeconds > 0.0;
    seconds += cycled ? m.cycleSeconds : m.seconds;
    events.push_back({std::llround(seconds * 1000.0), m});  // as it was announced
    if (m.eval) {  // the held-out loss beside it, as the engine announced it
      const double evaluated = seconds + m.eval->seconds;
      if (!cycled) {
        seconds = evaluated;  // with cycles, the next step's holds the evaluation's time
      }
      if (!best || m.eval->loss < best->loss)
        best = m.eval;
      events.push_back({std::llround(evaluated * 1000.0), engine::evalEvent(*m.eval, *best)});
    }
  }
  return events;
}

std::vector<engine::TimedEvent> readRecording(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    throw std::runtime_error(path.toStdString() + ": " + file.errorString().toStdString());
  }
  std::vector<engine::TimedEvent> events;
  int lineNumber = 0;
  while (!file.atEnd()) {
    const QByteArray line = file.readLine().trimmed();
    ++lineNumber;
    if (line.isEmpty()) {
      continue;
    }
    try {
      events.push_back(engine::decodeEvent(std::string_view(line.constData(), line.size())));
    } catch (const std::exception& e) {
      throw std::runtime_error(path.toStdString() + ":" + std::to_string(lineNumber) + ": " +
                               e.what());
    }
  }
  if (events.empty()) {
    throw std::runtime_error(path.toStdString() + ": no events (an empty recording)");
  }
  return events;
}

RunsPage::RunsPage(QWidget* parent) : QWidget(parent) {
  heading_ = new QLabel(this);
  heading_->setWordWrap(true);
  table_ = new QTreeWidget(this);
  table_->setObjectName(QStringLiteral("runsTable"));
  table_->setRootIsDecorated(false);
  table_->setUniformRowHeights(true);
  table_->setAlternatingRowColors(true);
  table_->setHeaderLabels({tr("Run"), tr("Status"), tr("Steps"), tr("Last loss"),
                           tr("Best eval loss"), tr("Profile"), tr("Device"), tr("Created")});
  table_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  connect(table_, &QTreeWidget::itemSelectionChanged, this, &RunsPage::updateButtons);
  connect(table_, &QTreeWidget::itemDoubleClicked, this, [this] {
    if (const RunSummary* run = selectedRun()) {
      emit openRequested(*run);
    }
  });

  open_ = new QPushButton(tr("&Show charts"), this);
  open_->setToolTip(tr("Add the run's curves (from its metrics.jsonl) to the dashboard"));
  connect(open_, &QPushButton::clicked, this, [this] {
    if (const RunSummary* run = selectedRun()) {
      emit openRequested(*run);
    }
  });
  resume_ = new QPushButton(tr("&Resume"), this);
  resume_->setToolTip(
      tr("Continue the run from its newest checkpoint (lorascope-train train --resume)"));
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (const RunSummary* run = selectedRun()) {
      emit resumeRequested(*run);
    }
  });
  auto* refresh = new QPushButton(tr("Re&fresh"), this);
  connect(refresh, &QPushButton::clicked, this, &RunsPage::refresh);
  auto* recording = new QPushButton(tr("Open &recording…"), this);
  recording->setToolTip(
      tr("Replay an engine event recording (JSON lines, as scripts/record_gpu_run.py writes "
         "them) on the dashboard and the memory map"));
  connect(recording, &QPushButton::clicked, this, &RunsPage::openRecordingWithDialog);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(open_);
  buttons->addWidget(resume_);
  buttons->addStretch();
  buttons->addWidget(recording);
  buttons->addWidget(refresh);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(heading_);
  layout->addWidget(table_, 1);
  layout->addLayout(buttons);
  updateButtons();
}

void RunsPage::setFolder(const QString& folder) {
  if (folder == folder_) {
    return;
  }
  folder_ = folder;
  refresh();
}

void RunsPage::refresh() {
  const QString selected = selectedRun() != nullptr ? selectedRun()->dir : QString();
  runs_ = listRuns(folder_);
  heading_->setText(runs_.empty()
                        ? tr("No runs in %1 yet (the setup page's output folder).")
                              .arg(QDir::toNativeSeparators(folder_))
                        : tr("%1 in %2 (the setup page's output folder).")
                              .arg(widgets::counted(static_cast<std::int64_t>(runs_.size()),
                                                    tr("run"), tr("runs")),
                                   QDir::toNativeSeparators(folder_)));
  table_->clear();
  for (const RunSummary& run : runs_) {
    auto* item = new QTreeWidgetItem(table_);
    item->setData(0, kDirRole, run.dir);
    item->setText(Name, run.name);
    item->setText(Status, statusText(run));
    const QString steps = run.totalSteps > 0 ? tr("%1 of %2").arg(run.steps).arg(run.totalSteps)
                                             : QString::number(run.steps);
    item->setText(Steps, run.lastEpoch
                             ? tr("%1 · %2").arg(steps, widgets::epochText(*run.lastEpoch))
                             : steps);
    item->setText(LastLoss, run.lastLoss ? QString::number(*run.lastLoss, 'f', 4) : tr("—"));
    item->setText(BestEvalLoss,
                  run.bestEvalLoss
                      ? tr("%1 (step %2)").arg(*run.bestEvalLoss, 0, 'f', 4).arg(run.bestEvalStep)
                      : tr("—"));
    item->setText(Profile, run.profile.isEmpty() ? tr("not recorded") : run.profile);
    item->setText(Device, run.device);
    item->setText(Created, createdText(run.created));
    item->setToolTip(Created,
                     tr("%1 (config.json, UTC: %2)").arg(createdText(run.created), run.created));
    item->setToolTip(Name, run.supervised
                               ? tr("%1\nsupervised command: %2")
                                     .arg(QDir::toNativeSeparators(run.dir), run.commandLine)
                               : QDir::toNativeSeparators(run.dir));
    item->setToolTip(Status, statusText(run));
  }
  if (!selected.isEmpty()) {
    selectRun(selected);
  }
  updateButtons();
}

const RunSummary* RunsPage::selectedRun() const {
  const QList<QTreeWidgetItem*> items = table_->selectedItems();
  if (items.isEmpty()) {
    return nullptr;
  }
  const QString dir = items.front()->data(0, kDirRole).toString();
  const auto it = std::find_if(runs_.begin(), runs_.end(),
                               [&](const RunSummary& run) { return run.dir == dir; });
  return it == runs_.end() ? nullptr : &*it;
}

void RunsPage::selectRun(const QString& dir) {
  const QString wanted = QDir(dir).absolutePath();
  for (int i = 0; i < table_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* item = table_->topLevelItem(i);
    if (item->data(0, kDirRole).toString() == wanted) {
      table_->setCurrentItem(item);
      return;
    }
  }
}

void RunsPage::setCanResume(bool canResume) {
  canResume_ = canResume;
  updateButtons();
}

void RunsPage::updateButtons() {
  const RunSummary* run = selectedRun();
  open_->setEnabled(run != nullptr && run->steps > 0);
  const bool resumable = run != nullptr && run->status == RunSummary::Status::Resumable;
  resume_->setEnabled(canResume_ && resumable);
  resume_->setToolTip(run == nullptr ? tr("Choose a run to resume")
                      : !resumable   ? tr("This run cannot be resumed: %1").arg(statusText(*run))
                      : !canResume_  ? tr("Another run is in progress (or no engine is connected)")
                                     : tr("Continue %1 from its checkpoint of step %2")
                                          .arg(run->name)
                                          .arg(run->checkpointStep));
}

void RunsPage::openRecordingWithDialog() {
  const QString file =
      QFileDialog::getOpenFileName(this, tr("Open an event recording"), folder_,
                                   tr("Event recordings (*.jsonl);;All files (*)"));
  if (!file.isEmpty()) {
    emit recordingChosen(file);
  }
}

}  // namespace lorascope::app
