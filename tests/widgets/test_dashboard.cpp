// test_dashboard.cpp — the dashboard fed the synthetic streams: the right series, values, "n/a"
// for metrics a run does not report, markers at their times, one replace() per tick; and the
// min/max decimator that keeps every chart at a few thousand points.
#include <QtTest>

#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QValueAxis>

#include "RecordedStream.h"
#include "widgets/Dashboard.h"
#include "widgets/IncidentBanner.h"
#include "widgets/SeriesDecimator.h"

using namespace lorascope;
using namespace lorascope::engine;
using widgets::Dashboard;
using widgets::MarkerKind;

namespace {

void feed(Dashboard& d, const std::vector<TimedEvent>& events) {
  for (const TimedEvent& e : events) {
    d.handleEvent(e);
  }
  d.refresh();
}

}  // namespace

class TestDashboard : public QObject {
  Q_OBJECT

 private slots:
  void showsTheEmptyStateUntilTheFirstReport() {
    Dashboard d;
    QVERIFY(!d.showsCharts());
    d.handleEvent({0, HelloEvent{}});
    d.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    QVERIFY(!d.showsCharts());
    d.handleEvent({500, StepEvent{1, 2.0, 1e-4, 1.0, 100.0, 1, 1}});
    QVERIFY(d.showsCharts());
  }

  void gpuStreamFillsEverySeries() {
    const auto stream = testing::readStream("synthetic_gpu_run.jsonl");
    const auto steps = testing::eventsOfType<StepEvent>(stream);
    Dashboard d;
    feed(d, stream);
    QLineSeries* loss = d.lossChart()->lineSeries(Dashboard::Loss);
    QCOMPARE(loss->count(), static_cast<int>(steps.size()));  // fewer steps than buckets
    QCOMPARE(loss->at(loss->count() - 1).y(), steps.back().loss);
    QCOMPARE(d.lossChart()->lineSeries(Dashboard::LearningRate)->at(0).y(),
             steps.front().learningRate);
    QCOMPARE(d.throughputChart()->lineSeries(0)->count(), static_cast<int>(steps.size()));
    const auto memory = testing::eventsOfType<MemoryEvent>(stream);
    const double gib = 1024.0 * 1024.0 * 1024.0;
    QCOMPARE(d.memoryChart()->lineSeries(Dashboard::HeldOutside)->at(0).y(),
             static_cast<double>(*memory.front().heldOutsideBytes) / gib);
    for (int s = 0; s < d.memoryChart()->seriesCount(); ++s) {
      QVERIFY(d.memoryChart()->lineSeries(s)->count() > 0);
      QVERIFY2(!d.memoryChart()->valueText(s).contains("n/a"),
               qPrintable(d.memoryChart()->valueText(s)));
    }
    QVERIFY(d.allocatorChart()->valueText(Dashboard::LargestFree).endsWith("GiB"));
    QCOMPARE(d.queueChart()->seriesCount(), 2);
    QCOMPARE(d.queueChart()->lineSeries(0)->name(), QStringLiteral("compute"));
    QCOMPARE(d.queueChart()->lineSeries(1)->name(), QStringLiteral("copy"));
  }

