// test_memory_map.cpp — snapshots in PyTorch's layout are read with owner/step, blocks are drawn
// to scale and explain themselves in a tooltip, a frozen map ignores live snapshots, snapshots
// save and reopen, live refresh asks the engine only while a run is active, and a run on several
// GPUs (or its recording) shows each card's snapshot through a card selector.
#include <QtTest>

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QRegularExpression>
#include <QTemporaryDir>

#include "RecordedStream.h"
#include "widgets/AllocationTimeline.h"
#include "widgets/MemoryMapPanel.h"
#include "widgets/MemorySnapshot.h"

using namespace lorascope;
using namespace lorascope::engine;
using widgets::BlockKind;
using widgets::MemoryMapPanel;

namespace {

double drawnWidth(const widgets::MemoryMapView& view, widgets::MemoryMapView::BlockRef ref) {
  double width = 0;
  for (const QRectF& r : view.rectsOf(ref)) {
    width += r.width();
  }
  return width;
}

nlohmann::json fixtureSnapshot() {
  const auto snaps =
      testing::eventsOfType<SnapshotEvent>(testing::readStream("synthetic_gpu_run.jsonl"));
  return snaps.at(0).snapshot;
}

// The snapshot recorded on an H100 after step 7 (fixtures/README.md).
nlohmann::json h100Snapshot() {
  const auto snaps =
      testing::eventsOfType<SnapshotEvent>(testing::readStream("h100_gpu_run.jsonl"));
  return snaps.at(0).snapshot;
}

// `panel` at 1100 x 700 on screen showing h100Snapshot(); false when the panel refused it.
bool showH100Snapshot(MemoryMapPanel& panel) {
  panel.resize(1100, 700);
  panel.show();
  const bool shown = panel.showSnapshot(h100Snapshot(), QStringLiteral("test")).isEmpty();
  QCoreApplication::processEvents();
  return shown;
}

}  // namespace

class TestMemoryMap : public QObject {
  Q_OBJECT

 private slots:
  void readsSegmentsBlocksOwnersAndSteps() {
    const widgets::MemorySnapshot s = widgets::parseMemorySnapshot(fixtureSnapshot());
    QCOMPARE(s.segments.size(), std::size_t{3});
    QCOMPARE(s.blockCount(), std::size_t{6});
    QCOMPARE(s.totalBytes(), std::uint64_t{450} << 20);
    QCOMPARE(s.segments[0].blocks[0].kind, BlockKind::Weights);
    QCOMPARE(s.segments[0].blocks[1].kind, BlockKind::Lora);
    QCOMPARE(s.segments[1].blocks[0].kind, BlockKind::Activations);
    QCOMPARE(*s.segments[1].blocks[0].step, std::int64_t{117});
    // A free block inside a segment that is partly in use vs. a wholly free segment.
    QCOMPARE(s.segments[1].blocks[1].kind, BlockKind::InactiveSplit);
    QCOMPARE(s.segments[2].blocks[0].kind, BlockKind::Free);
    QVERIFY(!s.segments[1].blocks[1].step.has_value());
    const auto bytes = s.bytesByKind();
    QCOMPARE(bytes[static_cast<std::size_t>(BlockKind::InactiveSplit)], std::uint64_t{16} << 20);
  }

