// widgets/MemoryMapView.cpp — grouping segments by owner, row layout, painting, hit testing,
// tooltips and zoom.
#include "widgets/MemoryMapView.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>

#include "widgets/DisplayText.h"

namespace lorascope::widgets {
namespace {

bool isFreeKind(BlockKind kind) {
  return kind == BlockKind::Free || kind == BlockKind::InactiveSplit;
}

// The owner holding most of the segment's allocated bytes; Free when nothing in it is live.
BlockKind dominantKind(const SnapshotSegment& segment) {
  std::array<std::uint64_t, kBlockKindCount> bytes{};
  for (const SnapshotBlock& block : segment.blocks) {
    if (!isFreeKind(block.kind)) {
      bytes[static_cast<std::size_t>(block.kind)] += block.sizeBytes;
    }
  }
  const auto most = std::max_element(bytes.begin(), bytes.end());
  return *most == 0 ? BlockKind::Free : static_cast<BlockKind>(most - bytes.begin());
}

}  // namespace

MemoryMapView::MemoryMapView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

QSize MemoryMapView::sizeHint() const {
  const double height = rows_.empty() ? kRowHeightPx : rows_.back().y + kRowHeightPx;
  return {kLabelWidthPx + static_cast<int>(barWidth()), static_cast<int>(height)};
}

void MemoryMapView::setSnapshot(MemorySnapshot snapshot) {
  snapshot_ = std::move(snapshot);
  groups_.clear();
  blockStart_.clear();
  largestSegmentBytes_ = 0;
  for (const SnapshotSegment& seg : snapshot_.segments) {
    largestSegmentBytes_ = std::max(largestSegmentBytes_, seg.totalBytes);
  }
  std::array<std::vector<int>, kBlockKindCount> byKind;
  for (std::size_t s = 0; s < snapshot_.segments.size(); ++s) {
    const SnapshotSegment& seg = snapshot_.segments[s];
    byKind[static_cast<std::size_t>(dominantKind(seg))].push_back(static_cast<int>(s));
    std::vector<std::uint64_t> starts;
    std::uint64_t offset = 0;
    for (const SnapshotBlock& block : seg.blocks) {
      starts.push_back(offset);
      offset += block.sizeBytes;
    }
    blockStart_.push_back(std::move(starts));
  }
  for (int k = 0; k < kBlockKindCount; ++k) {
    const auto kind = static_cast<BlockKind>(k);
    if (byKind[static_cast<std::size_t>(k)].empty()) {
      continue;
    }
    Group group;
    group.kind = kind;
    group.segments = std::move(byKind[static_cast<std::size_t>(k)]);
    for (const int s : group.segments) {
      const SnapshotSegment& seg = snapshot_.segments[static_cast<std::size_t>(s)];
      group.reservedBytes += seg.totalBytes;
      for (const SnapshotBlock& block : seg.blocks) {
        if (block.kind == kind || (kind == BlockKind::Free && isFreeKind(block.kind))) {
          group.ownedBytes += block.sizeBytes;
        }
      }
    }
    groups_.push_back(std::move(group));
  }
  relayout();
}

QString MemoryMapView::groupHeader(const Group& group) const {
  const QString segments =
      group.segments.size() == 1 ? tr("1 segment") : tr("%1 segments").arg(group.segments.size());
  if (group.kind == BlockKind::Free) {
    // What the cache was for ("188 last held activations (4.40 GiB)"): only the segments of
    // this group, the ones with no live block, can be cached for an owner.
    QStringList lastHeld;
    const auto cached = snapshot_.cachedByOwner();
    for (int k = 0; k < kBlockKindCount; ++k) {
      const MemorySnapshot::Cached& c = cached[static_cast<std::size_t>(k)];
      if (c.segments > 0) {
        lastHeld << tr("%1 last held %2 (%3)")
                        .arg(c.segments)
                        .arg(blockKindName(static_cast<BlockKind>(k)), formatBytes(c.bytes));
      }
    }
    return tr("no live block · %1, %2 cached (releasable)%3")
        .arg(segments, formatBytes(group.reservedBytes),
             lastHeld.isEmpty() ? QString()
                                : QStringLiteral(": ") + lastHeld.join(QStringLiteral(", ")));
  }
  return tr("mostly %1 · %2, %3 reserved, %4 of it %1")
      .arg(blockKindName(group.kind), segments, formatBytes(group.reservedBytes),
           formatBytes(group.ownedBytes));
}

double MemoryMapView::barWidth() const {
  return static_cast<double>(baseBarWidth_) * std::ldexp(1.0, zoomLevel_);
}

void MemoryMapView::setZoomLevel(int level) {
  level = std::clamp(level, 0, kMaxZoomLevel);
  if (level == zoomLevel_) {
    return;
  }
  if (zoomLevel_ == 0) {  // the width at zoom 0 is what the viewport gives: keep it as the base
    baseBarWidth_ = std::max(120, width() - kLabelWidthPx);
  }
  zoomLevel_ = level;
  relayout();
  emit zoomLevelChanged(level);
}

void MemoryMapView::relayout() {
  if (zoomLevel_ == 0) {
    baseBarWidth_ = std::max(120, width() - kLabelWidthPx);
  }
  rows_.clear();
  segmentY_.assign(snapshot_.segments.size(), 0.0);
  double y = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    rows_.push_back({y, -1, static_cast<int>(g)});
    y += kHeaderHeightPx;
    for (const int s : groups_[g].segments) {
      rows_.push_back({y, s, static_cast<int>(g)});
      segmentY_[static_cast<std::size_t>(s)] = y;
      y += kRowHeightPx;
    }
  }
  setMinimumHeight(std::max(kRowHeightPx, static_cast<int>(y)));
  setMinimumWidth(zoomLevel_ == 0 ? kLabelWidthPx + 120
                                  : kLabelWidthPx + static_cast<int>(std::ceil(barWidth())));
  updateGeometry();
  update();
}