  // The stream recorded on an H100 (fixtures/README.md): every step, the GPU's memory readings
  // (no "n/a" where a GPU run reports), the queue chart rather than the CPU note, and an entry of
  // its own in the run selector when it is opened beside a live run.
  void theRecordedH100RunIsDrawn() {
    const auto stream = testing::readStream("h100_gpu_run.jsonl");
    const auto steps = testing::eventsOfType<StepEvent>(stream);
    QCOMPARE(steps.size(), std::size_t{30});
    Dashboard d;
    d.handleEvent({0, StepEvent{1, 2.0, 1e-4, 1.0, 100.0, 1, 1}});  // a live run
    d.addRun(QStringLiteral("h100_gpu_run.jsonl (recording)"), stream);
    d.refresh();
    QCOMPARE(d.runCount(), 2);
    QCOMPARE(d.shownRun(), 1);
    QCOMPARE(d.lossChart()->lineSeries(Dashboard::Loss)->count(), 30);
    QVERIFY(!d.showsQueueNote());
    QCOMPARE(d.queueChart()->lineSeries(0)->name(), QStringLiteral("compute"));
    QVERIFY(d.queueChart()->lineSeries(0)->count() > 0);
    QVERIFY(d.memoryChart()->valueText(Dashboard::DriverUsed).endsWith("GiB"));
    QVERIFY(d.allocatorChart()->valueText(Dashboard::LargestRequest).endsWith("GiB"));
    // What the H100 measured, drawn: on normal steps hundreds of launches in flight at a reading's
    // peak, at most one with blocking launches (steps 11-15) or serialize (16-20); reserved
    // memory falls when the planned arena replaces the cache (step 25 on).
    const QLineSeries* queue = d.queueChart()->lineSeries(0);
    std::vector<double> normal;
    double blockingMax = -1;
    for (int i = 0; i < queue->count(); ++i) {
      const QPointF p = queue->at(i);
      if (p.x() >= 3 && p.x() < 10) {
        normal.push_back(p.y());
      } else if (p.x() >= 11.5 && p.x() < 20) {
        blockingMax = std::max(blockingMax, p.y());
      }
    }
    QVERIFY(normal.size() >= 10);
    std::sort(normal.begin(), normal.end());
    QVERIFY2(normal[normal.size() / 2] >= 50,
             qPrintable(QString::number(normal[normal.size() / 2])));
    QCOMPARE(blockingMax, 1.0);
    const QLineSeries* reserved = d.memoryChart()->lineSeries(Dashboard::Reserved);
    QVERIFY(reserved->at(reserved->count() - 1).y() <
            reserved->at(reserved->count() / 2).y() - 0.3);
    d.handleEvent({1000, StepEvent{2, 2.0, 1e-4, 1.0, 100.0, 1, 1}});  // the live run goes on
    d.refresh();
    QCOMPARE(d.lossChart()->lineSeries(Dashboard::Loss)->count(), 30);  // not into the recording
    d.showRun(0);
    QCOMPARE(d.lossChart()->lineSeries(Dashboard::Loss)->count(), 2);
  }

  void markersComeFromToggleCheckpointAndIncidentEvents() {
    const auto stream = testing::readStream("synthetic_gpu_run.jsonl");
    Dashboard d;
    feed(d, stream);
    std::map<MarkerKind, int> count;
    for (const widgets::ChartMarker& m : d.markers()) {
      ++count[m.kind];
    }
    QCOMPARE(count[MarkerKind::Toggle],
             static_cast<int>(testing::eventsOfType<ToggleAppliedEvent>(stream).size()));
    QCOMPARE(count[MarkerKind::Checkpoint],
             static_cast<int>(testing::eventsOfType<CheckpointEvent>(stream).size()));
    QCOMPARE(count[MarkerKind::Incident],
             static_cast<int>(testing::eventsOfType<IncidentEvent>(stream).size() +
                              testing::eventsOfType<ErrorEvent>(stream).size()));
    const auto toggle = std::find_if(d.markers().begin(), d.markers().end(),
                                     [](const auto& m) { return m.kind == MarkerKind::Toggle; });
    QCOMPARE(toggle->timeMs, std::int64_t{20001});
    QVERIFY2(toggle->text.contains("serialized kernels → on at step 40"), qPrintable(toggle->text));
  }

  void markersAreDrawnOnEveryChartAtTheirTime() {
    Dashboard d;
    d.setXAxis(Dashboard::XAxis::Time);
    d.resize(1000, 900);
    d.handleEvent({1000, StepEvent{1, 2.0, 1e-4, 1.0, 100.0, 1, 1}});
    d.handleEvent({5000, CheckpointEvent{"runs/x/step-1", 1}});
    d.handleEvent({10000, StepEvent{2, 1.9, 1e-4, 1.0, 100.0, 1, 1}});
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    d.refresh();
    for (widgets::TimeChart* chart : d.charts()) {
      const QImage image = chart->view()->grab().toImage();
      const auto x = chart->view()->xForTime(4.0);  // 4 s after the run's first event
      QVERIFY(x.has_value());
      const QColor want = widgets::markerColor(MarkerKind::Checkpoint);
      int hits = 0;
      for (int y = 0; y < image.height(); ++y) {
        for (int dx = -1; dx <= 1; ++dx) {
          const QColor c = image.pixelColor(static_cast<int>(std::lround(*x)) + dx, y);
          hits += c == want ? 1 : 0;
        }
      }
      QVERIFY2(hits > 10, qPrintable(QStringLiteral("%1 marker pixels").arg(hits)));
    }
  }

