// widgets/Dashboard.cpp — event routing into the five charts, markers, the coalesced tick.
#include "widgets/Dashboard.h"

#include <QComboBox>
#include <QDir>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "widgets/DisplayText.h"
#include "widgets/IncidentBanner.h"

namespace lorascope::widgets {
namespace {

using namespace lorascope::engine;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TimeChart::ValueFormatter fixed(int decimals, const QString& unit = {}) {
  return [decimals, unit](double v) {
    return QString::number(v, 'f', decimals) +
           (unit.isEmpty() ? QString() : QStringLiteral(" ") + unit);
  };
}

// Colours that stay apart on light and dark palettes (matplotlib's tab10).
const QColor kBlue(0x1f, 0x77, 0xb4);
const QColor kOrange(0xff, 0x7f, 0x0e);
const QColor kGreen(0x2c, 0xa0, 0x2c);
const QColor kRed(0xd6, 0x27, 0x28);
const QColor kPurple(0x94, 0x67, 0xbd);
const QColor kBrown(0x8c, 0x56, 0x4b);
const QColor kPink(0xe3, 0x77, 0xc2);
const QColor kGray(0x7f, 0x7f, 0x7f);
const QColor kOlive(0xbc, 0xbd, 0x22);
const QColor kCyan(0x17, 0xbe, 0xcf);
const std::array<QColor, 8> kStreamColors = {kBlue,   kOrange, kGreen, kRed,
                                             kPurple, kBrown,  kPink,  kCyan};

// A run folder as one string however it was written (relative, with "..", a trailing slash).
QString folderKey(const QString& folder) {
  return folder.isEmpty() ? folder : QDir::cleanPath(QDir(folder).absolutePath());
}

}  // namespace

Dashboard::Dashboard(QWidget* parent) : QStackedWidget(parent) {
  auto* emptyPage = new QWidget(this);
  emptyState_ = new QLabel(
      tr("<h3>No run is reporting</h3><p>The charts fill in when an engine reports its first step "
         "or memory reading.</p>"),
      emptyPage);
  emptyState_->setAlignment(Qt::AlignCenter);
  emptyState_->setObjectName(QStringLiteral("dashboardEmptyState"));
  auto* emptyLayout = new QVBoxLayout(emptyPage);
  emptyLayout->setContentsMargins(0, 0, 0, 0);
  emptyLayout->addWidget(emptyState_, 1);
  addWidget(emptyPage);

  auto* page = new QWidget(this);
  loss_ =
      new TimeChart(tr("Loss and learning rate"), tr("loss"), tr("learning rate"), &markers_, page);
  loss_->addSeries(tr("loss"), AxisSide::Left, kBlue, fixed(4));
  loss_->addSeries(tr("average (%1 steps)").arg(kMovingAverageSteps), AxisSide::Left, kOrange,
                   fixed(4));
  loss_->addSeries(tr("learning rate"), AxisSide::Right, kGray,
                   [](double v) { return QString::number(v, 'e', 2); });
  loss_->addSeries(tr("eval loss (held out)"), AxisSide::Left, kRed, fixed(4));
  throughput_ = new TimeChart(tr("Throughput and gradient norm"), tr("tokens/s"), tr("grad norm"),
                              &markers_, page);
  // The run's speed: real tokens over the step cycle (StepEvent::tokensPerS), not the step's
  // compute alone (StepEvent::computeTokensPerS).
  throughput_->addSeries(tr("real tokens/s over the step cycle"), AxisSide::Left, kGreen, fixed(0));
  throughput_->addSeries(tr("grad norm"), AxisSide::Right, kGray, fixed(3));
  memory_ = new TimeChart(tr("Memory"), tr("GiB"), {}, &markers_, page);
  memory_->addSeries(tr("driver used"), AxisSide::Left, kRed, fixed(2, tr("GiB")));
  memory_->addSeries(tr("our reserved"), AxisSide::Left, kPurple, fixed(2, tr("GiB")));
  memory_->addSeries(tr("our allocated"), AxisSide::Left, kBlue, fixed(2, tr("GiB")));
  memory_->addSeries(tr("held outside this run"), AxisSide::Left, kBrown, fixed(2, tr("GiB")));
  memory_->addSeries(tr("host RAM (ours)"), AxisSide::Left, kOlive, fixed(2, tr("GiB")));
  allocator_ =
      new TimeChart(tr("Allocator: does the next step fit?"), tr("GiB"), {}, &markers_, page);
  allocator_->addSeries(tr("largest free block"), AxisSide::Left, kCyan, fixed(2, tr("GiB")));
  allocator_->addSeries(tr("largest request (step)"), AxisSide::Left, kOrange, fixed(2, tr("GiB")));
  allocator_->addSeries(tr("inactive split"), AxisSide::Left, kPink, fixed(2, tr("GiB")));
  allocator_->addSeries(tr("largest free at peak"), AxisSide::Left, kBlue, fixed(2, tr("GiB")));
  allocatorNote_ = new QLabel(
      tr("Fragmentation hurts when the largest free block is smaller than the largest request; "
         "cached free memory that the next step reuses is not lost."),
      page);
  allocatorNote_->setObjectName(QStringLiteral("allocatorNote"));
  allocatorNote_->setWordWrap(true);
  allocatorNote_->setToolTip(
      tr("Inactive split: free pieces inside partly used segments, which only requests that fit "
         "them can use. At peak: read when the step's allocations were highest."));
  // Measured (lorascope-train engine under heaptrack, the demo): the host RAM of a CPU run climbs
  // with each new batch length, not with the model: compute/cpu/host_blocks.h keeps freed tensor
  // blocks by size for reuse, up to 4 GiB.
  hostRamNote_ = new QLabel(tr("Host RAM includes freed tensor blocks kept for reuse (up to 4 "
                               "GiB): a cache, not a leak."),
                            page);
  hostRamNote_->setToolTip(
      tr("Host RAM (ours) is the run's resident memory: the model, the data, the step's tensors "
         "and the freed tensor blocks the CPU backend keeps by size to hand out again. A batch of "
         "a length not seen before needs blocks of new sizes, so the line climbs over the first "
         "steps and levels off once the lengths repeat."));
  hostRamNote_->setObjectName(QStringLiteral("hostRamNote"));
  hostRamNote_->setWordWrap(true);
  hostRamNote_->setVisible(false);  // a CPU run's
  auto* memoryPanel = new QWidget(page);
  auto* memoryLayout = new QVBoxLayout(memoryPanel);
  memoryLayout->setContentsMargins(0, 0, 0, 0);
  memoryLayout->addWidget(memory_, 1);
  memoryLayout->addWidget(hostRamNote_);
  auto* allocatorPanel = new QWidget(page);
  auto* allocatorLayout = new QVBoxLayout(allocatorPanel);
  allocatorLayout->setContentsMargins(0, 0, 0, 0);
  allocatorLayout->addWidget(allocator_, 1);
  allocatorLayout->addWidget(allocatorNote_);
  queue_ = new TimeChart(tr("Queue depth per stream (most in flight per reading)"), tr("in flight"),
                         {}, &markers_, page);
  queue_->setToolTip(
      tr("Each point is the most kernel launches a stream held at once since the previous "
         "reading: the engine checks every 5 ms and reports 2.5 times a second. Near 0 with "
         "blocking launches or serialize; near 0 also while the host, not the GPU, is busy."));
  queueNote_ = new QLabel(
      tr("<b>Queue depth per stream</b><p>Queue depth is a GPU reading: it counts the kernel "
         "launches a GPU stream has accepted and not yet finished. This run computes on the CPU, "
         "where each op runs to its end when it is called, so there is no queue to show.</p>"),
      page);
  queueNote_->setObjectName(QStringLiteral("queueDepthNote"));
  queueNote_->setWordWrap(true);
  queueNote_->setAlignment(Qt::AlignCenter);
  queueNote_->setVisible(false);  // a CPU run's, in the queue chart's place
  undrawnStreamsLabel_ = new QLabel(page);
  undrawnStreamsLabel_->setVisible(false);
  incidents_ = new IncidentBanner(page);

  auto* grid = new QGridLayout;
  grid->addWidget(loss_, 0, 0);
  grid->addWidget(throughput_, 0, 1);
  grid->addWidget(memoryPanel, 1, 0);
  grid->addWidget(allocatorPanel, 1, 1);
  // One cell, one of the two shown: the note (a CPU run) keeps only the height its text needs.
  grid->addWidget(queue_, 2, 0, 1, 2);
  grid->addWidget(queueNote_, 2, 0, 1, 2);
  chartGrid_ = grid;
  for (int row = 0; row < 3; ++row) {
    chartGrid_->setRowStretch(row, 1);  // the queue row's is 0 while the note fills it
  }
  runSelector_ = new QComboBox(page);
  runSelector_->setObjectName(QStringLiteral("runSelector"));
  runSelector_->setToolTip(tr("The runs since LoRAscope started: choose one to see its curves"));
  runSelector_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(runSelector_, &QComboBox::activated, this, [this](int index) { showRun(index); });
  xAxisSelector_ = new QComboBox(page);
  xAxisSelector_->setObjectName(QStringLiteral("xAxisSelector"));
  xAxisSelector_->addItem(tr("x: step"));
  xAxisSelector_->addItem(tr("x: time since start"));
  xAxisSelector_->setToolTip(
      tr("Draw the charts against optimizer steps or seconds since the "
         "run started"));
  connect(xAxisSelector_, &QComboBox::activated, this,
          [this](int index) { setXAxis(index == 0 ? XAxis::Step : XAxis::Time); });
  // What the dashed vertical lines mean, in their colours.
  QStringList legend;
  for (MarkerKind kind : {MarkerKind::Toggle, MarkerKind::Profile, MarkerKind::Checkpoint,
                          MarkerKind::Resume, MarkerKind::Incident}) {
    legend << QStringLiteral("<span style='color:%1'><b>&#166;</b></span>&nbsp;%2")
                  .arg(markerColor(kind).name(), markerKindName(kind).toHtmlEscaped());
  }
  auto* markerLegend = new QLabel(tr("Markers: %1").arg(legend.join(QStringLiteral(" &nbsp; "))));
  markerLegend->setObjectName(QStringLiteral("markerLegend"));
  markerLegend->setTextFormat(Qt::RichText);
  markerLegend->setToolTip(
      tr("Dashed vertical lines on every chart: a setting the engine changed, a profile switch, a "
         "checkpoint saved, where a run was resumed, an incident or error. Hover over one for "
         "what happened."));
  header_ = new QWidget(page);
  auto* header = new QHBoxLayout(header_);
  header->setContentsMargins(0, 0, 0, 0);
  header->addWidget(new QLabel(tr("Run:"), header_));
  header->addWidget(runSelector_);
  header->addStretch();
  header->addWidget(markerLegend);
  header->addWidget(xAxisSelector_);
  cardLabel_ = new QLabel(tr("Card:"), header_);
  cardSelector_ = new QComboBox(header_);
  cardSelector_->setObjectName(QStringLiteral("cardSelector"));
  cardSelector_->setToolTip(
      tr("This run trains on several GPUs: the memory, fragmentation and queue charts show the "
         "chosen GPU's readings"));
  cardSelector_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(cardSelector_, &QComboBox::activated, this, [this](int index) {
    shownCard_ = cardSelector_->itemData(index).toInt();
    redraw();
  });
  header->insertWidget(2, cardLabel_);
  header->insertWidget(3, cardSelector_);
  cardLabel_->setVisible(false);  // until a reading names its card
  cardSelector_->setVisible(false);
  runSelector_->setParent(header_);
  xAxisSelector_->setParent(header_);
  header_->setVisible(false);  // nothing to choose until a run exists
  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(header_);
  layout->addWidget(incidents_);
  layout->addLayout(grid, 1);
  layout->addWidget(undrawnStreamsLabel_);
  addWidget(page);

  setTimeAxisTitles(tr("step"));

  refreshTimer_.setSingleShot(true);
  refreshTimer_.setInterval(kRefreshIntervalMs);
  connect(&refreshTimer_, &QTimer::timeout, this, &Dashboard::refresh);
}

void Dashboard::scheduleRefresh() {
  if (!refreshTimer_.isActive()) {
    refreshTimer_.start();
  }
}

void Dashboard::showCharts() {
  if (currentIndex() != 1) {
    showPage(1);
  }
}

void Dashboard::showPage(int index) {
  auto* layout = qobject_cast<QVBoxLayout*>(widget(index)->layout());
  if (header_->parentWidget() != widget(index)) {
    if (QLayout* old = header_->parentWidget()->layout()) {
      old->removeWidget(header_);
    }
    layout->insertWidget(0, header_);
  }
  header_->setVisible(!runs_.empty());
  if (index == 0) {
    emptyState_->setText(
        shownRun_ < 0
            ? tr("<h3>No run is reporting</h3><p>The charts fill in when an engine reports its "
                 "first step or memory reading.</p>")
            : tr("<h3>%1: nothing reported yet</h3><p>The charts fill in when the engine reports "
                 "its first step or memory reading. The selector above shows the other runs.</p>")
                  .arg(runs_[static_cast<std::size_t>(shownRun_)].name.toHtmlEscaped()));
  }
  setCurrentIndex(index);
}

void Dashboard::handleEvent(const TimedEvent& timed) {
  if (std::holds_alternative<SnapshotEvent>(timed.event)) {
    return;  // the memory map's; not kept with the run's curves
  }
  if (std::holds_alternative<HelloEvent>(timed.event)) {
    engineHello_ = timed;
  }
  if (liveRun_ < 0) {
    // Before any start command. The engine's hello and log lines are not a run: the hello is
    // kept for the next run (where it computes), the rest is the log's. Readings and steps are
    // a run the engine was already doing (one attached to, a replayed stream): an entry of its
    // own.
    if (std::holds_alternative<HelloEvent>(timed.event)) {
      setRunOnCpu(std::get<HelloEvent>(timed.event).flavour == "cpu");
      return;
    }
    const bool runEvent = std::holds_alternative<StepEvent>(timed.event) ||
                          std::holds_alternative<EvalEvent>(timed.event) ||
                          std::holds_alternative<MemoryEvent>(timed.event) ||
                          std::holds_alternative<QueueEvent>(timed.event) ||
                          std::holds_alternative<ToggleAppliedEvent>(timed.event) ||
                          std::holds_alternative<CheckpointEvent>(timed.event);
    if (!runEvent) {
      return;
    }
    // An entry without a redraw (nothing is drawn yet); shown unless another one is.
    runs_.push_back({tr("run %1").arg(runs_.size() + 1), {}, {}, {}, {}});
    if (engineHello_) {
      runs_.back().events.push_back(*engineHello_);
    }
    runSelector_->addItem(runs_.back().name);
    header_->setVisible(true);
    liveRun_ = static_cast<int>(runs_.size()) - 1;
    if (shownRun_ < 0) {
      shownRun_ = liveRun_;
      runSelector_->setCurrentIndex(shownRun_);
      for (const TimedEvent& e : runs_.back().events) {
        plot(e);  // the hello: where it computes, and when the run's clock starts
      }
      emit shownRunChanged(shownRun_);
    }
  }
  Run& live = runs_[static_cast<std::size_t>(liveRun_)];
  TimedEvent kept = timed;
  if (!live.resumes.empty()) {
    if (!live.timeOffsetMs) {  // the first event after a resume: it follows the earlier ones
      live.timeOffsetMs = live.resumes.back().timeMs - timed.timeMs;
    }
    kept.timeMs += *live.timeOffsetMs;
  }
  lastTimeMs_ = std::max(lastTimeMs_, kept.timeMs);
  live.events.push_back(kept);
  if (shownRun_ == liveRun_) {
    plot(kept);
    scheduleRefresh();
  }
}

// Steps: each step event at its number; readings in between by the time since the last step,
// as a fraction of the step before it. Time: seconds since the run's first event.
double Dashboard::xOf(const TimedEvent& timed) {
  if (!runStartMs_) {
    runStartMs_ = timed.timeMs;
  }
  const auto* step = std::get_if<StepEvent>(&timed.event);
  if (step != nullptr && step->step > lastStep_) {  // on both axes: a hang is told from them
    // The step's cycle where the engine measured it: steps announced together (a state mirror
    // written more slowly than a step, Note [asynchronous state mirror] in job/StepCommit.h)
    // arrive at once. Otherwise the time since the step before arrived.
    stepDurationMs_ = step->cycleSeconds > 0.0
                          ? std::llround(step->cycleSeconds * 1000.0)
                          : timed.timeMs - (lastStep_ > 0 ? lastStepMs_ : *runStartMs_);
    lastStep_ = step->step;
    lastStepMs_ = timed.timeMs;
  }
  if (xAxis_ == XAxis::Time) {
    return static_cast<double>(timed.timeMs - *runStartMs_) / 1000.0;
  }
  if (const auto* eval = std::get_if<EvalEvent>(&timed.event)) {
    return static_cast<double>(eval->step);  // beside the training loss of the same step
  }
  if (step != nullptr) {
    return static_cast<double>(step->step);
  }
  const std::int64_t since = timed.timeMs - (lastStep_ > 0 ? lastStepMs_ : *runStartMs_);
  const double fraction =
      stepDurationMs_ > 0 ? static_cast<double>(since) / static_cast<double>(stepDurationMs_) : 0;
  return static_cast<double>(lastStep_) + std::clamp(fraction, 0.0, 0.99);
}

void Dashboard::plot(const TimedEvent& timed) {
  if (!showsReadingOf(timed.event)) {
    return;  // another card's reading
  }
  const double x = xOf(timed);
  lastX_ = std::max(lastX_, x);
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, StepEvent>) {
          onStep(x, e);
        } else if constexpr (std::is_same_v<T, EvalEvent>) {
          showCharts();
          loss_->addSample(EvalLoss, x, e.loss);
        } else if constexpr (std::is_same_v<T, MemoryEvent>) {
          onMemory(x, e);
        } else if constexpr (std::is_same_v<T, QueueEvent>) {
          onQueue(x, e);
        } else if constexpr (std::is_same_v<T, HelloEvent>) {
          setRunOnCpu(e.flavour == "cpu");
        } else if constexpr (std::is_same_v<T, ToggleAppliedEvent>) {
          plotToggle(timed, e);
        } else if constexpr (std::is_same_v<T, CheckpointEvent>) {
          addMarker(timed, MarkerKind::Checkpoint,
                    tr("step %1 saved to %2").arg(e.step).arg(QString::fromStdString(e.path)));
        } else if constexpr (std::is_same_v<T, ProfileSwitchEvent>) {
          addMarker(timed, MarkerKind::Profile,
                    tr("profile “%1”: %2")
                        .arg(QString::fromStdString(e.name), QString::fromStdString(e.detail)));
        } else if constexpr (std::is_same_v<T, LadderEvent>) {
          addMarker(timed, MarkerKind::Toggle,
                    tr("after %1 the run steps down to %2 (it used %3)")
                        .arg(QString::fromStdString(e.why), rungText(e.rung), rungText(e.from)));
        } else if constexpr (std::is_same_v<T, IncidentEvent> || std::is_same_v<T, ErrorEvent> ||
                             std::is_same_v<T, ToggleRefusedEvent>) {
          noteIncident(timed);
        }
      },
      timed.event);
}