QRectF MemoryMapView::segmentBar(int segment) const {
  const double y = segmentY_.at(static_cast<std::size_t>(segment));
  const std::uint64_t bytes = snapshot_.segments[static_cast<std::size_t>(segment)].totalBytes;
  const double share = largestSegmentBytes_ == 0
                           ? 1.0
                           : static_cast<double>(bytes) / static_cast<double>(largestSegmentBytes_);
  const double width = std::min(
      barWidth(), std::max(kMinSegmentBarPx * std::ldexp(1.0, zoomLevel_), barWidth() * share));
  return {static_cast<double>(kLabelWidthPx), y, width, kRowHeightPx - 3.0};
}

std::vector<QRectF> MemoryMapView::rectsOf(BlockRef ref) const {
  const SnapshotSegment& seg = snapshot_.segments.at(static_cast<std::size_t>(ref.segment));
  const SnapshotBlock& block = seg.blocks.at(static_cast<std::size_t>(ref.block));
  if (block.sizeBytes == 0 || seg.totalBytes == 0) {
    return {};
  }
  const QRectF bar = segmentBar(ref.segment);
  const double pxPerByte = bar.width() / static_cast<double>(seg.totalBytes);
  const double x0 =
      bar.left() +
      static_cast<double>(
          blockStart_[static_cast<std::size_t>(ref.segment)][static_cast<std::size_t>(ref.block)]) *
          pxPerByte;
  return {QRectF(x0, bar.top(), static_cast<double>(block.sizeBytes) * pxPerByte, bar.height())};
}

QRectF MemoryMapView::zoomToBlock(BlockRef ref) {
  while (zoomLevel_ < kMaxZoomLevel) {
    const std::vector<QRectF> rects = rectsOf(ref);
    if (rects.empty() || rects.front().width() >= kBlockMinWidthPx) {
      break;
    }
    setZoomLevel(zoomLevel_ + 1);
  }
  const std::vector<QRectF> rects = rectsOf(ref);
  return rects.empty() ? QRectF() : rects.front();
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
  const QColor text = palette().color(QPalette::WindowText);
  const QColor frame = palette().color(QPalette::Mid);
  const auto first = static_cast<std::size_t>(std::max(0, rowIndexAt(dirty.top())));
  for (std::size_t r = first; r < rows_.size() && rows_[r].y <= dirty.bottom(); ++r) {
    const Row& row = rows_[r];
    if (row.segment < 0) {  // a group header, across the whole width
      const Group& group = groups_[static_cast<std::size_t>(row.group)];
      const QRectF band(dirty.left(), row.y, dirty.width(), kHeaderHeightPx);
      painter.fillRect(band, palette().alternateBase());
      painter.fillRect(QRectF(dirty.left() + 4, row.y + 6, 10, 10),
                       colors[static_cast<std::size_t>(group.kind)]);
      painter.setPen(text);
      QFont bold = font();
      bold.setBold(true);
      painter.setFont(bold);
      painter.drawText(
          QRectF(dirty.left() + 20, row.y, std::max(dirty.width(), 400.0) - 24, kHeaderHeightPx),
          Qt::AlignLeft | Qt::AlignVCenter, groupHeader(group));
      painter.setFont(font());
      continue;
    }
    const SnapshotSegment& seg = snapshot_.segments[static_cast<std::size_t>(row.segment)];
    if (dirty.left() < kLabelWidthPx) {
      painter.setPen(text);
      painter.drawText(
          QRectF(4, row.y, kLabelWidthPx - 8, kRowHeightPx - 3), Qt::AlignRight | Qt::AlignVCenter,
          tr("%1 %2").arg(formatBytes(seg.totalBytes), QString::fromStdString(seg.segmentType)));
    }
    const QRectF bar = segmentBar(row.segment);
    const double pxPerByte =
        seg.totalBytes == 0 ? 0.0 : bar.width() / static_cast<double>(seg.totalBytes);
    const auto& starts = blockStart_[static_cast<std::size_t>(row.segment)];
    for (std::size_t b = 0; b < seg.blocks.size(); ++b) {
      const SnapshotBlock& block = seg.blocks[b];
      const double x0 = bar.left() + static_cast<double>(starts[b]) * pxPerByte;
      const double w = static_cast<double>(block.sizeBytes) * pxPerByte;
      if (x0 > dirty.right() || x0 + w < dirty.left() || w <= 0) {
        continue;
      }
      // At least a pixel: a block narrower than that is still there to hover.
      const QRectF rect(x0, bar.top(), std::max(w, 1.0), bar.height());
      painter.fillRect(rect, colors[static_cast<std::size_t>(block.kind)]);
      if (w >= 4.0) {  // a hairline between neighbours that are wide enough
        painter.fillRect(QRectF(rect.right() - 1.0, rect.top(), 1.0, rect.height()), edge);
      }
    }
    painter.setPen(frame);
    painter.drawRect(bar.adjusted(0, 0, -1, 0));
  }
}