  void cpuStreamShowsNotAvailableInsteadOfZero() {
    Dashboard d;
    feed(d, testing::readStream("synthetic_cpu_run.jsonl"));
    for (int s : {Dashboard::DriverUsed, Dashboard::Reserved, Dashboard::Allocated,
                  Dashboard::HeldOutside}) {
      QCOMPARE(d.memoryChart()->lineSeries(s)->count(), 0);
      QVERIFY2(d.memoryChart()->valueText(s).endsWith("n/a"),
               qPrintable(d.memoryChart()->valueText(s)));
    }
    QVERIFY(d.memoryChart()->lineSeries(Dashboard::HostRss)->count() > 0);
    QVERIFY(d.allocatorChart()->valueText(Dashboard::LargestFree).endsWith("n/a"));
    QVERIFY(d.allocatorChart()->valueText(Dashboard::LargestRequest).endsWith("n/a"));
    QCOMPARE(d.queueChart()->seriesCount(), 0);
  }

  // No empty panel on a CPU run: the queue panel says what queue depth is and why there is none.
  void aCpuRunSaysQueueDepthIsAGpuReading() {
    Dashboard d;
    d.handleEvent({0, HelloEvent{kProtocolVersion, "test", "hip-nvidia", {}}});
    QVERIFY(!d.showsQueueNote());
    d.handleEvent({10, ToggleAppliedEvent{Toggle::CpuFallback, true, 0}});
    QVERIFY(d.showsQueueNote());
    QVERIFY(d.queueNote()->text().contains("Queue depth is a GPU reading"));
    QVERIFY(d.queueNote()->text().contains("computes on the CPU"));
    // The run moves to the GPU: its queue is drawn.
    d.handleEvent({20, ToggleAppliedEvent{Toggle::CpuFallback, false, 5}});
    d.handleEvent({30, QueueEvent{{{"compute", 42}}}});
    QVERIFY(!d.showsQueueNote());
    QCOMPARE(d.queueChart()->seriesCount(), 1);
    Dashboard cpuBuild;
    cpuBuild.handleEvent({0, HelloEvent{kProtocolVersion, "test", "cpu", {}}});
    QVERIFY(cpuBuild.showsQueueNote());
  }

  // The queue chart draws each reading's peak (the most in flight since the previous reading), so
  // a step that queued and drained between two readings still shows; a reading without a peak (an
  // older recording) draws its depth.
  void queueChartDrawsEachReadingsPeak() {
    Dashboard d;
    d.handleEvent({0, HelloEvent{kProtocolVersion, "test", "hip-nvidia", {}}});
    d.handleEvent({100, StepEvent{1, 2.0, 1e-4, 1.0, 100.0, 1, 1}});
    d.handleEvent({400, QueueEvent{{{"compute", 0, 712}}}});
    d.handleEvent({500, StepEvent{2, 2.0, 1e-4, 1.0, 100.0, 1, 1}});
    d.handleEvent({800, QueueEvent{{{"compute", 3}}}});
    d.refresh();
    const QLineSeries* compute = d.queueChart()->lineSeries(0);
    QCOMPARE(compute->count(), 2);
    QCOMPARE(compute->at(0).y(), 712.0);
    QCOMPARE(compute->at(1).y(), 3.0);
  }

  // Fragmentation as it matters: the largest free block against the step's largest request, the
  // inactive-split bytes, the free block at the step's peak; and one line saying how to read it.
  void allocatorChartComparesFreeBlocksWithTheLargestRequest() {
    Dashboard d;
    MemoryEvent m;
    m.allocatedBytes = 1ull << 30;
    m.reservedBytes = 6ull << 30;
    m.largestFreeBytes = 3ull << 30;
    m.fragmentation = 0.97;  // of the cache; not drawn: the step reuses it
    m.largestRequestBytes = 512ull << 20;
    m.inactiveSplitBytes = 256ull << 20;
    m.largestFreeAtPeakBytes = 768ull << 20;
    d.handleEvent({1000, m});
    d.refresh();
    const double gib = 1024.0 * 1024.0 * 1024.0;
    auto last = [&](int series) {
      QLineSeries* line = d.allocatorChart()->lineSeries(series);
      return line->at(line->count() - 1).y();
    };
    QCOMPARE(last(Dashboard::LargestFree), 3.0);
    QCOMPARE(last(Dashboard::LargestRequest), 512.0 * (1 << 20) / gib);
    QCOMPARE(last(Dashboard::InactiveSplit), 256.0 * (1 << 20) / gib);
    QCOMPARE(last(Dashboard::LargestFreeAtPeak), 768.0 * (1 << 20) / gib);
    for (int s = 0; s < d.allocatorChart()->seriesCount(); ++s) {
      QVERIFY(!d.allocatorChart()->valueText(s).contains("%"));
    }
    QVERIFY(d.allocatorNote()->text().contains(
        "Fragmentation hurts when the largest free block is smaller than the largest request"));
  }

