// cpu/optimizer.cpp — AdamW, sums of squares, scaling and dropout masks on the host
// (compute/HostOptimizer.h).
#include "compute/HostOptimizer.h"

#include <algorithm>
#include <cmath>

#include "compute/Philox.h"  // defines: philox4x32, dropoutFromWord

namespace lorascope::compute::host {

void adamw(float* param, const float* grad, float* firstMoment, float* secondMoment,
           std::int64_t count, const AdamWScalars& s) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = grad[i];
    param[i] *= s.decay;
    firstMoment[i] = s.beta1 * firstMoment[i] + (1.0f - s.beta1) * g;
    secondMoment[i] = s.beta2 * secondMoment[i] + (1.0f - s.beta2) * g * g;
    const float denom = std::sqrt(secondMoment[i]) / s.sqrtBias2 + s.epsilon;
    param[i] -= s.stepSize * firstMoment[i] / denom;
  }
}

double addSumOfSquares(const float* x, std::int64_t count, double sum) {
  for (std::int64_t i = 0; i < count; ++i) {
    sum += static_cast<double>(x[i]) * x[i];
  }
  return sum;
}

void scale(float* x, std::int64_t count, float factor) {
  for (std::int64_t i = 0; i < count; ++i) {
    x[i] *= factor;
  }
}

void dropoutMask(float* mask, std::int64_t count, std::uint64_t seed, std::uint64_t stream,
                 double p) {
  const auto keep = static_cast<float>(1.0 / (1.0 - p));
  const auto threshold = static_cast<float>(p);
  // Element i is word i mod 4 of Philox block i / 4: one block fills four elements.
  for (std::int64_t block = 0; block * 4 < count; ++block) {
    const PhiloxWords words = philox4x32(seed, stream, static_cast<std::uint64_t>(block));
    const std::int64_t lanes = std::min<std::int64_t>(4, count - block * 4);
    for (std::int64_t lane = 0; lane < lanes; ++lane) {
      mask[block * 4 + lane] = dropoutFromWord(words.word[lane], threshold, keep);
    }
  }
}

}  // namespace lorascope::compute::host