// A run (or a resume) reports its toggles' state before its first step, the profile's among them,
// some more than once: those reports are summed up at the first step, marking only a toggle that
// ends up other than it started (a profile's micro-batch over the options'; not a resumed engine's
// 8 then the profile's 1 again). After the first step every change of value is marked.
void Dashboard::plotToggle(const TimedEvent& at, const ToggleAppliedEvent& e) {
  if (e.toggle == Toggle::CpuFallback && e.value.is_boolean()) {
    setRunOnCpu(e.value.get<bool>());  // where the run computes now
  }
  const auto known = toggleValues_.find(e.toggle);
  const bool change = known == toggleValues_.end() || known->second != e.value;
  if (beforeFirstStep_ && known == toggleValues_.end()) {
    startValues_[e.toggle] = e.value;  // the first report is the state it starts from
  }
  toggleValues_[e.toggle] = e.value;
  if (!change) {
    return;
  }
  QString text =
      tr("%1 → %2 at step %3").arg(toggleName(e.toggle), toggleValueText(e.value)).arg(e.step);
  if (!e.detail.empty()) {
    text += QStringLiteral(": ") + QString::fromStdString(e.detail);  // a device move
  }
  const ChartMarker marker{at.timeMs, MarkerKind::Toggle, text, xOf(at)};
  if (beforeFirstStep_) {
    startChanges_.insert_or_assign(e.toggle, marker);
  } else {
    markers_.push_back(marker);
  }
}