  // A run on several GPUs: the card selector lists the cards its readings name, and the memory
  // and queue charts show one card's readings, the first card heard from until another is chosen.
  void readingsOfSeveralCardsAreDrawnOneCardAtATime() {
    Dashboard d;
    d.handleEvent({50, StepEvent{1, 3.0, 1e-4, 1.0, 10.0, 1, 1}});
    QVERIFY(!d.cardSelector()->isVisibleTo(&d));  // readings without a card: one device
    const auto reading = [](int card, double gib) {
      MemoryEvent m;
      m.allocatedBytes = static_cast<std::uint64_t>(gib * (1ull << 30));
      m.card = card;
      return m;
    };
    d.handleEvent({100, reading(1, 3.0)});
    d.handleEvent({110, reading(0, 1.0)});
    d.handleEvent({120, QueueEvent{{{"compute", 5}}, 0}});
    d.handleEvent({200, reading(1, 3.5)});
    d.refresh();
    QVERIFY(d.cardSelector()->isVisibleTo(&d));
    QCOMPARE(d.cardSelector()->count(), 2);
    QCOMPARE(d.cardSelector()->currentText(), QStringLiteral("GPU 1"));
    const auto allocated = [&] {
      std::vector<double> values;
      const QLineSeries* line = d.memoryChart()->lineSeries(Dashboard::Allocated);
      for (int i = 0; i < line->count(); ++i) {
        values.push_back(line->at(i).y());
      }
      return values;
    };
    QCOMPARE(allocated(), (std::vector<double>{3.0, 3.5}));
    QCOMPARE(d.queueChart()->seriesCount(), 0);  // GPU 0's queue reading is not GPU 1's

    emit d.cardSelector()->activated(d.cardSelector()->findData(0));
    QCOMPARE(d.shownCard(), std::optional<int>(0));
    QCOMPARE(d.cardSelector()->currentText(), QStringLiteral("GPU 0"));
    QCOMPARE(allocated(), (std::vector<double>{1.0}));
    QCOMPARE(d.queueChart()->lineSeries(0)->count(), 1);
    QCOMPARE(d.lossChart()->lineSeries(Dashboard::Loss)->count(), 1);  // the run's, unchanged
  }

  // The held-out loss sits beside the training loss of the same step, on the step axis.
  void evalLossIsDrawnAtItsStep() {
    Dashboard d;
    d.handleEvent({100, StepEvent{1, 3.0, 1e-4, 1.0, 10.0, 1, 1}});
    d.handleEvent({200, StepEvent{2, 2.5, 1e-4, 1.0, 10.0, 1, 1}});
    d.handleEvent({250, EvalEvent{2, 2.75, 400, 8, 0.05, 2.75, 2}});
    d.refresh();
    QLineSeries* eval = d.lossChart()->lineSeries(Dashboard::EvalLoss);
    QCOMPARE(eval->count(), 1);
    QCOMPARE(eval->at(0).x(), 2.0);
    QCOMPARE(eval->at(0).y(), 2.75);
    QCOMPARE(d.lossChart()->lineSeries(Dashboard::Loss)->count(), 2);
  }

  void movingAverageCoversTheLastSteps() {
    Dashboard d;
    const int n = Dashboard::kMovingAverageSteps;
    for (int i = 0; i < n + 5; ++i) {
      const double loss = i < 5 ? 100.0 : 2.0;  // the first five leave the window
      d.handleEvent({100 * (i + 1), StepEvent{i + 1, loss, 1e-4, 1.0, 10.0, 1, 1}});
    }
    d.refresh();
    QVERIFY2(d.lossChart()->valueText(Dashboard::LossAverage).endsWith("2.0000"),
             qPrintable(d.lossChart()->valueText(Dashboard::LossAverage)));
  }