  // The snapshot recorded on an H100 after step 7 (fixtures/README.md) reads whole: its 298
  // segments and 1,845 blocks: weights, LoRA, gradients and optimizer state in use, and the
  // step's freed activations cached as free space (taken at a step boundary).
  void readsTheSnapshotRecordedOnAnH100() {
    const auto snaps =
        testing::eventsOfType<SnapshotEvent>(testing::readStream("h100_gpu_run.jsonl"));
    QCOMPARE(snaps.size(), std::size_t{1});
    const widgets::MemorySnapshot s = widgets::parseMemorySnapshot(snaps[0].snapshot);
    QCOMPARE(s.segments.size(), std::size_t{298});
    QCOMPARE(s.blockCount(), std::size_t{1845});
    const auto bytes = s.bytesByKind();
    for (BlockKind kind :
         {BlockKind::Weights, BlockKind::Lora, BlockKind::Grads, BlockKind::Optimizer}) {
      QVERIFY(bytes[static_cast<std::size_t>(kind)] > 0);
    }
    QCOMPARE(bytes[static_cast<std::size_t>(BlockKind::Activations)], std::uint64_t{0});
    QVERIFY(bytes[static_cast<std::size_t>(BlockKind::Free)] +
                bytes[static_cast<std::size_t>(BlockKind::InactiveSplit)] >
            bytes[static_cast<std::size_t>(BlockKind::Weights)]);
  }

  void rejectsMalformedSnapshotsNamingTheField() {
    nlohmann::json bad = fixtureSnapshot();
    bad["segments"][1]["blocks"][0].erase("requested_size");
    try {
      widgets::parseMemorySnapshot(bad);
      QFAIL("accepted a block without requested_size");
    } catch (const widgets::SnapshotError& e) {
      QCOMPARE(QString::fromUtf8(e.what()),
               QStringLiteral("segments[1].blocks[0]: \"requested_size\" is missing"));
    }
    QVERIFY_THROWS_EXCEPTION(widgets::SnapshotError,
                             widgets::parseMemorySnapshot(nlohmann::json::object()));
  }

  // One row per segment, grouped by the owner holding most of it; a row's length is its share of
  // the largest segment (never below the minimum) and inside its bar every block's width is its
  // share of the segment. Zooming in doubles the bars.
  void blocksAreDrawnToScaleInRowsGroupedByOwner() {
    widgets::MemoryMapView view;
    view.resize(900, 400);
    view.setSnapshot(widgets::parseMemorySnapshot(fixtureSnapshot()));
    const widgets::MemorySnapshot& s = view.snapshot();
    QCOMPARE(view.groups().size(), std::size_t{3});
    QCOMPARE(view.groups()[0].kind, BlockKind::Weights);
    QCOMPARE(view.groups()[1].kind, BlockKind::Activations);
    QCOMPARE(view.groups()[2].kind, BlockKind::Free);
    QVERIFY2(view.groupHeader(view.groups()[0]).contains("mostly weights"),
             qPrintable(view.groupHeader(view.groups()[0])));
    QVERIFY(view.groupHeader(view.groups()[2]).contains("releasable"));
    const double fullWidth = 900.0 - widgets::MemoryMapView::kLabelWidthPx;
    // 320 MiB (the largest: the whole width), 128 MiB, and 2 MiB (the minimum length).
    const double wantWidth[] = {fullWidth, fullWidth * 128.0 / 320.0,
                                widgets::MemoryMapView::kMinSegmentBarPx};
    for (int seg = 0; seg < 3; ++seg) {
      const QRectF bar = view.segmentBar(seg);
      QCOMPARE(bar.left(), double(widgets::MemoryMapView::kLabelWidthPx));
      QCOMPARE(bar.width(), wantWidth[seg]);
      const double pxPerByte = bar.width() / static_cast<double>(s.segments[seg].totalBytes);
      for (int b = 0; b < static_cast<int>(s.segments[seg].blocks.size()); ++b) {
        const double want = pxPerByte * static_cast<double>(s.segments[seg].blocks[b].sizeBytes);
        QVERIFY2(std::abs(drawnWidth(view, {seg, b}) - want) < 1e-6,
                 qPrintable(QStringLiteral("segment %1 block %2").arg(seg).arg(b)));
        QCOMPARE(view.rectsOf({seg, b}).at(0).top(), bar.top());  // on its segment's row
      }
    }
    QVERIFY(view.segmentBar(1).top() > view.segmentBar(0).top());
    const double before = drawnWidth(view, {1, 1});
    view.zoomIn();
    QCOMPARE(view.zoomLevel(), 1);
    QVERIFY(std::abs(drawnWidth(view, {1, 1}) - 2 * before) < 1.0);
  }

