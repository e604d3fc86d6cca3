// cpu/cross_entropy.cpp — cross-entropy for the CPU backend; sums in double, max-shifted.
#include "compute/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "compute/Backend.h"  // defines: checkTargetIds, kIgnoreTarget

namespace lorascope::compute::cpu {

void crossEntropyForward(const float* logits, std::int64_t vocab,
                         std::span<const std::int32_t> targets, float* losses, float* logsumexp) {
  checkTargetIds("cross_entropy_forward", targets, vocab);
  for (std::size_t r = 0; r < targets.size(); ++r) {
    const std::int32_t target = targets[r];
    const float* row = logits + static_cast<std::int64_t>(r) * vocab;
    const double maxLogit = *std::max_element(row, row + vocab);
    double sum = 0.0;
    for (std::int64_t i = 0; i < vocab; ++i) {
      sum += std::exp(static_cast<double>(row[i]) - maxLogit);
    }
    const double lse = maxLogit + std::log(sum);
    logsumexp[r] = static_cast<float>(lse);
    losses[r] = target == kIgnoreTarget ? 0.0f : static_cast<float>(lse - row[target]);
  }
}

}  // namespace lorascope::compute::cpu
