// widgets/TimeChart.cpp — a chart of decimated series with markers and a latest-value row.
#include "widgets/TimeChart.h"

#include <QChart>
#include <QEvent>
#include <QFont>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLegend>
#include <QLineSeries>
#include <QPainter>
#include <QTextDocument>
#include <QToolTip>
#include <QVBoxLayout>
#include <QValueAxis>
#include <cmath>

#include "widgets/DisplayText.h"

namespace lorascope::widgets {

QColor markerColor(MarkerKind kind) {
  switch (kind) {
    case MarkerKind::Toggle:
      return QColor(0x1f, 0x77, 0xb4);
    case MarkerKind::Profile:
      return QColor(0x94, 0x67, 0xbd);
    case MarkerKind::Checkpoint:
      return QColor(0x2c, 0xa0, 0x2c);
    case MarkerKind::Resume:
      return QColor(0x8c, 0x56, 0x4b);
    case MarkerKind::Incident:
      return QColor(0xd6, 0x27, 0x28);
  }
  return Qt::gray;
}

QString markerKindName(MarkerKind kind) {
  switch (kind) {
    case MarkerKind::Toggle:
      return QObject::tr("toggle");
    case MarkerKind::Profile:
      return QObject::tr("profile");
    case MarkerKind::Checkpoint:
      return QObject::tr("checkpoint");
    case MarkerKind::Resume:
      return QObject::tr("resumed");
    case MarkerKind::Incident:
      return QObject::tr("incident");
  }
  return {};
}

namespace {

// 1, 2 or 5 × 10^n: the step that puts about five labelled ticks on a range.
double niceStep(double range) {
  if (!(range > 0)) {
    return 1.0;
  }
  const double raw = range / 5.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  return (fraction < 1.5 ? 1.0 : fraction < 3.5 ? 2.0 : fraction < 7.5 ? 5.0 : 10.0) * magnitude;
}

// Changes an axis's range and its tick interval together. Qt lays the ticks out on each of the
// two calls, so the interval of a wider range must come first (the old, fine interval over the
// new range would create millions of tick items, e.g. 0.2 over 0..1e9 bytes) and the interval of
// a narrower range last.
void setRangeAndTicks(QValueAxis* axis, double low, double high) {
  const double interval = niceStep(high - low);
  if (interval >= axis->tickInterval()) {
    axis->setTickInterval(interval);
    axis->setRange(low, high);
  } else {
    axis->setRange(low, high);
    axis->setTickInterval(interval);
  }
}

QFont smallerFont(QFont font) {
  font.setPointSizeF(font.pointSizeF() * 0.85);
  return font;
}

void useNiceTicks(QValueAxis* axis) {
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0.0);
  axis->setLabelFormat(QStringLiteral("%.4g"));
  // A narrow chart would otherwise elide every label to "...": short numbers always fit.
  axis->setTruncateLabels(false);
  axis->setTitleFont(smallerFont(axis->titleFont()));
}

}  // namespace

// ---- MarkedChartView ---------------------------------------------------------------------------

MarkedChartView::MarkedChartView(QChart* chart, const std::vector<ChartMarker>* markers,
                                 QWidget* parent)
    : QChartView(chart, parent), markers_(markers) {
  setRenderHint(QPainter::Antialiasing, false);  // thousands of segments per frame
  setMouseTracking(true);
}

std::optional<double> MarkedChartView::sceneXForTime(double timeS) const {
  const auto axes = chart()->axes(Qt::Horizontal);
  if (axes.isEmpty()) {
    return std::nullopt;
  }
  const auto* axis = static_cast<const QValueAxis*>(axes.first());
  const QRectF plot = chart()->plotArea();
  if (axis->max() <= axis->min() || timeS < axis->min() || timeS > axis->max()) {
    return std::nullopt;
  }
  return plot.left() + (timeS - axis->min()) / (axis->max() - axis->min()) * plot.width();
}

std::optional<double> MarkedChartView::xForTime(double timeS) const {
  const auto sceneX = sceneXForTime(timeS);
  if (!sceneX) {
    return std::nullopt;
  }
  return mapFromScene(QPointF(*sceneX, chart()->plotArea().top())).x();
}

