// bench_widgets.cpp — how long the GUI thread spends on the dashboard and the memory map.
// A measurement program, not a test: it prints median and worst times and judges nothing.
//   1. The dashboard holding 250K samples in every chart (loss/lr, tokens/s, memory, allocator,
//      queues): per 10 Hz tick, the time to file the tick's events (10 steps, 10 memory and 10
//      queue readings: 100 Hz sampling) and the time of the tick's replace() calls; then the
//      frame time of the whole dashboard at 1600×1000. For contrast, one frame of a plain
//      QLineSeries holding all 250K points (what the decimation avoids).
//   2. The memory map with 10K blocks: layout after a snapshot, and the frame time at 1600×900.
// Times are the GUI thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so a busy machine does not
// inflate them with time spent waiting for a core.
// Run: QT_QPA_PLATFORM=offscreen bench_widgets [dir]   (with a dir: also saves the last frames as
// PNGs there, to look at the rendering of the synthetic load)
#include <time.h>
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QPixmap>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "widgets/Dashboard.h"
#include "widgets/MemoryMapView.h"

using namespace lorascope;
using namespace lorascope::engine;

namespace {

constexpr int kPointsPerChart = 250000;
constexpr int kSampleIntervalMs = 10;  // 100 Hz
constexpr int kTicks = 50;
constexpr int kFrames = 20;

// A stopwatch of this thread's CPU time, with QElapsedTimer's two calls.
class CpuTimer {
 public:
  void start() { startNs_ = nowNs(); }
  void restart() { start(); }
  std::int64_t nsecsElapsed() const { return nowNs() - startNs_; }

 private:
  static std::int64_t nowNs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  std::int64_t startNs_ = 0;
};

struct Stats {
  double medianMs;
  double worstMs;
};

Stats summarise(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.back()};
}

void sample(widgets::Dashboard& d, std::int64_t i) {
  const std::int64_t t = i * kSampleIntervalMs;
  const double x = static_cast<double>(i);
  d.handleEvent({t, StepEvent{i, 2.0 + std::sin(x * 1e-3), 2e-4, 1.0, 5000 + std::sin(x), 2, 8}});
  MemoryEvent m;
  m.allocatedBytes = 4'000'000'000ull + static_cast<std::uint64_t>(i % 1000) * 1'000'000ull;
  m.reservedBytes = *m.allocatedBytes + 500'000'000ull;
  m.largestFreeBytes = 200'000'000ull + static_cast<std::uint64_t>(i % 77) * 1'000'000ull;
  m.fragmentation = 0.2 + 0.1 * std::sin(x * 1e-2);
  m.driverUsedBytes = *m.reservedBytes + 700'000'000ull;
  m.heldOutsideBytes = 700'000'000ull;
  m.hostRssBytes = 2'000'000'000ull;
  d.handleEvent({t, m});
  d.handleEvent({t, QueueEvent{{{"compute", i % 9}, {"copy", i % 3}}}});
}

