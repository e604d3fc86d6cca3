// widgets/SeriesDecimator.h — a whole run's time series in a fixed number of min/max buckets, so a
// chart redraws a few thousand points whatever the run's length.
//
// - Samples arrive in time order; each lands in the bucket of its time. A bucket keeps its lowest
//   and its highest sample (with their times), so spikes survive decimation (the min/max envelope
//   a pixel column would show anyway).
// - When a sample falls past the last bucket, buckets are merged pairwise and the bucket width
//   doubles: O(1) amortised per sample, memory fixed at construction (no allocation per sample).
// - fill() writes ≤ 2 points per bucket in time order into a caller's preallocated list, which
//   the chart hands to QXYSeries::replace() once per tick.
#pragma once

#include <QList>
#include <QPointF>
#include <cstdint>
#include <optional>
#include <vector>

namespace lorascope::widgets {

class SeriesDecimator {
 public:
  static constexpr int kDefaultBuckets = 1024;  // 2048 points per series: wider than a screen
  static constexpr double kInitialBucketWidthS = 0.05;

  explicit SeriesDecimator(int bucketCount = kDefaultBuckets);

  void add(double timeS, double value);  // timeS not before the previous sample's
  void clear();

  // The decimated curve, time-ordered; `out` is cleared, its capacity kept.
  void fill(QList<QPointF>& out) const;

  std::int64_t sampleCount() const { return sampleCount_; }
  std::optional<double> lastValue() const;
  double minValue() const { return minValue_; }  // over every sample; undefined when empty
  double maxValue() const { return maxValue_; }
  int bucketCount() const { return static_cast<int>(buckets_.size()); }
  double bucketWidthS() const { return bucketWidthS_; }

 private:
  struct Bucket {
    QPointF low;
    QPointF high;
    bool used = false;
  };
  void mergePairs();

  std::vector<Bucket> buckets_;
  double originS_ = 0;
  double bucketWidthS_ = kInitialBucketWidthS;
  int usedBuckets_ = 0;  // index of the last used bucket + 1
  std::int64_t sampleCount_ = 0;
  double lastValue_ = 0;
  double minValue_ = 0;
  double maxValue_ = 0;
};

}  // namespace lorascope::widgets