  // The H100 snapshot: every segment is a readable row under its owner's header, and any block —
  // the smallest included — can be zoomed to until it is wide enough to point at.
  void theRecordedH100SnapshotIsReadableAndZoomsToOneBlock() {
    MemoryMapPanel panel;
    QVERIFY(showH100Snapshot(panel));
    widgets::MemoryMapView& view = *panel.view();
    const widgets::MemorySnapshot& s = view.snapshot();
    std::size_t rows = 0;
    for (const auto& group : view.groups()) {
      rows += group.segments.size();
      for (const int seg : group.segments) {
        QVERIFY(view.segmentBar(seg).height() >= 14.0);
        QVERIFY(view.segmentBar(seg).width() >= widgets::MemoryMapView::kMinSegmentBarPx);
      }
    }
    QCOMPARE(rows, s.segments.size());
    QVERIFY(view.groups().size() >= 3);
    widgets::MemoryMapView::BlockRef smallest;
    std::uint64_t smallestBytes = UINT64_MAX;
    for (int seg = 0; seg < static_cast<int>(s.segments.size()); ++seg) {
      for (int b = 0; b < static_cast<int>(s.segments[seg].blocks.size()); ++b) {
        if (s.segments[seg].blocks[b].sizeBytes < smallestBytes) {
          smallestBytes = s.segments[seg].blocks[b].sizeBytes;
          smallest = {seg, b};
        }
      }
    }
    // Its allocation timeline: the trace's steps, and within them the activations that the
    // snapshot (taken between steps) no longer holds: the step's peak is far above what is live.
    const widgets::AllocationTimeline& timeline = *panel.timeline();
    QVERIFY(timeline.hasTrace());
    QCOMPARE(timeline.eventCount(), static_cast<int>(s.trace.size()));
    QVERIFY(timeline.stepStarts().size() >= 3);
    std::uint64_t liveAtEnd = 0;
    for (const std::uint64_t bytes : timeline.liveAfter(timeline.eventCount() - 1)) {
      liveAtEnd += bytes;
    }
    QVERIFY(timeline.peakLiveBytes() > 3 * liveAtEnd);
    QCOMPARE(
        timeline.liveAfter(timeline.peakLiveIndex())[static_cast<std::size_t>(BlockKind::Weights)],
        s.bytesByKind()[static_cast<std::size_t>(BlockKind::Weights)]);
    const QRectF rect = panel.zoomToBlock(smallest);
    QVERIFY2(
        rect.width() >= widgets::MemoryMapView::kBlockMinWidthPx,
        qPrintable(QStringLiteral("%1 px at zoom %2").arg(rect.width()).arg(view.zoomLevel())));
    const auto hit = view.blockAt(rect.center().toPoint());
    QVERIFY(hit.has_value());
    QCOMPARE(hit->segment, smallest.segment);
    QCOMPARE(hit->block, smallest.block);
  }