// The first step after a start or a resume: the start state's net changes are marked.
void Dashboard::markStartChanges() {
  for (const auto& [toggle, marker] : startChanges_) {
    const auto from = startValues_.find(toggle);
    if (from != startValues_.end() && from->second != toggleValues_[toggle]) {
      markers_.push_back(marker);
    }
  }
  startChanges_.clear();
  beforeFirstStep_ = false;
}

void Dashboard::plotResume(const ResumeMark& mark) {
  beforeFirstStep_ = true;  // the resumed engine reports its start state again
  startValues_ = toggleValues_;
  startChanges_.clear();
  const double x =
      xAxis_ == XAxis::Step
          ? static_cast<double>(mark.step)
          : static_cast<double>(mark.timeMs - runStartMs_.value_or(mark.timeMs)) / 1000.0;
  markers_.push_back({mark.timeMs, MarkerKind::Resume,
                      tr("resumed from the checkpoint at step %1").arg(mark.step), x});
}

void Dashboard::noteCommand(const Command& command) {
  if (const auto* start = std::get_if<StartCommand>(&command)) {
    if (start->runConfig.is_object() && start->runConfig.value("resume", false)) {
      return;  // the run goes on in its own entry (resumeRun)
    }
    // A new run: the previous one stays in the selector.
    QString name = tr("run %1").arg(runs_.size() + 1);
    QString folder;
    if (start->runConfig.is_object() && start->runConfig.contains("out") &&
        start->runConfig["out"].is_string()) {
      folder = folderKey(QString::fromStdString(start->runConfig["out"].get<std::string>()));
      name = folder.section(QLatin1Char('/'), -1, -1, QString::SectionSkipEmpty);
    }
    beginRun(name, folder);
  }
}

