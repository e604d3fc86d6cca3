// gui/RunsPage.h — the runs in the runs folder (the setup page's output folder; by default
// ~/.local/share/LoRAscope/runs, gui/AppPaths.h), one row each: name, status (finished, stopped
// at a checkpoint, or no checkpoint yet), steps done of the total (and the last step's epoch,
// when its trainer counts one), the last loss, the profile it started with, the device and when it
// was created (local time). A supervised command's run (external/SupervisedRun.h) is listed too,
// its status with its incidents; resuming it runs the command again with its resume argument. A run
// can be opened (its curves, from metrics.jsonl, join the dashboard's run selector) or resumed from
// its newest checkpoint; an event recording (the engine's JSON lines, as scripts/record_gpu_run.py
// writes them) opens the same way. Everything is read from the run folders themselves
// (train/RunDirectory.h): the page keeps no list of its own.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

#include "widgets/EngineTypes.h"

class QLabel;
class QPushButton;
class QTreeWidget;

namespace lorascope::app {

// What a run folder says about its run.
struct RunSummary {
  enum class Status { Finished, Resumable, NoCheckpoint, Unreadable };
  QString dir;
  QString name;  // the folder's name
  Status status = Status::NoCheckpoint;
  QString problem;                  // Unreadable: why (names the file)
  std::int64_t steps = 0;           // the last step of metrics.jsonl
  std::int64_t totalSteps = 0;      // config.json's max_steps (0: by epochs)
  std::int64_t checkpointStep = 0;  // the newest complete checkpoint (0: none)
  std::optional<double> lastLoss;
  std::optional<double> lastEpoch;  // the last step's epoch, when its trainer counts one
  // The held-out loss (--eval-data / --eval-split): the lowest of the run's evaluations and its
  // step; unset when the run evaluated nothing.
  std::optional<double> bestEvalLoss;
  std::int64_t bestEvalStep = 0;
  QString profile;  // config.json's training.profile ("" in runs from before it was recorded)
  // A supervised command's run (external/SupervisedRun.h): its command line, the incidents its
  // events.jsonl records, and how its last attempt ended ("" while none has).
  bool supervised = false;
  QString commandLine;
  int incidents = 0;
  QString lastState;
  QString device;   // where the last step ran, else config.json's device
  QString created;  // config.json's "created"
};
QString statusText(const RunSummary& run);
// config.json's "created" (ISO 8601, UTC) in this machine's local time, "2026-11-28 23:44".
QString createdText(const QString& created);

// One run folder; a folder without config.json is not a run (nullopt).
std::optional<RunSummary> readRunSummary(const QString& dir);
// The runs in `folder`, newest first.
std::vector<RunSummary> listRuns(const QString& folder);

// A run's metrics.jsonl as the engine's step events (times from each step's seconds), and its
// evaluations as eval events, for the dashboard. Throws std::runtime_error naming the file and the
// problem.
std::vector<engine::TimedEvent> metricsAsEvents(const QString& runDir);
// An event recording (one protocol event a line). Throws std::runtime_error naming the file and
// the line.
std::vector<engine::TimedEvent> readRecording(const QString& file);

class RunsPage : public QWidget {
  Q_OBJECT

 public:
  explicit RunsPage(QWidget* parent = nullptr);

  QString folder() const { return folder_; }
  const std::vector<RunSummary>& runs() const { return runs_; }
  QTreeWidget* table() const { return table_; }
  QPushButton* openButton() const { return open_; }
  QPushButton* resumeButton() const { return resume_; }
  // The selected run (nullptr when none is).
  const RunSummary* selectedRun() const;
  void selectRun(const QString& dir);
  // Whether a run can be resumed now (no other run in progress); the resume button follows it.
  void setCanResume(bool canResume);

 public slots:
  void setFolder(const QString& folder);
  void refresh();
  void openRecordingWithDialog();

 signals:
  void openRequested(const lorascope::app::RunSummary& run);
  void resumeRequested(const lorascope::app::RunSummary& run);
  void recordingChosen(const QString& file);

 private:
  void updateButtons();

  QString folder_;
  std::vector<RunSummary> runs_;
  bool canResume_ = false;
  QLabel* heading_;
  QTreeWidget* table_;
  QPushButton* open_;
  QPushButton* resume_;
};

}  // namespace lorascope::app