  // The H100 snapshot's rows are as long as their segments: the 2 MiB segments of small blocks
  // are short bars (at the minimum length), the 128 MiB one long; the legend counts the freed
  // activations cached in free segments instead of saying "activations 0 B" alone, and the free
  // rows' header says what they were cached for.
  void rowsAreToScaleAndTheCachedActivationsAreCounted() {
    MemoryMapPanel panel;
    QVERIFY(showH100Snapshot(panel));
    const widgets::MemoryMapView& view = *panel.view();
    const widgets::MemorySnapshot& s = view.snapshot();
    int small = -1;
    int large = -1;
    for (int seg = 0; seg < static_cast<int>(s.segments.size()); ++seg) {
      small = s.segments[seg].totalBytes == (2u << 20) ? seg : small;
      large = s.segments[seg].totalBytes == (128u << 20) ? seg : large;
    }
    QVERIFY(small >= 0 && large >= 0);
    const double smallWidth = view.segmentBar(small).width();
    const double largeWidth = view.segmentBar(large).width();
    QVERIFY2(
        smallWidth * 4 < largeWidth,
        qPrintable(QStringLiteral("2 MiB: %1 px, 128 MiB: %2 px").arg(smallWidth).arg(largeWidth)));
    QCOMPARE(smallWidth, widgets::MemoryMapView::kMinSegmentBarPx);
    // The largest segment (260 MiB) fills the width; the 128 MiB one about half of it.
    QVERIFY(std::abs(largeWidth / (view.width() - widgets::MemoryMapView::kLabelWidthPx) -
                     128.0 / 260.0) < 0.01);

    const auto cached = s.cachedByOwner()[static_cast<std::size_t>(BlockKind::Activations)];
    QCOMPARE(cached.segments, 188);  // every free segment last held activations (steps 4-7)
    const QString legend = panel.legendText(BlockKind::Activations);
    QVERIFY2(
        legend == QStringLiteral("activations 0 B live · 4.40 GiB cached in 188 free segments"),
        qPrintable(legend));
    const QString header = view.groupHeader(view.groups().back());
    QVERIFY2(header.contains(QStringLiteral("188 last held activations (4.40 GiB)")),
             qPrintable(header));
  }

  // The allocations before the first step (step 0: loading) take a few pixels: the first step's
  // label wins over theirs, so "step 1" is written under the timeline.
  // An owner with a single cached segment is counted in the singular, and the legend's text is
  // built without a placeholder left over (Qt warns of one on stderr).
  void oneCachedSegmentIsCountedInTheSingular() {
    QTest::failOnWarning(QRegularExpression(QStringLiteral("QString::arg")));
    nlohmann::json snapshot = fixtureSnapshot();
    // The wholly free small segment last held a workspace block, allocated and freed at step 3.
    const nlohmann::json segment = snapshot["segments"][2];
    nlohmann::json event = {{"addr", segment["address"]},
                            {"owner", "workspace"},
                            {"size", segment["total_size"]},
                            {"step", 3}};
    nlohmann::json freed = event;
    event["action"] = "alloc";
    freed["action"] = "free_completed";
    snapshot["device_traces"] = nlohmann::json::array({nlohmann::json::array({event, freed})});
    MemoryMapPanel panel;
    panel.handleEvent({1000, SnapshotEvent{snapshot}});
    QVERIFY(panel.hasSnapshot());
    const QString legend = panel.legendText(BlockKind::Workspace);
    QVERIFY2(legend == QStringLiteral("workspace 0 B live · 2.00 MiB cached in 1 free segment"),
             qPrintable(legend));
  }

  void theTimelineLabelsItsFirstStep() {
    nlohmann::json snapshot = fixtureSnapshot();
    nlohmann::json trace = nlohmann::json::array();
    const std::uint64_t address = snapshot["segments"][1]["blocks"][0]["address"];
    auto add = [&](const char* action, std::int64_t step) {
      trace.push_back({{"action", action},
                       {"addr", address},
                       {"size", 1024},
                       {"owner", "activations"},
                       {"step", step}});
    };
    for (int i = 0; i < 10; ++i) {
      add("alloc", 0);
      add("free_completed", 0);
    }
    for (std::int64_t step = 1; step <= 3; ++step) {
      for (int i = 0; i < 400; ++i) {
        add("alloc", step);
        add("free_completed", step);
      }
    }
    snapshot["device_traces"] = nlohmann::json::array({trace});
    widgets::AllocationTimeline timeline;
    timeline.resize(640, widgets::AllocationTimeline::kHeightPx);
    timeline.setSnapshot(widgets::parseMemorySnapshot(snapshot));
    QCOMPARE(timeline.stepStarts().size(), std::size_t{4});
    QStringList labels;
    for (const auto& label : timeline.stepLabels()) {
      labels << label.text;
    }
    QCOMPARE(labels, (QStringList{"step 1", "step 2", "step 3"}));
  }