void Dashboard::beginRun(const QString& name, const QString& folder) {
  runs_.push_back({name, folder, {}, {}, {}});
  if (engineHello_) {
    runs_.back().events.push_back(*engineHello_);  // where the engine computes
  }
  runSelector_->addItem(name);
  liveRun_ = static_cast<int>(runs_.size()) - 1;
  showRun(liveRun_);
}

void Dashboard::resumeRun(const QString& runDir, const QString& name,
                          std::vector<TimedEvent> earlier, std::int64_t fromStep) {
  int run = -1;
  const QString folder = folderKey(runDir);
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    if (!folder.isEmpty() && runs_[i].folder == folder) {
      run = static_cast<int>(i);  // the newest entry of that folder
    }
  }
  if (run < 0) {
    runs_.push_back({name, folder, {}, {}, {}});
    if (engineHello_) {
      runs_.back().events.push_back(*engineHello_);
    }
    for (TimedEvent& e : earlier) {
      if (!std::holds_alternative<SnapshotEvent>(e.event)) {
        runs_.back().events.push_back(std::move(e));
      }
    }
    runSelector_->addItem(name);
    run = static_cast<int>(runs_.size()) - 1;
  }
  Run& r = runs_[static_cast<std::size_t>(run)];
  // Steps after the checkpoint are done again: what was shown after it goes.
  const auto after = std::find_if(r.events.begin(), r.events.end(), [&](const TimedEvent& e) {
    const auto* step = std::get_if<StepEvent>(&e.event);
    return step != nullptr && step->step > fromStep;
  });
  const std::size_t keep = static_cast<std::size_t>(after - r.events.begin());
  r.events.erase(after, r.events.end());
  std::erase_if(r.resumes, [&](const ResumeMark& m) { return m.at > keep; });
  const std::int64_t lastMs = r.events.empty() ? 0 : r.events.back().timeMs;
  r.resumes.push_back({keep, lastMs + 1000, fromStep});  // a second's gap on the time axis
  r.timeOffsetMs.reset();
  liveRun_ = run;
  showRun(run);
}