  void profileSwitchIsMarkedAndStartClears() {
    Dashboard d;
    d.handleEvent({3000, StepEvent{1, 2.0, 1e-4, 1.0, 100.0, 1, 1}});
    d.noteCommand(SwitchProfileCommand{"Low VRAM"});
    QVERIFY(d.markers().empty());  // a request: marked once the supervisor has switched
    d.handleEvent({3100, ProfileSwitchEvent{"Low VRAM", "applied at the next step", 1}});
    QCOMPARE(d.markers().size(), std::size_t{1});
    QCOMPARE(d.markers()[0].kind, MarkerKind::Profile);
    QCOMPARE(d.markers()[0].timeMs, std::int64_t{3100});
    QVERIFY(d.markers()[0].text.contains("Low VRAM"));
    d.noteCommand(StartCommand{nlohmann::json::object()});
    QVERIFY(d.markers().empty());
    QVERIFY(!d.showsCharts());
    QCOMPARE(d.lossChart()->lineSeries(Dashboard::Loss)->count(), 0);
  }

  void eventsWithinATickCauseOneReplace() {
    Dashboard d;
    QSignalSpy replaced(d.lossChart()->lineSeries(Dashboard::Loss), &QXYSeries::pointsReplaced);
    for (int i = 1; i <= 50; ++i) {
      d.handleEvent({100 * i, StepEvent{i, 2.0, 1e-4, 1.0, 10.0, 1, 1}});  // one per bucket
    }
    QCOMPARE(replaced.count(), 0);  // nothing is drawn while events arrive
    QTRY_COMPARE(replaced.count(), 1);
    QCOMPARE(d.lossChart()->lineSeries(Dashboard::Loss)->count(), 50);
  }

  void chartsShareTheTimeAxis() {
    Dashboard d;
    d.setXAxis(Dashboard::XAxis::Time);
    feed(d, testing::readStream("synthetic_gpu_run.jsonl"));
    for (widgets::TimeChart* chart : d.charts()) {
      auto* axis = static_cast<QValueAxis*>(chart->view()->chart()->axes(Qt::Horizontal).first());
      QCOMPARE(axis->min(), 0.0);
      QCOMPARE(axis->max(), 70.0);  // the stream ends at 60.03 s; the axis runs to the next tick
    }
  }

  // The default x axis counts steps: a run that starts after minutes of idle app time begins at
  // step 1, not squeezed to the right; readings between steps fall between them.
  void xAxisCountsStepsByDefaultOrTimeSinceTheRunStarted() {
    Dashboard d;
    QCOMPARE(d.xAxis(), Dashboard::XAxis::Step);
    const std::int64_t idle = 7 * 60 * 1000;  // the engine's clock ran while the app was idle
    d.noteCommand(StartCommand{{{"out", "/runs/first"}}});
    d.handleEvent({idle, StateEvent{RunState::Running, 0, ""}});
    d.handleEvent({idle + 1000, StepEvent{1, 3.0, 1e-4, 1.0, 100.0, 1, 1}});
    MemoryEvent memory;
    memory.allocatedBytes = 1u << 30;
    d.handleEvent({idle + 1500, memory});
    d.handleEvent({idle + 2000, StepEvent{2, 2.5, 1e-4, 1.0, 100.0, 1, 1}});
    d.handleEvent({idle + 2100, ToggleAppliedEvent{Toggle::Serialize, true, 2}});
    d.refresh();
    QLineSeries* loss = d.lossChart()->lineSeries(Dashboard::Loss);
    QCOMPARE(loss->at(0).x(), 1.0);
    QCOMPARE(loss->at(1).x(), 2.0);
    QCOMPARE(d.memoryChart()->lineSeries(Dashboard::Allocated)->at(0).x(), 1.5);
    QCOMPARE(d.markers().back().x, 2.1);
    auto* axis =
        static_cast<QValueAxis*>(d.lossChart()->view()->chart()->axes(Qt::Horizontal).first());
    QVERIFY(axis->max() <= 20.0);
    // The shared axis is titled once, under the bottom chart (queue depth).
    auto* bottom =
        static_cast<QValueAxis*>(d.queueChart()->view()->chart()->axes(Qt::Horizontal).first());
    QCOMPARE(bottom->titleText(), QStringLiteral("step"));
    QVERIFY(!axis->isTitleVisible());
    d.setXAxis(Dashboard::XAxis::Time);
    QCOMPARE(loss->at(0).x(), 1.0);  // seconds since the run's first event
    QCOMPARE(loss->at(1).x(), 2.0);
    QCOMPARE(d.memoryChart()->lineSeries(Dashboard::Allocated)->at(0).x(), 1.5);
    QCOMPARE(bottom->titleText(), QStringLiteral("time since the run started (s)"));
    QCOMPARE(d.xAxisSelector()->currentIndex(), 1);
  }