  // The allocation timeline walks the trace back from the snapshot's state: live bytes by owner
  // and reserved bytes after every event, steps marked, the peak found, and drawn stacked.
  void allocationTimelineShowsLiveAndFreedBytesByOwner() {
    constexpr std::uint64_t kMiB = 1 << 20;
    const nlohmann::json snapshot = {
        {"segments",
         {{{"address", 0x1000000},
           {"total_size", 20 * kMiB},
           {"allocated_size", 8 * kMiB},
           {"active_size", 8 * kMiB},
           {"requested_size", 8 * kMiB},
           {"segment_type", "large"},
           {"blocks",
            {{{"address", 0x1000000},
              {"size", 8 * kMiB},
              {"requested_size", 8 * kMiB},
              {"state", "active_allocated"},
              {"owner", "weights"},
              {"step", 1}},
             {{"address", 0x1800000},
              {"size", 12 * kMiB},
              {"requested_size", 0},
              {"state", "inactive"}}}}}}},
        {"device_traces",
         {{{{"action", "segment_alloc"}, {"addr", 0x1000000}, {"size", 20 * kMiB}, {"step", 1}},
           {{"action", "alloc"},
            {"addr", 0x1000000},
            {"size", 8 * kMiB},
            {"owner", "weights"},
            {"step", 1}},
           {{"action", "alloc"},
            {"addr", 0x1800000},
            {"size", 6 * kMiB},
            {"owner", "activations"},
            {"step", 1}},
           {{"action", "free_completed"},
            {"addr", 0x1800000},
            {"size", 6 * kMiB},
            {"owner", "activations"},
            {"step", 2}},
           {{"action", "alloc"},
            {"addr", 0x1800000},
            {"size", 12 * kMiB},
            {"owner", "activations"},
            {"step", 2}},
           {{"action", "free_requested"}, {"addr", 0x1800000}, {"size", 12 * kMiB}, {"step", 2}},
           {{"action", "free_completed"},
            {"addr", 0x1800000},
            {"size", 12 * kMiB},
            {"owner", "activations"},
            {"step", 2}}}}}};
    const widgets::MemorySnapshot s = widgets::parseMemorySnapshot(snapshot);
    QCOMPARE(s.trace.size(), std::size_t{6});  // free_requested is not a free yet
    widgets::AllocationTimeline timeline;
    timeline.resize(600, widgets::AllocationTimeline::kHeightPx);
    timeline.setSnapshot(s);
    QVERIFY(timeline.hasTrace());
    QCOMPARE(timeline.eventCount(), 6);
    const auto weights = static_cast<std::size_t>(BlockKind::Weights);
    const auto activations = static_cast<std::size_t>(BlockKind::Activations);
    QCOMPARE(timeline.reservedAfter(0), 20 * kMiB);
    QCOMPARE(timeline.liveAfter(0)[weights], std::uint64_t{0});
    QCOMPARE(timeline.liveAfter(2)[activations], 6 * kMiB);
    QCOMPARE(timeline.liveAfter(3)[activations], std::uint64_t{0});
    QCOMPARE(timeline.liveAfter(4)[activations], 12 * kMiB);
    QCOMPARE(timeline.liveAfter(5)[weights], 8 * kMiB);
    QCOMPARE(timeline.peakLiveBytes(), 20 * kMiB);
    QCOMPARE(timeline.peakLiveIndex(), 4);
    QCOMPARE(timeline.stepStarts().size(), std::size_t{2});
    QCOMPARE(timeline.stepStarts()[1].index, 3);
    QCOMPARE(timeline.stepStarts()[1].step, std::int64_t{2});
    QVERIFY2(timeline.summaryText().contains("steps 1–2"), qPrintable(timeline.summaryText()));
    QVERIFY(timeline.summaryText().contains("20.00 MiB at step 2"));
    // Drawn: at the peak's column the bottom of the stack is weights, above it activations.
    const QImage image = timeline.grab().toImage();
    const QRect plot = timeline.plotRect();
    const int x = plot.left() + 4 * plot.width() / 6 + 2;
    const auto colourAt = [&](double bytes) {
      const double top = 20.0 * kMiB * 1.05;
      return image.pixelColor(x, static_cast<int>(plot.bottom() - bytes / top * plot.height()));
    };
    QCOMPARE(colourAt(4.0 * kMiB), widgets::blockKindColor(BlockKind::Weights));
    QCOMPARE(colourAt(14.0 * kMiB), widgets::blockKindColor(BlockKind::Activations));
    // After the first step's activations are freed (event 3): weights live, the reserved line
    // (red) above them at 20 MiB — the gap is the cache.
    const int afterFree = plot.left() + 3 * plot.width() / 6 + 2;
    const double top = 20.0 * kMiB * 1.05;
    const QColor line = image.pixelColor(
        afterFree, static_cast<int>(plot.bottom() - 20.0 * kMiB / top * plot.height()));
    QVERIFY2(line.red() > 150 && line.green() < 90, qPrintable(line.name()));
    QCOMPARE(image.pixelColor(afterFree,
                              static_cast<int>(plot.bottom() - 12.0 * kMiB / top * plot.height())),
             timeline.palette().color(QPalette::Base));
    // A snapshot without a trace says so instead of drawing an empty chart.
    timeline.setSnapshot(widgets::parseMemorySnapshot(fixtureSnapshot()));
    QVERIFY(!timeline.hasTrace());
    QVERIFY(timeline.summaryText().contains("no allocation trace"));
  }