const std::vector<TimedEvent>& Dashboard::runEvents(int run) const {
  return runs_.at(static_cast<std::size_t>(run)).events;
}

void Dashboard::addRun(const QString& name, std::vector<TimedEvent> events) {
  runs_.push_back({name, {}, {}, {}, {}});
  for (TimedEvent& e : events) {
    if (!std::holds_alternative<SnapshotEvent>(e.event)) {
      runs_.back().events.push_back(std::move(e));
    }
  }
  runSelector_->addItem(name);
  showRun(static_cast<int>(runs_.size()) - 1);
}

QString Dashboard::runName(int run) const {
  return runs_.at(static_cast<std::size_t>(run)).name;
}

void Dashboard::showRun(int run) {
  if (run < 0 || run >= static_cast<int>(runs_.size())) {
    return;
  }
  shownRun_ = run;
  runSelector_->setCurrentIndex(run);
  shownCard_.reset();  // another run's cards
  redraw();
  emit shownRunChanged(run);
}

void Dashboard::setXAxis(XAxis axis) {
  xAxis_ = axis;
  xAxisSelector_->setCurrentIndex(axis == XAxis::Step ? 0 : 1);
  setTimeAxisTitles(axis == XAxis::Step ? tr("step") : tr("time since the run started (s)"));
  redraw();
}