nlohmann::json snapshotWithBlocks(int blocks) {
  static const char* const kOwners[] = {"weights",   "lora",        "grads",
                                        "optimizer", "activations", "workspace"};
  nlohmann::json segments = nlohmann::json::array();
  std::uint64_t address = 0x7f0000000000ull;
  const int perSegment = 50;
  for (int s = 0; s < blocks / perSegment; ++s) {
    nlohmann::json list = nlohmann::json::array();
    std::uint64_t total = 0;
    for (int b = 0; b < perSegment; ++b) {
      const std::uint64_t size = (512ull << 10) * static_cast<std::uint64_t>(1 + (s * 7 + b) % 13);
      const bool used = (s + b) % 5 != 0;
      nlohmann::json block = {{"address", address + total},
                              {"size", size},
                              {"requested_size", used ? size - 512 : 0},
                              {"state", used ? "active_allocated" : "inactive"}};
      if (used) {
        block["owner"] = kOwners[(s + b) % 6];
        block["step"] = s;
      }
      list.push_back(block);
      total += size;
    }
    segments.push_back({{"address", address},
                        {"total_size", total},
                        {"allocated_size", total / 2},
                        {"active_size", total / 2},
                        {"requested_size", total / 2},
                        {"segment_type", "large"},
                        {"blocks", list}});
    address += total;
  }
  return {{"segments", segments}};
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  CpuTimer timer;

  widgets::Dashboard dashboard;
  dashboard.resize(1600, 1000);
  dashboard.show();
  timer.start();
  for (std::int64_t i = 0; i < kPointsPerChart; ++i) {
    sample(dashboard, i);
  }
  const double fillMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  dashboard.refresh();
  std::printf(
      "dashboard: filed 3 × %d events (%d samples per series) in %.1f ms (%.2f µs per "
      "event)\n",
      kPointsPerChart, kPointsPerChart, fillMs, fillMs * 1000.0 / (3.0 * kPointsPerChart));

  std::vector<double> handleMs;
  std::vector<double> refreshMs;
  std::int64_t next = kPointsPerChart;
  for (int tick = 0; tick < kTicks; ++tick) {
    timer.restart();
    for (int k = 0; k < 10; ++k) {
      sample(dashboard, next++);
    }
    handleMs.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
    timer.restart();
    dashboard.refresh();
    refreshMs.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
  }
  const Stats handle = summarise(handleMs);
  const Stats refresh = summarise(refreshMs);
  std::printf(
      "per 10 Hz tick (30 events): filing median %.3f ms, worst %.3f ms; replace() of "
      "every series median %.3f ms, worst %.3f ms\n",
      handle.medianMs, handle.worstMs, refresh.medianMs, refresh.worstMs);
  std::printf("points drawn per loss series: %lld (of %lld samples)\n",
              static_cast<long long>(dashboard.lossChart()->lineSeries(0)->count()),
              static_cast<long long>(dashboard.lossChart()->decimator(0).sampleCount()));

  std::vector<double> frameMs;
  for (int f = 0; f < kFrames; ++f) {
    sample(dashboard, next++);
    dashboard.refresh();
    QCoreApplication::processEvents();  // layout updates, as the event loop would run them
    timer.restart();
    const QPixmap frame = dashboard.grab();
    frameMs.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
  }
  const Stats frame = summarise(frameMs);
  const QString pngDir = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QString();
  if (!pngDir.isEmpty()) {
    dashboard.grab().save(pngDir + QStringLiteral("/bench_dashboard.png"));
  }
  std::printf("dashboard frame (5 charts, 1600×1000): median %.2f ms, worst %.2f ms\n",
              frame.medianMs, frame.worstMs);

  {
    QChartView raw;
    raw.resize(800, 330);
    auto* series = new QLineSeries;
    QList<QPointF> points;
    points.reserve(kPointsPerChart);
    for (int i = 0; i < kPointsPerChart; ++i) {
      points.append(QPointF(i * 0.01, 2.0 + std::sin(i * 1e-3)));
    }
    series->replace(points);
    raw.chart()->addSeries(series);
    raw.chart()->createDefaultAxes();
    raw.show();
    raw.grab();  // the first frame lays out
    timer.restart();
    raw.grab();
    std::printf("contrast: one chart drawing all %d points undecimated: %.1f ms per frame\n",
                kPointsPerChart, static_cast<double>(timer.nsecsElapsed()) / 1e6);
  }

  widgets::MemoryMapView map;
  map.resize(1600, 900);
  map.show();
  const nlohmann::json doc = snapshotWithBlocks(10000);
  timer.restart();
  widgets::MemorySnapshot snapshot = widgets::parseMemorySnapshot(doc);
  const double parseMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  timer.restart();
  map.setSnapshot(std::move(snapshot));
  const double layoutMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  std::vector<double> mapMs;
  for (int f = 0; f < kFrames; ++f) {
    timer.restart();
    const QPixmap image = map.grab();
    mapMs.push_back(static_cast<double>(timer.nsecsElapsed()) / 1e6);
  }
  const Stats mapFrame = summarise(mapMs);
  if (!pngDir.isEmpty()) {
    map.grab().save(pngDir + QStringLiteral("/bench_memory_map.png"));
  }
  std::printf(
      "memory map, %zu blocks in %zu segments: parse %.2f ms, layout %.2f ms, frame "
      "(1600×%d) median %.2f ms, worst %.2f ms\n",
      map.snapshot().blockCount(), map.snapshot().segments.size(), parseMs, layoutMs, map.height(),
      mapFrame.medianMs, mapFrame.worstMs);
  return 0;
}