  // Steps announced together (the engine's state mirror written more slowly than a step) arrive
  // at once: the readings after them are placed by the last step's own cycle, and a hang says how
  // long that step took, not the milliseconds between the two events.
  void stepsAnnouncedTogetherKeepTheirCycle() {
    Dashboard d;
    d.noteCommand(StartCommand{{{"out", "/runs/a"}}});
    StepEvent step{1, 3.0, 1e-4, 1.0, 100.0, 1, 1};
    step.cycleSeconds = 1.0;
    d.handleEvent({1000, step});
    step.step = 2;
    d.handleEvent({3000, step});
    step.step = 3;
    d.handleEvent({3001, step});  // written by the same write as step 2
    MemoryEvent memory;
    memory.allocatedBytes = 1u << 30;
    d.handleEvent({3501, memory});
    d.handleEvent(
        {13301, ErrorEvent{"hang", "adamw", 0, "hang in step 4: no progress", "", true, 4}});
    d.refresh();
    QCOMPARE(d.memoryChart()->lineSeries(Dashboard::Allocated)->at(0).x(), 3.5);
    const QString text = d.incidentBanner()->shownText();
    QVERIFY2(text.contains(QStringLiteral("no step for 10.3 s after step 3 (which took 1.0 s)")),
             qPrintable(text));
  }

  // A new run keeps the previous one's curves in the run selector.
  void previousRunsStayAvailable() {
    Dashboard d;
    d.noteCommand(StartCommand{{{"out", "/runs/alpha"}}});
    for (int i = 1; i <= 3; ++i) {
      d.handleEvent({1000 * i, StepEvent{i, 4.0 - i, 1e-4, 1.0, 100.0, 1, 1}});
    }
    d.noteCommand(StartCommand{{{"out", "/runs/beta"}}});
    d.handleEvent({9000, StepEvent{1, 9.0, 1e-4, 1.0, 100.0, 1, 1}});
    d.refresh();
    QCOMPARE(d.runCount(), 2);
    QCOMPARE(d.runName(0), QStringLiteral("alpha"));
    QCOMPARE(d.runSelector()->count(), 2);
    QCOMPARE(d.runSelector()->currentText(), QStringLiteral("beta"));
    QLineSeries* loss = d.lossChart()->lineSeries(Dashboard::Loss);
    QCOMPARE(loss->count(), 1);
    QCOMPARE(loss->at(0).y(), 9.0);
    d.showRun(0);
    QCOMPARE(loss->count(), 3);
    QCOMPARE(loss->at(2).y(), 1.0);
    // The shown earlier run is not drawn over by the live one; the live one keeps its events.
    d.handleEvent({10000, StepEvent{2, 8.0, 1e-4, 1.0, 100.0, 1, 1}});
    d.refresh();
    QCOMPARE(loss->count(), 3);
    d.showRun(1);
    QCOMPARE(loss->count(), 2);
  }

  // The gradient norm is drawn when the engine reports it; tokens/s and the norm read "not
  // reported" (no point, no zero) for a step that carries neither, as a command's may not.
  void gradNormIsDrawnWhenReportedAndNotReportedOtherwise() {
    Dashboard d;
    d.noteCommand(StartCommand{{{"out", "/runs/a"}}});
    d.handleEvent({100, StepEvent{1, 2.0, 1e-4, 0.75, 900.0, 1, 1}});
    d.refresh();
    QCOMPARE(d.throughputChart()->valueText(Dashboard::GradNorm),
             QStringLiteral("grad norm 0.750"));
    d.noteCommand(StartCommand{{{"out", "/runs/b"}}});
    d.handleEvent({100, StepEvent{1, 2.0, 1e-4, 0.0, 0.0, 1, 1}});
    d.refresh();
    QCOMPARE(d.throughputChart()->valueText(Dashboard::TokensPerS),
             QStringLiteral("real tokens/s over the step cycle not reported"));
    QCOMPARE(d.throughputChart()->valueText(Dashboard::GradNorm),
             QStringLiteral("grad norm not reported"));
    QCOMPARE(d.throughputChart()->lineSeries(Dashboard::TokensPerS)->count(), 0);
  }

