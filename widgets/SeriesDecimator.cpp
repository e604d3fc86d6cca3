// widgets/SeriesDecimator.cpp — min/max buckets that double in width as the run grows.
#include "widgets/SeriesDecimator.h"

#include <algorithm>
#include <cmath>

namespace lorascope::widgets {

SeriesDecimator::SeriesDecimator(int bucketCount)
    : buckets_(static_cast<std::size_t>(std::max(2, bucketCount & ~1))) {}

void SeriesDecimator::clear() {
  std::fill(buckets_.begin(), buckets_.end(), Bucket{});
  bucketWidthS_ = kInitialBucketWidthS;
  usedBuckets_ = 0;
  sampleCount_ = 0;
}

void SeriesDecimator::mergePairs() {
  const std::size_t half = buckets_.size() / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const Bucket& a = buckets_[2 * i];
    const Bucket& b = buckets_[2 * i + 1];
    Bucket merged;
    if (a.used && b.used) {
      merged.low = b.low.y() < a.low.y() ? b.low : a.low;
      merged.high = b.high.y() > a.high.y() ? b.high : a.high;
      merged.used = true;
    } else if (a.used || b.used) {
      merged = a.used ? a : b;
    }
    buckets_[i] = merged;
  }
  std::fill(buckets_.begin() + static_cast<std::ptrdiff_t>(half), buckets_.end(), Bucket{});
  bucketWidthS_ *= 2;
  usedBuckets_ = (usedBuckets_ + 1) / 2;
}

void SeriesDecimator::add(double timeS, double value) {
  if (sampleCount_ == 0) {
    originS_ = timeS;
    minValue_ = maxValue_ = value;
  }
  minValue_ = std::min(minValue_, value);
  maxValue_ = std::max(maxValue_, value);
  lastValue_ = value;
  ++sampleCount_;
  const double offsetS = std::max(0.0, timeS - originS_);
  auto index = static_cast<std::int64_t>(std::floor(offsetS / bucketWidthS_));
  while (index >= static_cast<std::int64_t>(buckets_.size())) {
    mergePairs();
    index = static_cast<std::int64_t>(std::floor(offsetS / bucketWidthS_));
  }
  Bucket& bucket = buckets_[static_cast<std::size_t>(index)];
  const QPointF point(timeS, value);
  if (!bucket.used) {
    bucket = {point, point, true};
  } else {
    if (value < bucket.low.y())
      bucket.low = point;
    if (value >= bucket.high.y())
      bucket.high = point;
  }
  usedBuckets_ = std::max(usedBuckets_, static_cast<int>(index) + 1);
}

void SeriesDecimator::fill(QList<QPointF>& out) const {
  out.clear();
  for (int i = 0; i < usedBuckets_; ++i) {
    const Bucket& b = buckets_[static_cast<std::size_t>(i)];
    if (!b.used) {
      continue;
    }
    if (b.low == b.high) {
      out.append(b.low);
    } else if (b.low.x() <= b.high.x()) {
      out.append(b.low);
      out.append(b.high);
    } else {
      out.append(b.high);
      out.append(b.low);
    }
  }
}

std::optional<double> SeriesDecimator::lastValue() const {
  if (sampleCount_ == 0) {
    return std::nullopt;
  }
  return lastValue_;
}

}  // namespace lorascope::widgets