void MarkedChartView::drawForeground(QPainter* painter, const QRectF& rect) {
  QChartView::drawForeground(painter, rect);
  const QRectF plot = chart()->plotArea();
  painter->save();
  for (const ChartMarker& m : *markers_) {
    if (m.spanFromX) {
      drawSpan(painter, m);
    }
    const auto sceneX = sceneXForTime(m.x);
    if (!sceneX) {
      continue;
    }
    painter->setPen(QPen(markerColor(m.kind), 2.0, Qt::DashLine));
    painter->drawLine(QPointF(*sceneX, plot.top()), QPointF(*sceneX, plot.bottom()));
  }
  painter->restore();
}

// A marker's band, clipped to the plot, and its label at the top of the plot (on a backing so that
// it reads over the curves; it may run past a narrow band).
void MarkedChartView::drawSpan(QPainter* painter, const ChartMarker& marker) const {
  const auto axes = chart()->axes(Qt::Horizontal);
  if (axes.isEmpty()) {
    return;
  }
  const auto* axis = static_cast<const QValueAxis*>(axes.first());
  const double from = std::max(*marker.spanFromX, axis->min());
  const double to = std::min(marker.x, axis->max());
  const auto left = sceneXForTime(from);
  const auto right = sceneXForTime(to);
  if (!left || !right || *right < *left) {
    return;
  }
  const QRectF plot = chart()->plotArea();
  QColor fill = markerColor(marker.kind);
  fill.setAlpha(60);
  painter->fillRect(QRectF(*left, plot.top(), std::max(2.0, *right - *left), plot.height()), fill);
  if (marker.label.isEmpty()) {
    return;
  }
  const QFontMetricsF metrics(painter->font());
  const QRectF text(*left + 3, plot.top() + 2, metrics.horizontalAdvance(marker.label) + 6,
                    metrics.height() + 2);
  const QRectF shown = text.translated(std::min(0.0, plot.right() - text.right()), 0);
  QColor backing = palette().color(QPalette::Base);
  backing.setAlpha(220);
  painter->fillRect(shown, backing);
  painter->setPen(markerColor(marker.kind));
  painter->drawText(shown, Qt::AlignCenter, marker.label);
}

bool MarkedChartView::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    const auto* help = static_cast<QHelpEvent*>(event);
    QStringList lines;
    for (const ChartMarker& m : *markers_) {
      const auto x = xForTime(m.x);
      const auto from = m.spanFromX ? xForTime(*m.spanFromX) : std::nullopt;
      const bool onBand = x && from && help->pos().x() >= *from && help->pos().x() <= *x;
      if (onBand || (x && std::abs(*x - help->pos().x()) <= 4.0)) {
        lines << QStringLiteral("%1 · %2: %3")
                     .arg(formatTimeMs(m.timeMs), markerKindName(m.kind), m.text);
      }
    }
    if (lines.isEmpty()) {
      QToolTip::hideText();
    } else {
      QToolTip::showText(help->globalPos(), lines.join(QLatin1Char('\n')), this);
    }
    return true;
  }
  return QChartView::viewportEvent(event);
}

// ---- TimeChart ---------------------------------------------------------------------------------

struct TimeChart::Series {
  QString name;
  AxisSide side = AxisSide::Left;
  ValueFormatter format;
  QLineSeries* line = nullptr;  // owned by the chart
  SeriesDecimator decimator;
  QString swatch;         // the series colour, shown before its value
  QList<QPointF> points;  // preallocated; handed to replace()
  bool available = false;
  QString unavailableText;  // "" for "n/a"
  bool dirty = false;
};

