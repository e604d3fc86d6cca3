// cpu/attention.cpp — causal GQA attention, one query row at a time: scores over keys 0..i, a
// max-shifted softmax in double, then the weighted sum of values. O(seq²) memory-free; this is the
// reference and the fallback, not the fast path.
#include "compute/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lorascope::compute::cpu {

void attentionForward(const float* q, const float* k, const float* v, AttentionDims dims,
                      float scale, float* out, float* logsumexp) {
  const auto [batch, seq, heads, kvHeads, headDim] = dims;
  const std::int64_t group = heads / kvHeads;  // query heads per KV head
  const std::int64_t qRow = heads * headDim;   // stride of one token in q and out
  const std::int64_t kvRow = kvHeads * headDim;
  std::vector<double> scores(static_cast<std::size_t>(seq));
  std::vector<double> accumulator(static_cast<std::size_t>(headDim));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t kvh = h / group;
      for (std::int64_t i = 0; i < seq; ++i) {
        const float* qi = q + (b * seq + i) * qRow + h * headDim;
        double maxScore = -INFINITY;
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* kj = k + (b * seq + j) * kvRow + kvh * headDim;
          double dot = 0.0;
          for (std::int64_t d = 0; d < headDim; ++d) {
            dot += static_cast<double>(qi[d]) * kj[d];
          }
          scores[static_cast<std::size_t>(j)] = dot * scale;
          maxScore = std::max(maxScore, scores[static_cast<std::size_t>(j)]);
        }
        double sum = 0.0;
        for (std::int64_t j = 0; j <= i; ++j) {
          auto& s = scores[static_cast<std::size_t>(j)];
          s = std::exp(s - maxScore);
          sum += s;
        }
        std::fill(accumulator.begin(), accumulator.end(), 0.0);
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* vj = v + (b * seq + j) * kvRow + kvh * headDim;
          const double p = scores[static_cast<std::size_t>(j)] / sum;
          for (std::int64_t d = 0; d < headDim; ++d) {
            accumulator[static_cast<std::size_t>(d)] += p * vj[d];
          }
        }
        float* oi = out + (b * seq + i) * qRow + h * headDim;
        for (std::int64_t d = 0; d < headDim; ++d) {
          oi[d] = static_cast<float>(accumulator[static_cast<std::size_t>(d)]);
        }
        logsumexp[(b * heads + h) * seq + i] = static_cast<float>(maxScore + std::log(sum));
      }
    }
  }
}

}  // namespace lorascope::compute::cpu
