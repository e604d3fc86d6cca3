// widgets/MemoryMapView.cpp — layout of blocks on wrapped rows, painting, hit testing, tooltips.
#include "widgets/MemoryMapView.h"

#include <QHelpEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>

#include "widgets/Format.h"

namespace lorascope::widgets {

MemoryMapView::MemoryMapView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  setMinimumHeight(kBaseRows * kRowHeightPx);
}

QSize MemoryMapView::sizeHint() const {
  return {640, rows_ * kRowHeightPx};
}

void MemoryMapView::setSnapshot(MemorySnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  flatBlocks_.clear();
  blockStart_.clear();
  segmentStart_.clear();
  std::uint64_t offset = 0;
  for (std::size_t s = 0; s < snapshot_.segments.size(); ++s) {
    const SnapshotSegment& seg = snapshot_.segments[s];
    segmentStart_.push_back(offset);
    std::uint64_t inSegment = 0;
    for (std::size_t b = 0; b < seg.blocks.size(); ++b) {
      flatBlocks_.push_back({static_cast<int>(s), static_cast<int>(b)});
      blockStart_.push_back(offset + inSegment);
      inSegment += seg.blocks[b].sizeBytes;
    }
    offset += std::max(seg.totalBytes, inSegment);
  }
  totalBytes_ = offset;
  relayout();
}

void MemoryMapView::setZoomLevel(int level) {
  level = std::clamp(level, 0, kMaxZoomLevel);
  if (level == zoomLevel_) {
    return;
  }
  zoomLevel_ = level;
  relayout();
  emit zoomLevelChanged(level);
}

void MemoryMapView::relayout() {
  if (zoomLevel_ == 0) {  // the whole snapshot fills the height it is given
    fitRows_ = std::max(kBaseRows, height() / kRowHeightPx);
  }
  rows_ = fitRows_ << zoomLevel_;
  rowBytes_ = std::max<std::uint64_t>(1, (totalBytes_ + rows_ - 1) / rows_);
  setMinimumHeight((zoomLevel_ == 0 ? kBaseRows : rows_) * kRowHeightPx);
  pieces_.clear();
  segmentBars_.clear();
  const double width = std::max(1, this->width());
  const double pxPerByte = width / static_cast<double>(rowBytes_);
  auto xOf = [&](std::uint64_t offsetInRow) {
    return static_cast<double>(offsetInRow) * pxPerByte;
  };
  for (std::size_t i = 0; i < flatBlocks_.size(); ++i) {
    const BlockRef ref = flatBlocks_[i];
    const std::uint64_t size = snapshot_.segments[static_cast<std::size_t>(ref.segment)]
                                   .blocks[static_cast<std::size_t>(ref.block)]
                                   .sizeBytes;
    if (size == 0) {
      continue;
    }
    const std::uint64_t start = blockStart_[i];
    const std::uint64_t end = start + size;
    for (std::uint64_t row = start / rowBytes_; row * rowBytes_ < end; ++row) {
      const std::uint64_t rowStart = row * rowBytes_;
      const double x0 = xOf(std::max(start, rowStart) - rowStart);
      const double x1 = xOf(std::min(end, rowStart + rowBytes_) - rowStart);
      pieces_.push_back(
          {QRectF(x0, static_cast<double>(row) * kRowHeightPx, x1 - x0, kRowHeightPx - 2),
           static_cast<std::uint32_t>(i)});
    }
  }
  for (std::uint64_t start : segmentStart_) {
    const std::uint64_t row = start / rowBytes_;
    segmentBars_.emplace_back(xOf(start - row * rowBytes_), static_cast<double>(row) * kRowHeightPx,
                              2.0, kRowHeightPx - 2);
  }
  updateGeometry();
  update();
}

