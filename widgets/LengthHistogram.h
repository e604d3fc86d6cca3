// widgets/LengthHistogram.h — the dataset's token-length distribution as bars (one per half-octave
// bin, so every power of two is an edge), with the run's max_seq_len drawn as a line: the share of
// examples a shorter limit would cut is visible before the run starts. A pure view of the bins the
// validator computed.
#pragma once

#include <QWidget>
#include <cstddef>
#include <vector>

namespace lorascope::widgets {

struct LengthBin {
  std::size_t fromTokens = 0;  // inclusive
  std::size_t toTokens = 0;    // exclusive
  std::size_t examples = 0;
};

class LengthHistogram : public QWidget {
  Q_OBJECT

 public:
  explicit LengthHistogram(QWidget* parent = nullptr);

  void setBins(std::vector<LengthBin> bins);
  void setMaxSeqLen(std::size_t tokens);  // 0 = no limit line
  const std::vector<LengthBin>& bins() const { return bins_; }
  // Examples in bins that start at or past max_seq_len (those the limit truncates or drops).
  std::size_t examplesPastLimit() const;
  // The bin under a widget position, or -1.
  int binAt(const QPoint& pos) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // a tooltip per bar

 private:
  QRectF plotRect() const;

  std::vector<LengthBin> bins_;
  std::size_t maxSeqLen_ = 0;
};

}  // namespace lorascope::widgets