// The charts share one x axis: its title goes under the bottom row (the queue chart, or the
// charts above the CPU's queue note), not under every chart, whose plots need the height.
void Dashboard::setTimeAxisTitles(const QString& title) {
  const bool queueShown = !showsQueueNote();
  for (TimeChart* chart : charts()) {
    const bool bottom =
        chart == queue_ ? queueShown : (chart == memory_ || chart == allocator_) && !queueShown;
    chart->setTimeAxisTitle(bottom ? title : QString());
  }
}

// Draws the shown run from its kept events, on the current axis.
void Dashboard::redraw() {
  clearCharts();
  if (shownRun_ >= 0) {
    const Run& run = runs_[static_cast<std::size_t>(shownRun_)];
    auto resume = run.resumes.begin();
    for (std::size_t i = 0; i <= run.events.size(); ++i) {
      for (; resume != run.resumes.end() && resume->at == i; ++resume) {
        plotResume(*resume);
      }
      if (i < run.events.size()) {
        plot(run.events[i]);
      }
    }
  }
  refresh();
}

void Dashboard::onStep(double x, const StepEvent& step) {
  showCharts();
  if (beforeFirstStep_) {
    markStartChanges();
  }
  recentLoss_[static_cast<std::size_t>(recentLossCount_ % kMovingAverageSteps)] = step.loss;
  ++recentLossCount_;
  const int n = std::min(recentLossCount_, kMovingAverageSteps);
  const double average = std::accumulate(recentLoss_.begin(), recentLoss_.begin() + n, 0.0) / n;
  loss_->addSample(Loss, x, step.loss);
  loss_->addSample(LossAverage, x, average);
  loss_->addSample(LearningRate, x, step.learningRate);
  lastEpoch_ = step.epoch;
  // A supervised command may report neither (its output has no such number): not a zero.
  if (step.tokensPerS > 0) {
    throughput_->addSample(TokensPerS, x, step.tokensPerS);
  } else {
    throughput_->markUnavailable(TokensPerS, tr("not reported"));
  }
  if (step.gradNorm > 0 && std::isfinite(step.gradNorm)) {
    throughput_->addSample(GradNorm, x, step.gradNorm);
  } else {
    throughput_->markUnavailable(GradNorm, tr("not reported"));
  }
}

