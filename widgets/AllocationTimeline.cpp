// widgets/AllocationTimeline.cpp — walking the trace back from the snapshot's state, painting the
// stacked live bytes, the reserved line and the step marks.
#include "widgets/AllocationTimeline.h"

#include <QPaintEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <limits>

#include "widgets/DisplayText.h"

namespace lorascope::widgets {
namespace {

constexpr int kAxisWidthPx = 70;
constexpr int kStepLabelHeightPx = 16;
constexpr int kTitleHeightPx = 16;
const QColor kReservedColor(0xd6, 0x27, 0x28);  // the dashboard's "driver used" red

std::int64_t signedBytes(std::uint64_t bytes) {
  return static_cast<std::int64_t>(bytes);
}

}  // namespace

AllocationTimeline::AllocationTimeline(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(kHeightPx);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

const std::array<std::uint64_t, AllocationTimeline::kOwnerCount>& AllocationTimeline::liveAfter(
    int index) const {
  return live_.at(static_cast<std::size_t>(index));
}

std::uint64_t AllocationTimeline::reservedAfter(int index) const {
  return reserved_.at(static_cast<std::size_t>(index));
}

void AllocationTimeline::clear() {
  setSnapshot({});
  hasSnapshot_ = false;
}

void AllocationTimeline::setSnapshot(const MemorySnapshot& snapshot) {
  hasSnapshot_ = true;
  live_.clear();
  reserved_.clear();
  stepStarts_.clear();
  peakLive_ = 0;
  maxReserved_ = 0;
  peakIndex_ = 0;
  peakStep_ = 0;
  inconsistent_ = false;
  const std::vector<TraceEvent>& trace = snapshot.trace;
  if (!trace.empty()) {
    // The state before the first event: the snapshot's state minus every change in the trace.
    const auto byKind = snapshot.bytesByKind();
    std::array<std::int64_t, kOwnerCount> live{};
    for (int k = 0; k < kOwnerCount; ++k) {
      live[static_cast<std::size_t>(k)] = signedBytes(byKind[static_cast<std::size_t>(k)]);
    }
    std::int64_t reserved = signedBytes(snapshot.totalBytes());
    for (auto it = trace.rbegin(); it != trace.rend(); ++it) {
      const auto owner = static_cast<std::size_t>(std::min(static_cast<int>(it->owner), 6));
      switch (it->action) {
        case TraceEvent::Action::Alloc:
          live[owner] -= signedBytes(it->sizeBytes);
          break;
        case TraceEvent::Action::Free:
          live[owner] += signedBytes(it->sizeBytes);
          break;
        case TraceEvent::Action::SegmentAlloc:
          reserved -= signedBytes(it->sizeBytes);
          break;
        case TraceEvent::Action::SegmentFree:
          reserved += signedBytes(it->sizeBytes);
          break;
      }
    }
    std::int64_t lastStep = trace.front().step - 1;
    for (std::size_t i = 0; i < trace.size(); ++i) {
      const TraceEvent& e = trace[i];
      const auto owner = static_cast<std::size_t>(std::min(static_cast<int>(e.owner), 6));
      switch (e.action) {
        case TraceEvent::Action::Alloc:
          live[owner] += signedBytes(e.sizeBytes);
          break;
        case TraceEvent::Action::Free:
          live[owner] -= signedBytes(e.sizeBytes);
          break;
        case TraceEvent::Action::SegmentAlloc:
          reserved += signedBytes(e.sizeBytes);
          break;
        case TraceEvent::Action::SegmentFree:
          reserved -= signedBytes(e.sizeBytes);
          break;
      }
      std::array<std::uint64_t, kOwnerCount> point{};
      std::uint64_t total = 0;
      for (std::size_t k = 0; k < point.size(); ++k) {
        inconsistent_ = inconsistent_ || live[k] < 0;
        point[k] = static_cast<std::uint64_t>(std::max<std::int64_t>(0, live[k]));
        total += point[k];
      }
      inconsistent_ = inconsistent_ || reserved < 0;
      const auto reservedNow = static_cast<std::uint64_t>(std::max<std::int64_t>(0, reserved));
      live_.push_back(point);
      reserved_.push_back(reservedNow);
      maxReserved_ = std::max(maxReserved_, reservedNow);
      if (total > peakLive_) {
        peakLive_ = total;
        peakIndex_ = static_cast<int>(i);
        peakStep_ = e.step;
      }
      if (e.step != lastStep) {
        stepStarts_.push_back({static_cast<int>(i), e.step});
        lastStep = e.step;
      }
    }
  }
  update();
}

QString AllocationTimeline::summaryText() const {
  if (!hasSnapshot_) {
    return tr(
        "Allocation timeline: drawn from the allocator snapshot the map shows; there is "
        "none yet.");
  }
  if (live_.empty()) {
    return tr(
        "Allocation timeline: this snapshot has no allocation trace (an older recording, or "
        "a snapshot saved by another tool without \"device_traces\").");
  }
  const std::int64_t first = stepStarts_.empty() ? 0 : stepStarts_.front().step;
  const std::int64_t last = stepStarts_.empty() ? 0 : stepStarts_.back().step;
  QString text = tr("Allocation timeline: the last %1 allocations and frees (steps %2–%3); live "
                    "peak %4 at step %5; reserved up to %6. Between the live bytes and the "
                    "reserved line is the cache: freed blocks kept for the next step.")
                     .arg(live_.size())
                     .arg(first)
                     .arg(last)
                     .arg(formatBytes(peakLive_))
                     .arg(peakStep_)
                     .arg(formatBytes(maxReserved_));
  if (inconsistent_) {
    text +=
        tr(" (The trace does not add up to the snapshot's blocks; levels below 0 are drawn "
           "at 0.)");
  }
  return text;
}

QRect AllocationTimeline::plotRect() const {
  return QRect(kAxisWidthPx, kTitleHeightPx, std::max(10, width() - kAxisWidthPx - 8),
               std::max(10, height() - kTitleHeightPx - kStepLabelHeightPx));
}

int AllocationTimeline::stepX(const StepStart& start) const {
  const QRect plot = plotRect();
  return plot.left() + static_cast<int>(static_cast<std::int64_t>(start.index) * plot.width() /
                                        std::max<std::int64_t>(1, eventCount()));
}

std::vector<AllocationTimeline::StepLabel> AllocationTimeline::stepLabels() const {
  const QFontMetrics metrics(font());
  std::vector<StepLabel> labels;
  int lastRight = std::numeric_limits<int>::min() / 2;
  for (const StepStart& start : stepStarts_) {
    StepLabel label{start.step, start.step == 0 ? tr("setup") : tr("step %1").arg(start.step),
                    stepX(start) + 2};
    const int right = label.x + metrics.horizontalAdvance(label.text);
    if (label.x > lastRight + 6) {
      labels.push_back(label);
      lastRight = right;
    } else if (labels.back().step == 0) {  // the first step's number matters more than setup
      labels.back() = label;
      lastRight = right;
    }
  }
  return labels;
}

void AllocationTimeline::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  const QColor text = palette().color(QPalette::WindowText);
  painter.setPen(text);
  painter.drawText(QRect(4, 0, width() - 8, kTitleHeightPx), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("Live bytes by owner (stacked, coloured as the map) and reserved bytes "
                      "(red line) over the allocator's last allocations and frees"));
  const QRect plot = plotRect();
  painter.setPen(palette().color(QPalette::Mid));
  painter.drawRect(plot.adjusted(0, 0, -1, -1));
  if (live_.empty()) {
    painter.setPen(text);
    painter.drawText(plot, Qt::AlignCenter | Qt::TextWordWrap, summaryText());
    return;
  }
  const double top = static_cast<double>(std::max(maxReserved_, peakLive_)) * 1.05;
  auto yOf = [&](double bytes) {
    return plot.bottom() - bytes / std::max(1.0, top) * plot.height();
  };
  const int columns = plot.width();
  const auto events = static_cast<int>(live_.size());
  // Per pixel column: the event with the most live bytes in it.
  std::vector<int> pick(static_cast<std::size_t>(columns), -1);
  std::vector<std::uint64_t> pickTotal(static_cast<std::size_t>(columns), 0);
  for (int i = 0; i < events; ++i) {
    const int column = std::min(columns - 1, static_cast<int>(static_cast<std::int64_t>(i) *
                                                              columns / std::max(1, events)));
    std::uint64_t total = 0;
    for (const std::uint64_t bytes : live_[static_cast<std::size_t>(i)]) {
      total += bytes;
    }
    if (pick[static_cast<std::size_t>(column)] < 0 ||
        total >= pickTotal[static_cast<std::size_t>(column)]) {
      pick[static_cast<std::size_t>(column)] = i;
      pickTotal[static_cast<std::size_t>(column)] = total;
    }
  }
  int lastPick = 0;
  for (int column = 0; column < columns; ++column) {  // columns between sparse events
    if (pick[static_cast<std::size_t>(column)] < 0) {
      pick[static_cast<std::size_t>(column)] = lastPick;
    }
    lastPick = pick[static_cast<std::size_t>(column)];
  }
  for (int column = 0; column < columns; ++column) {
    const auto& point = live_[static_cast<std::size_t>(pick[static_cast<std::size_t>(column)])];
    double below = 0;
    const double x = plot.left() + column;
    for (int k = 0; k < kOwnerCount; ++k) {
      const auto bytes = static_cast<double>(point[static_cast<std::size_t>(k)]);
      if (bytes <= 0) {
        continue;
      }
      const double y0 = yOf(below);
      const double y1 = yOf(below + bytes);
      painter.fillRect(QRectF(x, y1, 1.0, y0 - y1), blockKindColor(static_cast<BlockKind>(k)));
      below += bytes;
    }
  }
  QPainterPath reservedLine;
  for (int column = 0; column < columns; ++column) {
    const double y = yOf(static_cast<double>(
        reserved_[static_cast<std::size_t>(pick[static_cast<std::size_t>(column)])]));
    const QPointF p(plot.left() + column, y);
    if (column == 0) {
      reservedLine.moveTo(p);
    } else {
      reservedLine.lineTo(p);
    }
  }
  painter.setPen(QPen(kReservedColor, 1.5));
  painter.drawPath(reservedLine);
  // Steps: a dashed mark where each begins, its number below the plot.
  painter.setPen(QPen(text, 1, Qt::DashLine));
  const QFontMetrics metrics(font());
  for (const StepStart& start : stepStarts_) {
    const int x = stepX(start);
    painter.drawLine(x, plot.top(), x, plot.bottom());
  }
  for (const StepLabel& label : stepLabels()) {
    painter.drawText(QPoint(label.x, plot.bottom() + metrics.ascent() + 2), label.text);
  }
  painter.setPen(text);
  painter.drawText(QRect(0, plot.top(), kAxisWidthPx - 6, metrics.height()),
                   Qt::AlignRight | Qt::AlignTop, formatBytes(static_cast<std::uint64_t>(top)));
  painter.drawText(QRect(0, plot.bottom() - metrics.height(), kAxisWidthPx - 6, metrics.height()),
                   Qt::AlignRight | Qt::AlignBottom, QStringLiteral("0"));
}

}  // namespace lorascope::widgets