TimeChart::TimeChart(const QString& title, const QString& leftAxisTitle,
                     const QString& rightAxisTitle, const std::vector<ChartMarker>* markers,
                     QWidget* parent)
    : QWidget(parent), chart_(new QChart) {
  // The title heads the legend row (below): inside the chart it took a line of the plot's height,
  // which a 1024×700 window cannot spare.
  title_ = title;
  // The value row above the plot is the legend (swatch, name, latest value) and wraps when
  // narrow; Qt's own legend would elide names ("dr…") and say less.
  chart_->legend()->hide();
  chart_->setMargins(QMargins(2, 2, 2, 2));
  chart_->setAnimationOptions(QChart::NoAnimation);

  timeAxis_ = new QValueAxis(chart_);
  timeAxis_->setTitleText(tr("time (s)"));
  useNiceTicks(timeAxis_);
  setRangeAndTicks(timeAxis_, 0, 10);
  chart_->addAxis(timeAxis_, Qt::AlignBottom);
  leftAxis_ = new QValueAxis(chart_);
  leftAxis_->setTitleText(leftAxisTitle);
  useNiceTicks(leftAxis_);
  // Value-axis titles appear with the first sample: an axis with no range has no room for its
  // title, and the left and right ones would be drawn over each other.
  leftAxis_->setTitleVisible(false);
  chart_->addAxis(leftAxis_, Qt::AlignLeft);
  if (!rightAxisTitle.isEmpty()) {
    rightAxis_ = new QValueAxis(chart_);
    rightAxis_->setTitleText(rightAxisTitle);
    useNiceTicks(rightAxis_);
    rightAxis_->setTitleVisible(false);
    chart_->addAxis(rightAxis_, Qt::AlignRight);
  }

  view_ = new MarkedChartView(chart_, markers, this);  // takes ownership of the chart
  view_->setMinimumHeight(120);                        // three rows of charts fit a 700 px window
  valueRow_ = new QLabel(this);
  valueRow_->setObjectName(QStringLiteral("chartLegend"));
  valueRow_->setTextFormat(Qt::RichText);
  valueRow_->setWordWrap(true);
  valueRow_->setContentsMargins(6, 0, 6, 0);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(valueRow_);
  layout->addWidget(view_, 1);
  applyPalette();
}

void TimeChart::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) {
    applyPalette();
  }
  QWidget::changeEvent(event);
}

void TimeChart::applyPalette() {
  // Qt Charts draws with a theme of its own; the window's palette decides here, so a dark
  // scheme does not leave white chart panes.
  const QPalette& p = palette();
  chart_->setBackgroundBrush(p.base());
  chart_->setBackgroundPen(Qt::NoPen);
  chart_->setTitleBrush(p.windowText());
  chart_->legend()->setLabelColor(p.color(QPalette::WindowText));
  for (QAbstractAxis* axis : chart_->axes()) {
    axis->setLabelsBrush(p.text());
    axis->setTitleBrush(p.text());
    axis->setGridLineColor(p.color(QPalette::Midlight));
    axis->setLinePenColor(p.color(QPalette::Mid));
  }
  view_->setBackgroundBrush(p.window());
}

TimeChart::~TimeChart() = default;

int TimeChart::addSeries(const QString& name, AxisSide side, const QColor& color,
                         ValueFormatter format) {
  auto s = std::make_unique<Series>();
  s->name = name;
  s->side = side;
  s->format = std::move(format);
  s->line = new QLineSeries(chart_);
  s->line->setName(name);
  s->line->setPen(QPen(color, 1.5));
  s->points.reserve(2 * s->decimator.bucketCount());
  chart_->addSeries(s->line);
  s->line->attachAxis(timeAxis_);
  s->line->attachAxis(side == AxisSide::Right && rightAxis_ ? rightAxis_ : leftAxis_);
  s->swatch = color.name();
  series_.push_back(std::move(s));
  const int index = static_cast<int>(series_.size()) - 1;
  updateLabel(index);
  return index;
}