bool Dashboard::showsReadingOf(const Event& event) {
  std::optional<int> card;
  if (const auto* memory = std::get_if<MemoryEvent>(&event)) {
    card = memory->card;
  } else if (const auto* queue = std::get_if<QueueEvent>(&event)) {
    card = queue->card;
  }
  if (!card) {
    return true;
  }
  if (!shownCard_) {
    shownCard_ = *card;
  }
  if (cardSelector_->findData(*card) < 0) {
    cardSelector_->addItem(cardName(*card), *card);
    cardLabel_->setVisible(true);
    cardSelector_->setVisible(true);
    cardSelector_->setCurrentIndex(cardSelector_->findData(*shownCard_));
  }
  return *card == *shownCard_;
}

void Dashboard::onMemory(double x, const MemoryEvent& m) {
  showCharts();
  auto bytes = [&](TimeChart* chart, int series, const std::optional<std::uint64_t>& value) {
    if (value) {
      chart->addSample(series, x, static_cast<double>(*value) / kGiB);
    } else {
      chart->markUnavailable(series);
    }
  };
  bytes(memory_, DriverUsed, m.driverUsedBytes);
  bytes(memory_, Reserved, m.reservedBytes);
  bytes(memory_, Allocated, m.allocatedBytes);
  bytes(memory_, HeldOutside, m.heldOutsideBytes);
  bytes(memory_, HostRss, m.hostRssBytes);
  bytes(allocator_, LargestFree, m.largestFreeBytes);
  bytes(allocator_, LargestRequest, m.largestRequestBytes);
  bytes(allocator_, InactiveSplit, m.inactiveSplitBytes);
  bytes(allocator_, LargestFreeAtPeak, m.largestFreeAtPeakBytes);
}

