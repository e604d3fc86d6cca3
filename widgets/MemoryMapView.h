// widgets/MemoryMapView.h — the allocator's segments and blocks, grouped by owner.
//
// One row per segment, its blocks to scale inside it; a label column gives the segment's size and
// pool. Rows are grouped by the owner that holds most of the segment's allocated bytes (segments
// with no live block last, as "free"), each group under a header with its segment count and bytes.
// So the ~300 segments of a real run read as rows, not as hair-thin lines of one byte line. A row's
// length is to scale too: the largest segment fills the width and a 2 MiB one is a short bar, but
// never shorter than kMinSegmentBarPx, so that its blocks stay there to hover and zoom into.
// Zoom widens the bars (each level doubles them, up to kMaxZoomLevel; the view scrolls), and
// zoomToBlock() picks the level at which one block is wide enough to see and point at. Layout is
// computed once per snapshot, size or zoom change; painting only fills the rectangles in view.
#pragma once

#include <QRectF>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

#include "widgets/MemorySnapshot.h"

namespace lorascope::widgets {

class MemoryMapView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRowHeightPx = 18;
  static constexpr int kHeaderHeightPx = 22;
  static constexpr int kLabelWidthPx = 150;
  static constexpr int kMaxZoomLevel = 13;          // 8192 x: the widest a QWidget may be
  static constexpr double kBlockMinWidthPx = 24.0;  // zoomToBlock's target width
  static constexpr double kMinSegmentBarPx = 16.0;  // the shortest row at zoom 0 (2× per level)

  explicit MemoryMapView(QWidget* parent = nullptr);

  void setSnapshot(MemorySnapshot snapshot);
  const MemorySnapshot& snapshot() const { return snapshot_; }

  int zoomLevel() const { return zoomLevel_; }

  struct BlockRef {
    int segment = 0;
    int block = 0;
  };
  // A group of rows: the segments whose allocated bytes are mostly `kind`'s (Free: none live).
  struct Group {
    BlockKind kind = BlockKind::Free;
    std::vector<int> segments;        // indexes into snapshot().segments, by address
    std::uint64_t reservedBytes = 0;  // the segments' sizes
    std::uint64_t ownedBytes = 0;     // bytes of the group's owner in them
  };
  const std::vector<Group>& groups() const { return groups_; }
  QString groupHeader(const Group& group) const;
  // The segment's row: its bar (the blocks' area, right of the label column), as long as the
  // segment's share of the largest segment, at least kMinSegmentBarPx (times the zoom).
  QRectF segmentBar(int segment) const;

  std::optional<BlockRef> blockAt(QPoint position) const;
  QString tooltipFor(BlockRef ref) const;
  // The rectangle a block is drawn as (empty when it has no bytes).
  std::vector<QRectF> rectsOf(BlockRef ref) const;
  // Zooms until the block is at least kBlockMinWidthPx wide (or to the last level) and returns
  // its rectangle there, for the scroll area to bring into view.
  QRectF zoomToBlock(BlockRef ref);

  QSize sizeHint() const override;

 public slots:
  void setZoomLevel(int level);
  void zoomIn() { setZoomLevel(zoomLevel_ + 1); }
  void zoomOut() { setZoomLevel(zoomLevel_ - 1); }

 signals:
  void zoomLevelChanged(int level);
  // A double click on a block: the panel zooms to it and scrolls it into view.
  void blockActivated(lorascope::widgets::MemoryMapView::BlockRef ref);

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;            // tooltips
  void wheelEvent(QWheelEvent* event) override;  // Ctrl+wheel zooms
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  struct Row {
    double y = 0;
    int segment = -1;  // -1: a group header
    int group = 0;
  };
  void relayout();
  double barWidth() const;  // at the current zoom
  int rowIndexAt(double y) const;

  MemorySnapshot snapshot_;
  std::vector<Group> groups_;
  std::vector<Row> rows_;                               // in drawing order
  std::vector<double> segmentY_;                        // segment → its row's top
  std::vector<std::vector<std::uint64_t>> blockStart_;  // segment → block → offset in segment
  std::uint64_t largestSegmentBytes_ = 0;               // its bar is the full width
  int baseBarWidth_ = 480;  // the bar width at zoom 0: what the viewport leaves
  int zoomLevel_ = 0;
};

}  // namespace lorascope::widgets