  void tooltipNamesSizeRequestedOwnerAndStep() {
    widgets::MemoryMapView view;
    view.resize(900, 400);
    view.setSnapshot(widgets::parseMemorySnapshot(fixtureSnapshot()));
    const QRectF rect = view.rectsOf({1, 0}).at(0);
    const auto hit = view.blockAt(rect.center().toPoint());
    QVERIFY(hit.has_value());
    QCOMPARE(hit->segment, 1);
    QCOMPARE(hit->block, 0);
    const QString tip = view.tooltipFor(*hit);
    QVERIFY2(tip.contains("activations") && tip.contains("96.00 MiB") &&
                 tip.contains("requested 90.00 MiB") && tip.contains("allocated at step 117"),
             qPrintable(tip));
    const QString freeTip = view.tooltipFor({2, 0});
    QVERIFY2(freeTip.contains("free") && !freeTip.contains("step"), qPrintable(freeTip));
  }

  void frozenMapIgnoresLiveSnapshots() {
    MemoryMapPanel panel;
    panel.handleEvent({1000, SnapshotEvent{fixtureSnapshot()}});
    QVERIFY(panel.hasSnapshot());
    QCOMPARE(panel.view()->snapshot().blockCount(), std::size_t{6});
    panel.setFrozen(true);
    QVERIFY(panel.freezeAction()->isChecked());
    nlohmann::json smaller = fixtureSnapshot();
    smaller["segments"].erase(2);
    panel.handleEvent({3000, SnapshotEvent{smaller}});
    QCOMPARE(panel.view()->snapshot().blockCount(), std::size_t{6});
    panel.setFrozen(false);
    panel.handleEvent({5000, SnapshotEvent{smaller}});
    QCOMPARE(panel.view()->snapshot().blockCount(), std::size_t{5});
    QVERIFY(panel.legendText(BlockKind::Weights).contains("256.00 MiB"));
  }