bool Dashboard::showsQueueNote() const {
  return !queueNote_->isHidden();
}

void Dashboard::setRunOnCpu(bool onCpu) {
  queue_->setVisible(!onCpu);
  queueNote_->setVisible(onCpu);
  chartGrid_->setRowStretch(2, onCpu ? 0 : 1);
  hostRamNote_->setVisible(onCpu);
  setTimeAxisTitles(xAxis_ == XAxis::Step ? tr("step") : tr("time since the run started (s)"));
}

void Dashboard::onQueue(double x, const QueueEvent& queue) {
  showCharts();
  setRunOnCpu(false);  // queue readings come from a GPU
  lastQueue_ = queue;
  for (const QueueDepth& q : queue.streams) {
    auto it = streamSeries_.find(q.stream);
    if (it == streamSeries_.end()) {
      if (queue_->seriesCount() >= kMaxStreams) {
        const QString name = QString::fromStdString(q.stream);
        if (!undrawnStreams_.contains(name)) {
          undrawnStreams_ << name;
          undrawnStreamsLabel_->setText(tr("Streams not drawn (only %1 fit): %2")
                                            .arg(kMaxStreams)
                                            .arg(undrawnStreams_.join(", ")));
          undrawnStreamsLabel_->setVisible(true);
        }
        continue;
      }
      const int index = queue_->addSeries(
          QString::fromStdString(q.stream), AxisSide::Left,
          kStreamColors[static_cast<std::size_t>(queue_->seriesCount()) % kStreamColors.size()],
          fixed(0));
      it = streamSeries_.emplace(q.stream, index).first;
    }
    // The reading's peak: the most launches in flight at once since the previous reading (a
    // step can queue and drain between two readings).
    queue_->addSample(it->second, x, static_cast<double>(q.peakOrDepth()));
  }
}

void Dashboard::addMarker(const TimedEvent& at, MarkerKind kind, const QString& text) {
  markers_.push_back({at.timeMs, kind, text, xOf(at)});
}

QString Dashboard::epochText() const {
  return lastEpoch_ ? widgets::epochText(*lastEpoch_) : QString();
}

void Dashboard::refresh() {
  refreshTimer_.stop();
  loss_->setNote(epochText());
  const double endS = std::max(10.0, lastX_);
  for (TimeChart* chart : charts()) {
    chart->refresh(0.0, endS);
    chart->view()->viewport()->update();  // markers live in the foreground layer
  }
}

void Dashboard::clearCharts() {
  for (TimeChart* chart : charts()) {
    chart->clear();
  }
  markers_.clear();
  incidents_->clear();
  lastQueue_.reset();
  lastEpoch_.reset();
  toggleValues_.clear();
  startValues_.clear();
  startChanges_.clear();
  beforeFirstStep_ = true;
  recentLossCount_ = 0;
  runStartMs_.reset();
  lastStep_ = 0;
  lastStepMs_ = 0;
  stepDurationMs_ = 0;
  lastX_ = 0.0;
  cardSelector_->clear();  // the cards come back with the readings drawn
  cardLabel_->setVisible(false);
  cardSelector_->setVisible(false);
  setRunOnCpu(false);  // the run's hello or its toggles say where it computes
  showPage(0);
}

void Dashboard::clear() {
  clearCharts();
  lastTimeMs_ = 0;
  if (shownRun_ >= 0) {
    runs_[static_cast<std::size_t>(shownRun_)].events.clear();
  }
  refresh();
}

}  // namespace lorascope::widgets
