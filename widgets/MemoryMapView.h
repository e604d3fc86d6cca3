// widgets/MemoryMapView.h — the allocator's segments and blocks drawn to scale.
//
// Segments are laid end to end in address order and the byte line is wrapped into rows of equal
// byte width, so every block's area is proportional to its size; a dark bar marks where a segment
// begins. At zoom level 0 the rows fill the view's height; each zoom level doubles them (the
// view grows and scrolls). Layout is computed once
// per snapshot, size or zoom change; painting only fills the precomputed rectangles in view.
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
  static constexpr int kBaseRows = 16;  // the fewest rows at zoom level 0
  static constexpr int kMaxZoomLevel = 10;

  explicit MemoryMapView(QWidget* parent = nullptr);

  void setSnapshot(MemorySnapshot snapshot);
  const MemorySnapshot& snapshot() const { return snapshot_; }

  int zoomLevel() const { return zoomLevel_; }
  std::uint64_t rowBytes() const { return rowBytes_; }

  struct BlockRef {
    int segment = 0;
    int block = 0;
  };
  std::optional<BlockRef> blockAt(QPoint position) const;
  QString tooltipFor(BlockRef ref) const;
  // The rectangles a block is drawn as, one per row it covers.
  std::vector<QRectF> rectsOf(BlockRef ref) const;

  QSize sizeHint() const override;

 public slots:
  void setZoomLevel(int level);
  void zoomIn() { setZoomLevel(zoomLevel_ + 1); }
  void zoomOut() { setZoomLevel(zoomLevel_ - 1); }

 signals:
  void zoomLevelChanged(int level);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;            // tooltips
  void wheelEvent(QWheelEvent* event) override;  // Ctrl+wheel zooms

 private:
  struct Piece {
    QRectF rect;
    std::uint32_t flatBlock = 0;
  };
  void relayout();

  MemorySnapshot snapshot_;
  std::vector<BlockRef> flatBlocks_;         // flat index → (segment, block)
  std::vector<std::uint64_t> blockStart_;    // flat index → offset on the byte line
  std::vector<std::uint64_t> segmentStart_;  // segment → offset on the byte line
  std::vector<Piece> pieces_;                // in row order
  std::vector<QRectF> segmentBars_;
  std::uint64_t totalBytes_ = 0;
  std::uint64_t rowBytes_ = 1;
  int rows_ = kBaseRows;
  int fitRows_ = kBaseRows;  // rows at zoom level 0: as many as the height holds
  int zoomLevel_ = 0;
};

}  // namespace lorascope::widgets