  void savedSnapshotsReopenFrozen() {
    QTemporaryDir dir;
    const QString path = dir.filePath("snapshot.json");
    MemoryMapPanel live;
    QVERIFY(!live.saveSnapshot(path).isEmpty());  // nothing to save yet
    live.handleEvent({1000, SnapshotEvent{fixtureSnapshot()}});
    QCOMPARE(live.saveSnapshot(path), QString());
    MemoryMapPanel reopened;
    QCOMPARE(reopened.openSnapshot(path), QString());
    QVERIFY(reopened.isFrozen());
    QCOMPARE(reopened.view()->snapshot().raw, fixtureSnapshot());  // device, extra keys kept
    QVERIFY(reopened.summaryText().contains("from " + path));
    QFile garbage(dir.filePath("garbage.json"));
    QVERIFY(garbage.open(QIODevice::WriteOnly));
    garbage.write("{\"segments\": 3}");
    garbage.close();
    QVERIFY(reopened.openSnapshot(garbage.fileName()).contains("segments"));
  }

  void asksForSnapshotsOnlyWhileARunIsActive() {
    MemoryMapPanel panel;
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QSignalSpy requests(&panel, &MemoryMapPanel::commandRequested);
    QVERIFY(!requests.wait(MemoryMapPanel::kRefreshIntervalMs + 300));  // idle: nothing
    panel.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    QVERIFY(requests.wait(MemoryMapPanel::kRefreshIntervalMs + 500));
    const auto command = requests.takeFirst().at(0).value<Command>();
    QVERIFY(std::holds_alternative<RequestSnapshotCommand>(command));
    panel.setFrozen(true);
    requests.clear();
    QVERIFY(!requests.wait(MemoryMapPanel::kRefreshIntervalMs + 300));
  }

  // Before any snapshot the timeline says there is none yet, once (in its plot), and blames no
  // recording or other tool; a snapshot with a trace shows the note below the plot.
  void timelineSaysThereIsNoSnapshotYetOnce() {
    MemoryMapPanel panel;
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.handleEvent({0, HelloEvent{kProtocolVersion, "test", "cpu", {}}});
    const auto* timeline = panel.findChild<widgets::AllocationTimeline*>("allocationTimeline");
    const auto* note = panel.findChild<QLabel*>("allocationTimelineNote");
    QVERIFY(timeline && note);
    QVERIFY2(timeline->summaryText().contains("there is none yet"),
             qPrintable(timeline->summaryText()));
    QVERIFY(!timeline->summaryText().contains("older recording"));
    QVERIFY(note->isHidden());
    QVERIFY(panel.showSnapshot(h100Snapshot(), QStringLiteral("test")).isEmpty());
    QVERIFY(timeline->hasTrace());
    QVERIFY(note->isVisible());
    QVERIFY(note->text().contains("allocations and frees"));
  }