void MemoryMapView::paintEvent(QPaintEvent* event) {
  QPainter painter(this);
  painter.fillRect(event->rect(), palette().base());
  const QRectF dirty = event->rect();
  std::array<QColor, kBlockKindCount> colors;
  for (int k = 0; k < kBlockKindCount; ++k) {
    colors[static_cast<std::size_t>(k)] = blockKindColor(static_cast<BlockKind>(k));
  }
  const QColor edge = palette().color(QPalette::Base);
  for (const Piece& piece : pieces_) {
    if (piece.rect.bottom() < dirty.top() || piece.rect.top() > dirty.bottom()) {
      continue;
    }
    const BlockRef ref = flatBlocks_[piece.flatBlock];
    const BlockKind kind = snapshot_.segments[static_cast<std::size_t>(ref.segment)]
                               .blocks[static_cast<std::size_t>(ref.block)]
                               .kind;
    painter.fillRect(piece.rect, colors[static_cast<std::size_t>(kind)]);
    if (piece.rect.width() >= 4.0) {  // a hairline between neighbours that are wide enough
      painter.fillRect(QRectF(piece.rect.right() - 1.0, piece.rect.top(), 1.0, piece.rect.height()),
                       edge);
    }
  }
  const QColor bar = palette().color(QPalette::WindowText);
  for (const QRectF& r : segmentBars_) {
    painter.fillRect(r, bar);
  }
}

void MemoryMapView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  relayout();
}

std::optional<MemoryMapView::BlockRef> MemoryMapView::blockAt(QPoint position) const {
  if (blockStart_.empty() || position.x() < 0 || position.y() < 0 || width() <= 0) {
    return std::nullopt;
  }
  const auto row = static_cast<std::uint64_t>(position.y() / kRowHeightPx);
  const double fraction = static_cast<double>(position.x()) / width();
  const auto offset =
      row * rowBytes_ + static_cast<std::uint64_t>(fraction * static_cast<double>(rowBytes_));
  if (offset >= totalBytes_) {
    return std::nullopt;
  }
  const auto it = std::upper_bound(blockStart_.begin(), blockStart_.end(), offset);
  if (it == blockStart_.begin()) {
    return std::nullopt;
  }
  const std::size_t flat = static_cast<std::size_t>(it - blockStart_.begin()) - 1;
  const BlockRef ref = flatBlocks_[flat];
  const SnapshotBlock& b = snapshot_.segments[static_cast<std::size_t>(ref.segment)]
                               .blocks[static_cast<std::size_t>(ref.block)];
  if (offset >= blockStart_[flat] + b.sizeBytes) {
    return std::nullopt;  // the unlisted tail of a segment
  }
  return ref;
}

QString MemoryMapView::tooltipFor(BlockRef ref) const {
  const SnapshotSegment& seg = snapshot_.segments.at(static_cast<std::size_t>(ref.segment));
  const SnapshotBlock& b = seg.blocks.at(static_cast<std::size_t>(ref.block));
  QStringList lines;
  lines << tr("<b>%1</b> · %2").arg(blockKindName(b.kind), formatBytes(b.sizeBytes));
  if (b.kind != BlockKind::Free && b.kind != BlockKind::InactiveSplit) {
    lines << tr("requested %1").arg(formatBytes(b.requestedBytes));
    lines << (b.step ? tr("allocated at step %1").arg(*b.step) : tr("allocated at step n/a"));
  }
  lines << tr("state %1").arg(QString::fromStdString(b.state));
  lines << tr("address 0x%1").arg(b.address, 0, 16);
  lines << tr("segment %1 (%2, %3)")
               .arg(ref.segment)
               .arg(QString::fromStdString(seg.segmentType), formatBytes(seg.totalBytes));
  return lines.join(QStringLiteral("<br>"));
}

std::vector<QRectF> MemoryMapView::rectsOf(BlockRef ref) const {
  std::vector<QRectF> rects;
  for (const Piece& piece : pieces_) {
    const BlockRef r = flatBlocks_[piece.flatBlock];
    if (r.segment == ref.segment && r.block == ref.block) {
      rects.push_back(piece.rect);
    }
  }
  return rects;
}

bool MemoryMapView::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    const auto* help = static_cast<QHelpEvent*>(event);
    if (const auto ref = blockAt(help->pos())) {
      QToolTip::showText(help->globalPos(), tooltipFor(*ref), this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(event);
}

void MemoryMapView::wheelEvent(QWheelEvent* event) {
  if (event->modifiers() & Qt::ControlModifier) {
    setZoomLevel(zoomLevel_ + (event->angleDelta().y() > 0 ? 1 : -1));
    event->accept();
    return;
  }
  QWidget::wheelEvent(event);
}

}  // namespace lorascope::widgets
