// widgets/LengthHistogram.cpp — bars, the limit line, a tooltip per bar.
#include "widgets/LengthHistogram.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace lorascope::widgets {

namespace {

// "512", "1.5K", "32K": bin edges read at a glance under narrow bars.
QString tokensText(std::size_t tokens) {
  if (tokens < 1024) {
    return QString::number(tokens);
  }
  const double k = static_cast<double>(tokens) / 1024.0;
  return QStringLiteral("%1K").arg(k, 0, 'g', 3);
}

}  // namespace

LengthHistogram::LengthHistogram(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setToolTip(
      tr("Examples per token length (before max_seq_len is applied); the red line is "
         "max_seq_len"));
}

void LengthHistogram::setBins(std::vector<LengthBin> bins) {
  bins_ = std::move(bins);
  update();
}

void LengthHistogram::setMaxSeqLen(std::size_t tokens) {
  maxSeqLen_ = tokens;
  update();
}

std::size_t LengthHistogram::examplesPastLimit() const {
  std::size_t count = 0;
  for (const LengthBin& bin : bins_) {
    if (maxSeqLen_ > 0 && bin.fromTokens >= maxSeqLen_) {
      count += bin.examples;
    }
  }
  return count;
}

QSize LengthHistogram::sizeHint() const {
  return {360, 140};
}
QSize LengthHistogram::minimumSizeHint() const {
  return {160, 90};
}

QRectF LengthHistogram::plotRect() const {
  const int labelHeight = fontMetrics().height() + 4;
  return QRectF(rect()).adjusted(4, 4, -4, -labelHeight);
}

int LengthHistogram::binAt(const QPoint& pos) const {
  const QRectF plot = plotRect();
  if (bins_.empty() || !plot.contains(pos)) {
    return -1;
  }
  const double width = plot.width() / static_cast<double>(bins_.size());
  return std::clamp(static_cast<int>((pos.x() - plot.left()) / width), 0,
                    static_cast<int>(bins_.size()) - 1);
}

void LengthHistogram::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing, false);
  const QRectF plot = plotRect();
  painter.fillRect(plot, palette().base());
  if (bins_.empty()) {
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(plot, Qt::AlignCenter, tr("no token lengths yet"));
    return;
  }
  std::size_t most = 1;
  for (const LengthBin& bin : bins_) {
    most = std::max(most, bin.examples);
  }
  const double width = plot.width() / static_cast<double>(bins_.size());
  const QColor bar = palette().color(QPalette::Highlight);
  QColor cut = QColor(0xd0, 0x45, 0x45);
  const int labelEvery =
      std::max(1, static_cast<int>(bins_.size() * 40 / std::max(1.0, plot.width())));
  painter.setPen(palette().color(QPalette::WindowText));
  for (std::size_t i = 0; i < bins_.size(); ++i) {
    const LengthBin& bin = bins_[i];
    const double height =
        plot.height() * static_cast<double>(bin.examples) / static_cast<double>(most);
    const QRectF barRect(plot.left() + width * static_cast<double>(i) + 1, plot.bottom() - height,
                         std::max(1.0, width - 2), height);
    const bool pastLimit = maxSeqLen_ > 0 && bin.fromTokens >= maxSeqLen_;
    painter.fillRect(barRect, pastLimit ? cut.lighter(130) : bar);
    if (static_cast<int>(i) % labelEvery == 0) {
      painter.drawText(QRectF(plot.left() + width * static_cast<double>(i), plot.bottom() + 2,
                              width * labelEvery, fontMetrics().height()),
                       Qt::AlignLeft | Qt::AlignTop, tokensText(bin.fromTokens));
    }
  }
  if (maxSeqLen_ > 0) {
    // The limit sits at a bin edge when it is a power of two (or 1.5×); else interpolate inside.
    for (std::size_t i = 0; i < bins_.size(); ++i) {
      const LengthBin& bin = bins_[i];
      if (maxSeqLen_ >= bin.fromTokens && maxSeqLen_ < bin.toTokens) {
        const double within = static_cast<double>(maxSeqLen_ - bin.fromTokens) /
                              static_cast<double>(bin.toTokens - bin.fromTokens);
        const double x = plot.left() + width * (static_cast<double>(i) + within);
        painter.setPen(QPen(cut, 2));
        painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
        break;
      }
    }
  }
}

bool LengthHistogram::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int index = binAt(help->pos());
    if (index >= 0) {
      const LengthBin& bin = bins_[static_cast<std::size_t>(index)];
      QToolTip::showText(help->globalPos(),
                         tr("%1 – %2 tokens: %3 examples")
                             .arg(bin.fromTokens)
                             .arg(bin.toTokens - 1)
                             .arg(bin.examples),
                         this);
      return true;
    }
  }
  return QWidget::event(event);
}

}  // namespace lorascope::widgets