  // A run on several GPUs sends a snapshot per card (engine/Supervisor.h): a card selector appears
  // once a second card has sent one, named as the dashboard names cards, and switching it shows
  // that card's segments. A frozen page keeps every card's; a new run forgets them.
  void eachCardsSnapshotIsShownThroughACardSelector() {
    MemoryMapPanel panel;
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QComboBox* selector = panel.cardSelector();
    nlohmann::json smaller = fixtureSnapshot();
    smaller["segments"].erase(2);
    panel.handleEvent({1000, SnapshotEvent{fixtureSnapshot(), 1}});
    QVERIFY(!selector->isVisibleTo(&panel));  // one card: nothing to choose
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{3});
    panel.handleEvent({1010, SnapshotEvent{smaller, 0}});
    QVERIFY(selector->isVisibleTo(&panel));
    QCOMPARE(selector->count(), 2);
    QCOMPARE(selector->currentText(), QStringLiteral("GPU 1"));  // the first heard from
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{3});
    QVERIFY2(panel.summaryText().contains("GPU 1, live"), qPrintable(panel.summaryText()));

    selector->setFocus();
    QTest::keyClick(selector, Qt::Key_Down);  // the user picks GPU 0
    QCOMPARE(panel.shownCard(), std::optional<int>(0));
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{2});
    QVERIFY2(panel.summaryText().contains("GPU 0, live"), qPrintable(panel.summaryText()));

    panel.setFrozen(true);  // both cards stay as they were
    panel.handleEvent({3000, SnapshotEvent{fixtureSnapshot(), 0}});
    panel.handleEvent({0, StateEvent{RunState::Starting, 0, ""}});
    QTest::keyClick(selector, Qt::Key_Up);
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{3});
    QTest::keyClick(selector, Qt::Key_Down);
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{2});
    panel.setFrozen(false);
    panel.handleEvent({0, StateEvent{RunState::Starting, 0, ""}});  // the next run
    QVERIFY(!selector->isVisibleTo(&panel));
    QCOMPARE(selector->count(), 0);
    panel.handleEvent({1010, SnapshotEvent{smaller, 0}});
    panel.handleEvent({1010, SnapshotEvent{fixtureSnapshot(), 1}});
    QCOMPARE(panel.shownCard(), std::optional<int>(0));  // chosen afresh: the first heard from
    panel.handleEvent({1000, SnapshotEvent{fixtureSnapshot()}});  // a run on one device
    QVERIFY(!selector->isVisibleTo(&panel));
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{3});
  }

  // A recording of a run on several GPUs shows the last snapshot of each card, frozen; one that
  // cannot be read is named by its card and leaves the page as it was; live snapshots, once the
  // page is unfrozen, replace the recording's cards.
  void aRecordingShowsTheLastSnapshotOfEachCard() {
    MemoryMapPanel panel;
    nlohmann::json smaller = fixtureSnapshot();
    smaller["segments"].erase(2);
    nlohmann::json smallest = smaller;
    smallest["segments"].erase(1);
    QCOMPARE(panel.showSnapshots({SnapshotEvent{fixtureSnapshot(), 2}, SnapshotEvent{smaller, 3},
                                  SnapshotEvent{smallest, 2}},
                                 QStringLiteral("from the recording r.jsonl")),
             QString());
    QVERIFY(panel.isFrozen());
    QCOMPARE(panel.cardSelector()->count(), 2);
    QCOMPARE(panel.cardSelector()->itemText(1), QStringLiteral("GPU 3"));
    QCOMPARE(panel.shownCard(), std::optional<int>(2));
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{1});  // card 2's last
    QVERIFY(panel.summaryText().contains("GPU 2, from the recording r.jsonl"));
    const QString problem = panel.showSnapshots(
        {SnapshotEvent{smaller, 0}, SnapshotEvent{{{"segments", 3}}, 1}}, QStringLiteral("x"));
    QVERIFY2(problem.contains("GPU 1's snapshot"), qPrintable(problem));
    QCOMPARE(panel.cardSelector()->count(), 2);  // as it was
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{1});
    // Unfrozen, the live run's cards replace the recording's.
    panel.setFrozen(false);
    panel.handleEvent({1000, SnapshotEvent{smaller, 0}});
    QCOMPARE(panel.cardSelector()->count(), 1);
    QCOMPARE(panel.shownCard(), std::optional<int>(0));
    QCOMPARE(panel.view()->snapshot().segments.size(), std::size_t{2});
  }

  // The app sends no request it knows will be refused: a CPU run has no allocator to snapshot.
  void asksNothingOfACpuRun() {
    MemoryMapPanel panel;
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QSignalSpy requests(&panel, &MemoryMapPanel::commandRequested);
    panel.handleEvent({0, HelloEvent{kProtocolVersion, "test", "hip-nvidia", {}}});
    panel.handleEvent({0, ToggleAppliedEvent{Toggle::CpuFallback, true, 0}});
    panel.handleEvent({0, StateEvent{RunState::Running, 0, ""}});
    QVERIFY(panel.summaryText().contains("computes on the CPU"));
    QVERIFY(!requests.wait(MemoryMapPanel::kRefreshIntervalMs + 300));
    panel.handleEvent({0, ToggleAppliedEvent{Toggle::CpuFallback, false, 4}});  // to the GPU
    QVERIFY(requests.wait(MemoryMapPanel::kRefreshIntervalMs + 500));
  }
};

QTEST_MAIN(TestMemoryMap)
#include "test_memory_map.moc"