  // A toggle marks a change: the start state a run reports, and a value reported again, do not.
  // The epoch of the shown run's latest step ends the loss chart's legend row ("epoch 0.333", as
  // a Trainer's dict gave it); a run whose steps carry none shows none, and showing an earlier
  // run shows its own.
  void theEpochIsShownWhenTheStepCarriesOne() {
    Dashboard d;
    d.noteCommand(StartCommand{{{"out", "/runs/a"}}});
    StepEvent step{1, 2.0, 1e-4, 0.5, 0.0, 0, 0};
    step.epoch = 0.3333;
    d.handleEvent({100, step});
    d.refresh();
    QCOMPARE(d.epochText(), QStringLiteral("epoch 0.333"));
    QVERIFY2(d.lossChart()->legendText().endsWith(QStringLiteral("epoch 0.333")),
             qPrintable(d.lossChart()->legendText()));
    step.step = 2;
    step.epoch = 2.0;  // a whole one, as it is
    d.handleEvent({200, step});
    d.refresh();
    QCOMPARE(d.lossChart()->note(), QStringLiteral("epoch 2"));
    d.noteCommand(StartCommand{{{"out", "/runs/b"}}});
    d.handleEvent({100, StepEvent{1, 2.0, 1e-4, 0.5, 0.0, 0, 0}});
    d.refresh();
    QCOMPARE(d.lossChart()->note(), QString());
    QVERIFY(!d.lossChart()->legendText().contains(QStringLiteral("epoch")));
    d.showRun(0);
    QCOMPARE(d.lossChart()->note(), QStringLiteral("epoch 2"));
  }

  // The engine names the step that hangs; when the step before it finished but was not yet saved
  // and announced, that is two past the last step shown, and the band spans both.
  void aHangIsInTheStepTheEngineNames() {
    Dashboard d;
    d.noteCommand(StartCommand{{{"out", "/runs/a"}}});
    d.handleEvent({1000, StepEvent{3, 2.0, 1e-4, 1.0, 100.0, 1, 8}});
    d.handleEvent(
        {11300, ErrorEvent{"hang", "adamw", 0, "hang in step 5: no progress", "", true, 5}});
    d.refresh();
    const QString text = d.incidentBanner()->shownText();
    QVERIFY2(text.contains(QStringLiteral("Hang in step 5: no step for 10.3 s after step 3")),
             qPrintable(text));
    const auto hang = std::find_if(d.markers().begin(), d.markers().end(), [](const auto& m) {
      return m.kind == widgets::MarkerKind::Incident;
    });
    QVERIFY(hang != d.markers().end());
    QCOMPARE(hang->x, 5.0);
    QCOMPARE(hang->spanFromX.value_or(-1.0), 3.0);
    QCOMPARE(hang->label, QStringLiteral("step 5 hung: 10.3 s"));
    // An engine that names no step (an older recording): the step after the last one shown.
    Dashboard older;
    older.noteCommand(StartCommand{{{"out", "/runs/b"}}});
    older.handleEvent({1000, StepEvent{3, 2.0, 1e-4, 1.0, 100.0, 1, 8}});
    older.handleEvent({11300, ErrorEvent{"hang", "adamw", 0, "hang in step 4", "", true}});
    older.refresh();
    QVERIFY2(older.incidentBanner()->shownText().contains(QStringLiteral("Hang in step 4: ")),
             qPrintable(older.incidentBanner()->shownText()));
  }

  void onlyToggleChangesAreMarked() {
    Dashboard d;
    d.noteCommand(StartCommand{{{"out", "/runs/a"}}});
    d.handleEvent({10, ToggleAppliedEvent{Toggle::MicroBatch, 8, 0}});
    d.handleEvent({11, ToggleAppliedEvent{Toggle::Serialize, false, 0}});
    d.handleEvent({12, ToggleAppliedEvent{Toggle::MicroBatch, 1, 0}});  // a profile's, at start
    d.handleEvent({100, StepEvent{1, 2.0, 1e-4, 1.0, 100.0, 1, 8}});
    d.handleEvent({110, ToggleAppliedEvent{Toggle::Serialize, false, 1}});  // again: no change
    d.handleEvent({120, ToggleAppliedEvent{Toggle::Blocking, true, 1}});    // first, mid-run
    QStringList texts;
    for (const widgets::ChartMarker& m : d.markers()) {
      texts << m.text;
    }
    QCOMPARE(texts, (QStringList{QStringLiteral("micro-batch → 1 at step 0"),
                                 QStringLiteral("blocking launches → on at step 1")}));
  }