int MemoryMapView::rowIndexAt(double y) const {
  const auto it = std::upper_bound(rows_.begin(), rows_.end(), y,
                                   [](double value, const Row& row) { return value < row.y; });
  return static_cast<int>(it - rows_.begin()) - 1;
}

std::optional<MemoryMapView::BlockRef> MemoryMapView::blockAt(QPoint position) const {
  const int r = rowIndexAt(position.y());
  if (r < 0 || rows_[static_cast<std::size_t>(r)].segment < 0) {
    return std::nullopt;
  }
  const int segment = rows_[static_cast<std::size_t>(r)].segment;
  const QRectF bar = segmentBar(segment);
  if (!bar.contains(position)) {
    return std::nullopt;
  }
  const SnapshotSegment& seg = snapshot_.segments[static_cast<std::size_t>(segment)];
  const double fraction = (position.x() - bar.left()) / bar.width();
  const auto offset = static_cast<std::uint64_t>(fraction * static_cast<double>(seg.totalBytes));
  const auto& starts = blockStart_[static_cast<std::size_t>(segment)];
  const auto it = std::upper_bound(starts.begin(), starts.end(), offset);
  if (it == starts.begin()) {
    return std::nullopt;
  }
  const auto block = static_cast<std::size_t>(it - starts.begin()) - 1;
  if (offset >= starts[block] + seg.blocks[block].sizeBytes) {
    return std::nullopt;  // the unlisted tail of a segment
  }
  return BlockRef{segment, static_cast<int>(block)};
}

QString MemoryMapView::tooltipFor(BlockRef ref) const {
  const SnapshotSegment& seg = snapshot_.segments.at(static_cast<std::size_t>(ref.segment));
  const SnapshotBlock& b = seg.blocks.at(static_cast<std::size_t>(ref.block));
  QStringList lines;
  lines << tr("<b>%1</b> · %2").arg(blockKindName(b.kind), formatBytes(b.sizeBytes));
  if (!isFreeKind(b.kind)) {
    lines << tr("requested %1").arg(formatBytes(b.requestedBytes));
    lines << (b.step ? tr("allocated at step %1").arg(*b.step) : tr("allocated at step n/a"));
  }
  lines << tr("state %1").arg(QString::fromStdString(b.state));
  lines << tr("address 0x%1").arg(b.address, 0, 16);
  lines << tr("segment %1 (%2, %3), block %4 of %5")
               .arg(ref.segment)
               .arg(QString::fromStdString(seg.segmentType), formatBytes(seg.totalBytes))
               .arg(ref.block + 1)
               .arg(seg.blocks.size());
  lines << tr("double-click: zoom to this block");
  return lines.join(QStringLiteral("<br>"));
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
  if (event->type() == QEvent::Resize && zoomLevel_ == 0) {
    const bool changed = baseBarWidth_ != std::max(120, width() - kLabelWidthPx);
    const bool handled = QWidget::event(event);
    if (changed) {
      relayout();
    }
    return handled;
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

void MemoryMapView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (const auto ref = blockAt(event->position().toPoint())) {
    emit blockActivated(*ref);
    event->accept();
    return;
  }
  QWidget::mouseDoubleClickEvent(event);
}

}  // namespace lorascope::widgets
