// widgets/TimeChart.h — one dashboard chart: named line series over the shared time axis (s), a
// left and an optional right value axis, the title and the latest value of each series above the
// plot ("n/a" until the engine reports it), and the run's markers as vertical lines.
//
// Samples go into a SeriesDecimator per series (no allocation, no drawing); refresh() — called by
// the dashboard's 10 Hz tick — hands each changed series to QXYSeries::replace() once.
#pragma once

#include <QChartView>
#include <QLabel>
#include <QList>
#include <QPointF>
#include <QString>
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "widgets/ChartMarker.h"
#include "widgets/SeriesDecimator.h"

class QLineSeries;
class QValueAxis;

namespace lorascope::widgets {

enum class AxisSide { Left, Right };

// The plot: draws the markers over the chart.
class MarkedChartView : public QChartView {
  Q_OBJECT

 public:
  MarkedChartView(QChart* chart, const std::vector<ChartMarker>* markers, QWidget* parent);

  // Horizontal position (view pixels) of a time on the current axis; nullopt outside the plot.
  std::optional<double> xForTime(double timeS) const;

 protected:
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  bool viewportEvent(QEvent* event) override;  // marker tooltips

 private:
  std::optional<double> sceneXForTime(double timeS) const;
  void drawSpan(QPainter* painter, const ChartMarker& marker) const;
  const std::vector<ChartMarker>* markers_;
};

class TimeChart : public QWidget {
  Q_OBJECT

 public:
  using ValueFormatter = std::function<QString(double)>;

  TimeChart(const QString& title, const QString& leftAxisTitle, const QString& rightAxisTitle,
            const std::vector<ChartMarker>* markers, QWidget* parent = nullptr);
  ~TimeChart() override;

  // Returns the index for addSample/markUnavailable.
  int addSeries(const QString& name, AxisSide side, const QColor& color, ValueFormatter format);
  int seriesCount() const { return static_cast<int>(series_.size()); }

  void addSample(int series, double timeS, double value);
  // The engine reported this metric as unavailable: the label says "n/a" (or `why`: "not
  // reported"), no point is drawn.
  void markUnavailable(int series, const QString& why = {});

  // Redraws changed series (one replace() each) and sets the shared time range.
  void refresh(double timeFromS, double timeToS);
  // No samples, and the value axes back to their first range (the next run's set them).
  void clear();
  // The shared x axis's title: "step", or "time since the run started (s)"; "" for none.
  void setTimeAxisTitle(const QString& title);

  QLineSeries* lineSeries(int series) const;
  QString valueText(int series) const;  // "loss 1.832" / "driver used n/a"
  // A reading that is no series, after the series' in the legend row ("epoch 0.33"); "" for none.
  void setNote(const QString& note);
  QString note() const { return note_; }
  // The legend row as shown: the chart's title, then every series' valueText, whole (the row
  // wraps, it never elides).
  QString legendText() const;
  QString title() const { return title_; }
  QLabel* legend() const { return valueRow_; }
  const SeriesDecimator& decimator(int series) const;
  MarkedChartView* view() const { return view_; }

 protected:
  void changeEvent(QEvent* event) override;  // follows light / dark palettes

 private:
  void applyPalette();
  struct Series;
  void updateValueAxis(QValueAxis* axis, AxisSide side);
  void updateLabel(int series);

  QChart* chart_;
  MarkedChartView* view_;
  QValueAxis* timeAxis_;
  QValueAxis* leftAxis_;
  QValueAxis* rightAxis_ = nullptr;
  QString title_;  // heads the legend row
  QString note_;   // ends it
  QLabel* valueRow_;
  std::vector<std::unique_ptr<Series>> series_;
};

}  // namespace lorascope::widgets
