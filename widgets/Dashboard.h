// widgets/Dashboard.h — the live dashboard: loss and its moving average with the learning rate
// and the held-out eval loss (and the latest step's epoch, when the run's trainer counts one),
// tokens/s, VRAM (driver used, our reserved, our allocated, held outside this run, host RAM),
// the allocator's fragmentation as it matters (largest free block against the step's largest
// request, inactive-split bytes, the largest free block at the step's peak), queue depth per stream
// — all on one time axis, with a marker on every chart where a toggle, profile switch, checkpoint
// or incident happened.
//
// handleEvent() only files samples (O(1), no drawing); the first event of a burst schedules one
// refresh 100 ms later (10 Hz coalescing), which redraws each changed series with one replace().
// Until the engine reports anything the page says so instead of drawing empty or zero curves.
//
// The x axis counts optimizer steps (the default; readings between two steps fall between them,
// by time) or seconds since the run started. Each run's events are kept: a new run starts a new
// entry in the run selector, and choosing an earlier run (or the other axis) redraws its curves.
// Runs opened from the runs page or a recording join the selector beside them. A resumed run
// continues its own entry (resumeRun): one curve from step 1, the resume one marker at its step.
// Engine events outside any run (its hello, log lines) make no entry of their own; the selector
// stays in view whichever entry is shown. A toggle marker marks a change: a toggle reported again
// with the value it had, or reported as the state a run (or a resume) starts with, is not one;
// what the start state changed (a profile's micro-batch) is marked once, at its last value.
//
// A run on several GPUs (engine/Supervisor.h: every rank's memory and queue readings name their
// card) gets a card selector beside the run selector: the memory, allocator and queue charts show
// the chosen card's readings (the first card heard from until one is chosen); loss, throughput
// and markers are the run's.
//
// Incidents (widgets/DashboardIncidents.cpp): each error, incident and refusal of the run shown is
// written out in the banner above the charts (widgets/IncidentBanner.h) besides its marker; a hang
// is drawn as a band from the last completed step to the report, with the step that hung and how
// long it went without progress.
#pragma once

#include <QStackedWidget>
#include <QStringList>
#include <QTimer>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "widgets/ChartMarker.h"
#include "widgets/EngineTypes.h"
#include "widgets/TimeChart.h"

class QComboBox;
class QGridLayout;
class QLabel;

namespace lorascope::widgets {

class IncidentBanner;

class Dashboard : public QStackedWidget {
  Q_OBJECT

 public:
  static constexpr int kRefreshIntervalMs = 100;  // 10 Hz: smooth, and cheap on the GUI thread
  static constexpr int kMovingAverageSteps = 20;
  static constexpr int kMaxStreams = 8;  // queue-depth series; more streams are listed, not drawn

  enum class XAxis { Step, Time };

  explicit Dashboard(QWidget* parent = nullptr);

  XAxis xAxis() const { return xAxis_; }
  void setXAxis(XAxis axis);
  // The runs seen since the app started, oldest first; the selector shows one of them.
  int runCount() const { return static_cast<int>(runs_.size()); }
  int shownRun() const { return shownRun_; }
  QString runName(int run) const;
  void showRun(int run);
  // Adds a finished run's events (a run folder's steps, a recording) to the selector and shows
  // it; the live run goes on filling its own entry.
  void addRun(const QString& name, std::vector<engine::TimedEvent> events);
  // The run in `runDir` goes on from its checkpoint at `fromStep`: its entry (the one started here
  // with that folder, else a new one holding `earlier`, its steps from metrics.jsonl) becomes the
  // live run again, cut back to `fromStep`, with one marker where it resumes. The events the
  // engine sends next continue its curves, on both axes.
  void resumeRun(const QString& runDir, const QString& name,
                 std::vector<engine::TimedEvent> earlier, std::int64_t fromStep);
  // The run the engine's events go to (-1: none yet), and the events kept for a run.
  int liveRun() const { return liveRun_; }
  const std::vector<engine::TimedEvent>& runEvents(int run) const;
  QComboBox* runSelector() const { return runSelector_; }
  QComboBox* xAxisSelector() const { return xAxisSelector_; }
  // The cards of the shown run's readings (hidden for a run on one device), and the one drawn.
  QComboBox* cardSelector() const { return cardSelector_; }
  std::optional<int> shownCard() const { return shownCard_; }
  TimeChart* lossChart() const { return loss_; }
  TimeChart* throughputChart() const { return throughput_; }
  TimeChart* memoryChart() const { return memory_; }
  TimeChart* allocatorChart() const { return allocator_; }
  TimeChart* queueChart() const { return queue_; }
  QList<TimeChart*> charts() const { return {loss_, throughput_, memory_, allocator_, queue_}; }
  const std::vector<ChartMarker>& markers() const { return markers_; }
  bool showsCharts() const { return currentIndex() == 1; }
  // The run computes on the CPU: the queue panel says that queue depth is a GPU reading.
  bool showsQueueNote() const;
  QLabel* queueNote() const { return queueNote_; }
  QLabel* allocatorNote() const { return allocatorNote_; }
  QLabel* hostRamNote() const { return hostRamNote_; }  // under the memory chart, on a CPU run
  IncidentBanner* incidentBanner() const { return incidents_; }