  // A run stopped and resumed in the same window goes on in its entry; the resumed engine's
  // start state (its options' micro-batch 8, then the profile's 1 again) is no change, the
  // resume is one marker at the checkpoint's step, and steps after the checkpoint are dropped.
  void aResumedRunGoesOnInItsEntry() {
    Dashboard d;
    d.noteCommand(StartCommand{{{"out", "/runs/a"}}});
    d.handleEvent({10, ToggleAppliedEvent{Toggle::MicroBatch, 8, 0}});
    d.handleEvent({11, ToggleAppliedEvent{Toggle::MicroBatch, 1, 0}});  // the profile's
    for (int i = 1; i <= 4; ++i) {
      d.handleEvent({1000 * i, StepEvent{i, 3.0, 1e-4, 1.0, 100.0, 1, 8}});
    }
    d.noteCommand(StartCommand{{{"out", "/runs/a"}, {"resume", true}}});
    d.resumeRun(QStringLiteral("/runs/a"), QStringLiteral("a"), {}, 3);  // checkpoint at 3
    d.handleEvent({5, ToggleAppliedEvent{Toggle::MicroBatch, 8, 3}});
    d.handleEvent({6, ToggleAppliedEvent{Toggle::MicroBatch, 1, 3}});
    d.handleEvent({500, StepEvent{4, 2.5, 1e-4, 1.0, 100.0, 1, 8}});
    d.refresh();
    QCOMPARE(d.runCount(), 1);
    QLineSeries* loss = d.lossChart()->lineSeries(Dashboard::Loss);
    QCOMPARE(loss->count(), 4);
    QCOMPARE(loss->at(3).y(), 2.5);  // the step done again, not the one shown before
    std::map<MarkerKind, int> count;
    for (const widgets::ChartMarker& m : d.markers()) {
      ++count[m.kind];
    }
    QCOMPARE(count[MarkerKind::Toggle], 1);  // micro-batch → 1 at step 0
    QCOMPARE(count[MarkerKind::Resume], 1);
  }

  // The engine's hello before any run makes no entry in the selector (it once made a "run 1"
  // that showed nothing and hid the selector); the next run knows where the engine computes.
  void theEnginesHelloMakesNoRun() {
    Dashboard d;
    d.handleEvent({0, HelloEvent{kProtocolVersion, "test", "cpu", {}}});
    d.handleEvent({1, StateEvent{RunState::Idle, 0, ""}});
    d.handleEvent({2, LogEvent{LogLevel::Info, "ready"}});
    QCOMPARE(d.runCount(), 0);
    QCOMPARE(d.runSelector()->count(), 0);
    d.noteCommand(StartCommand{{{"out", "/runs/a"}}});
    QCOMPARE(d.runCount(), 1);
    QVERIFY(d.showsQueueNote());
  }

  void decimatorKeepsSpikesAndBoundsPoints() {
    widgets::SeriesDecimator dec;
    for (int i = 0; i < 250000; ++i) {
      dec.add(i * 0.1, i == 123456 ? 50.0 : 1.0 + (i % 7) * 0.01);
    }
    QList<QPointF> points;
    dec.fill(points);
    QVERIFY(points.size() <= 2 * dec.bucketCount());
    QVERIFY(points.size() > dec.bucketCount());
    QCOMPARE(dec.sampleCount(), std::int64_t{250000});
    QCOMPARE(dec.maxValue(), 50.0);
    QVERIFY(std::any_of(points.begin(), points.end(), [](QPointF p) {
      return p.y() == 50.0 && std::abs(p.x() - 12345.6) < 1e-6;
    }));
    for (int i = 1; i < points.size(); ++i) {
      QVERIFY(points[i].x() >= points[i - 1].x());
    }
  }
};

QTEST_MAIN(TestDashboard)
#include "test_dashboard.moc"