void TimeChart::updateLabel(int /*series*/) {
  // One entry per series, never broken inside; the row wraps between entries.
  QStringList entries;
  for (std::size_t i = 0; i < series_.size(); ++i) {
    entries << QStringLiteral(
                   "<span style='white-space:nowrap'><span style='color:%1'>&#9632;"
                   "</span>&nbsp;%2</span>")
                   .arg(series_[i]->swatch,
                        valueText(static_cast<int>(i))
                            .toHtmlEscaped()
                            .replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
  }
  if (!note_.isEmpty()) {
    entries << QStringLiteral("<span style='white-space:nowrap'>%1</span>")
                   .arg(note_.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
  }
  valueRow_->setText(QStringLiteral("<b>%1</b> &nbsp; ").arg(title_.toHtmlEscaped()) +
                     entries.join(QStringLiteral(" &nbsp; ")));
}

void TimeChart::setNote(const QString& note) {
  if (note != note_) {
    note_ = note;
    updateLabel(0);
  }
}

QString TimeChart::legendText() const {
  QTextDocument document;
  document.setHtml(valueRow_->text());
  return document.toPlainText().replace(QChar(0x00a0), QLatin1Char(' '));
}

void TimeChart::addSample(int series, double timeS, double value) {
  Series& s = *series_.at(static_cast<std::size_t>(series));
  s.decimator.add(timeS, value);
  s.available = true;
  s.dirty = true;
}

void TimeChart::markUnavailable(int series, const QString& why) {
  Series& s = *series_.at(static_cast<std::size_t>(series));
  s.dirty = s.dirty || s.available || s.unavailableText != why;
  s.available = false;
  s.unavailableText = why;
}

QString TimeChart::valueText(int series) const {
  const Series& s = *series_.at(static_cast<std::size_t>(series));
  const auto last = s.decimator.lastValue();
  const QString value = s.available && last           ? s.format(*last)
                        : s.unavailableText.isEmpty() ? notAvailable()
                                                      : s.unavailableText;
  return QStringLiteral("%1 %2").arg(s.name, value);
}

void TimeChart::updateValueAxis(QValueAxis* axis, AxisSide side) {
  bool any = false;
  double low = 0;
  double high = 0;
  for (const auto& s : series_) {
    const bool onAxis = side == AxisSide::Left ? (s->side == AxisSide::Left || !rightAxis_)
                                               : s->side == AxisSide::Right;
    if (!onAxis || s->decimator.sampleCount() == 0) {
      continue;
    }
    low = any ? std::min(low, s->decimator.minValue()) : s->decimator.minValue();
    high = any ? std::max(high, s->decimator.maxValue()) : s->decimator.maxValue();
    any = true;
  }
  if (!any || !std::isfinite(low) || !std::isfinite(high)) {
    return;  // nothing to show, or a value no axis can hold
  }
  axis->setTitleVisible(true);
  low = std::min(low, 0.0);  // every quantity here is ≥ 0: the baseline stays honest
  const double pad =
      high > low ? 0.05 * (high - low) : std::max(1e-9, std::abs(high) * 0.05 + 1e-9);
  // Keep the range while the data fits it and fills at least half of it: a range change
  // re-lays out every series of the chart, so it should not happen on every tick.
  const double span = axis->max() - axis->min();
  if (low >= axis->min() && high <= axis->max() && (high - low) >= 0.5 * span) {
    return;
  }
  setRangeAndTicks(axis, low, high + pad);
}

void TimeChart::refresh(double timeFromS, double timeToS) {
  bool changed = false;
  for (std::size_t i = 0; i < series_.size(); ++i) {
    Series& s = *series_[i];
    if (!s.dirty) {
      continue;
    }
    s.decimator.fill(s.points);
    s.line->replace(s.points);
    updateLabel(static_cast<int>(i));
    s.dirty = false;
    changed = true;
  }
  if (changed) {
    updateValueAxis(leftAxis_, AxisSide::Left);
    if (rightAxis_) {
      updateValueAxis(rightAxis_, AxisSide::Right);
    }
  }
  // The time axis runs a little ahead of the data (to the next tick) so it moves once per
  // several ticks rather than on each one; every chart gets the same numbers, hence one axis.
  if (timeAxis_->min() != timeFromS || timeAxis_->max() < timeToS ||
      timeToS < 0.5 * timeAxis_->max()) {
    const double step = niceStep(timeToS - timeFromS);
    const double end =
        std::ceil(timeToS / step) * step + (std::fmod(timeToS, step) == 0 ? step : 0);
    setRangeAndTicks(timeAxis_, timeFromS, end);
  }
}

void TimeChart::setTimeAxisTitle(const QString& title) {
  timeAxis_->setTitleText(title);
  timeAxis_->setTitleVisible(!title.isEmpty());  // no room kept for none
}

void TimeChart::clear() {
  note_.clear();
  for (auto& s : series_) {
    s->decimator.clear();
    s->points.clear();
    s->line->clear();
    s->available = false;
    s->unavailableText.clear();
    s->dirty = true;
  }
  // The axes start again from the next samples, not from the last run's ranges.
  setRangeAndTicks(timeAxis_, 0, 10);
  for (QValueAxis* axis : {leftAxis_, rightAxis_}) {
    if (axis != nullptr) {
      setRangeAndTicks(axis, 0, 1);
      axis->setTitleVisible(false);
    }
  }
}

QLineSeries* TimeChart::lineSeries(int series) const {
  return series_.at(static_cast<std::size_t>(series))->line;
}

const SeriesDecimator& TimeChart::decimator(int series) const {
  return series_.at(static_cast<std::size_t>(series))->decimator;
}

}  // namespace lorascope::widgets