  // Series indices of the charts above.
  enum LossSeries { Loss, LossAverage, LearningRate, EvalLoss };
  enum ThroughputSeries { TokensPerS, GradNorm };
  enum MemorySeries { DriverUsed, Reserved, Allocated, HeldOutside, HostRss };
  // The allocator chart: will the next step's allocations fit? (GiB)
  enum AllocatorSeries { LargestFree, LargestRequest, InactiveSplit, LargestFreeAtPeak };

 public slots:
  void handleEvent(const lorascope::engine::TimedEvent& event);
  // Commands the user sent: a new run starts an entry of its own in the run selector.
  void noteCommand(const lorascope::engine::Command& command);
  void refresh();  // the tick; public so tests and the bench drive it without waiting
  // "epoch 0.333" at the end of the loss chart's legend row: the shown run's epochs done after its
  // latest step, as its trainer counts them (runs::StepRecord::epoch); "" when its steps carry
  // none.
  QString epochText() const;
  void clear();

 signals:
  // Another entry is shown (the user chose it, a run started or resumed, a run was opened).
  void shownRunChanged(int run);

 private:
  // Where a run was resumed: before events[at], at `timeMs` (the run's clock), after `step`.
  struct ResumeMark {
    std::size_t at = 0;
    std::int64_t timeMs = 0;
    std::int64_t step = 0;
  };
  struct Run {
    QString name;
    QString folder;                          // the run folder ("" for recordings, implicit runs)
    std::vector<engine::TimedEvent> events;  // what the charts are drawn from (no snapshots)
    std::vector<ResumeMark> resumes;
    // A resumed run's events arrive on a new clock: added to their times so that they follow the
    // earlier ones. Unset until the first event after the resume.
    std::optional<std::int64_t> timeOffsetMs;
  };
  void plot(const engine::TimedEvent& event);
  double xOf(const engine::TimedEvent& event);
  void redraw();
  void clearCharts();
  void beginRun(const QString& name, const QString& folder);
  void showPage(int index);  // the empty state or the charts; the header goes with it
  void plotToggle(const engine::TimedEvent& at, const engine::ToggleAppliedEvent& toggle);
  void plotResume(const ResumeMark& mark);
  void markStartChanges();
  void onStep(double x, const engine::StepEvent& step);
  // Whether a reading is drawn: one of no card (a run on one device) or of the shown card. Lists
  // its card in the card selector.
  bool showsReadingOf(const engine::Event& event);
  void onMemory(double x, const engine::MemoryEvent& memory);
  void onQueue(double x, const engine::QueueEvent& queue);
  void setRunOnCpu(bool onCpu);
  void setTimeAxisTitles(const QString& title);
  void addMarker(const engine::TimedEvent& at, MarkerKind kind, const QString& text);
  // An error, incident or refusal: its banner entry and marker (widgets/DashboardIncidents.cpp).
  void noteIncident(const engine::TimedEvent& timed);
  void showCharts();
  void scheduleRefresh();

  QLabel* emptyState_;
  QWidget* header_;  // run selector, x axis, marker legend: on whichever page is shown
  TimeChart* loss_;
  TimeChart* throughput_;
  TimeChart* memory_;
  TimeChart* allocator_;
  TimeChart* queue_;
  QLabel* queueNote_;  // in the queue chart's place while the run is on the CPU
  QGridLayout* chartGrid_;
  QLabel* allocatorNote_;
  QLabel* hostRamNote_;
  IncidentBanner* incidents_;
  std::optional<engine::QueueEvent> lastQueue_;  // what was queued when a hang is reported
  // The epoch of the shown run's latest step, when its trainer counts one: the loss chart's note.
  std::optional<double> lastEpoch_;
  std::vector<ChartMarker> markers_;
  std::map<std::string, int> streamSeries_;  // stream name → queue_ series index
  QStringList undrawnStreams_;
  QLabel* undrawnStreamsLabel_;
  // The toggles' values in the run being drawn, and whether it (or its latest resume) has not
  // reported a step yet: toggles reported then are its start state, not changes.
  std::map<engine::Toggle, nlohmann::json> toggleValues_;
  bool beforeFirstStep_ = true;
  std::map<engine::Toggle, nlohmann::json> startValues_;  // where the start state began
  std::map<engine::Toggle, ChartMarker> startChanges_;    // its last change of each toggle
  std::optional<engine::TimedEvent> engineHello_;         // the engine's facts, for the next run
  std::array<double, kMovingAverageSteps> recentLoss_{};
  int recentLossCount_ = 0;
  std::int64_t lastTimeMs_ = 0;
  XAxis xAxis_ = XAxis::Step;
  std::vector<Run> runs_;
  int shownRun_ = -1;
  int liveRun_ = -1;  // the run live events go to (-1: none started yet)
  // The x mapping of the run being drawn: when it started, its last step and that step's time.
  std::optional<std::int64_t> runStartMs_;
  std::int64_t lastStep_ = 0;
  std::int64_t lastStepMs_ = 0;
  std::int64_t stepDurationMs_ = 0;
  double lastX_ = 0.0;
  QComboBox* runSelector_;
  QComboBox* xAxisSelector_;
  QLabel* cardLabel_;
  QComboBox* cardSelector_;
  std::optional<int> shownCard_;  // none: the first card heard from is chosen
  QTimer refreshTimer_;
};

}  // namespace lorascope::widgets
