// cpu/attention_cached.cpp — one (query, head) at a time: scores against every visible key, a
// max-shifted softmax with the normaliser summed in double, then the weighted sum of values.
// Generation asks for one query per step, so there is nothing for a GEMM to block; the
// (query, head) items run in parallel.
#include "compute/cpu/attention_cached.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "compute/cpu/parallel.h"  // defines: parallelFor

namespace lorascope::compute::cpu {

void attentionCached(const float* q, const float* k, const float* v, CachedAttentionDims d,
                     AttentionMasking m, float* out) {
  const std::int64_t past = d.keys - d.queries;
  const std::int64_t group = d.heads / d.kvHeads;
  parallelFor(d.queries * d.heads, [&](std::int64_t item) {
    const std::int64_t i = item / d.heads;
    const std::int64_t h = item % d.heads;
    const std::int64_t kvHead = h / group;
    const std::int64_t visible = past + i + 1;
    const std::int64_t first = m.window > 0 ? std::max<std::int64_t>(0, visible - m.window) : 0;
    const float* qRow = q + (i * d.heads + h) * d.headDim;
    std::vector<float> scores(static_cast<std::size_t>(visible - first));
    float maxScore = -INFINITY;
    for (std::int64_t j = first; j < visible; ++j) {
      const float* kRow = k + (j * d.kvHeads + kvHead) * d.headDim;
      float dot = 0.0f;
      for (std::int64_t c = 0; c < d.headDim; ++c) {
        dot += qRow[c] * kRow[c];
      }
      float s = m.scale * dot;
      if (m.softcap > 0.0f) {
        s = m.softcap * std::tanh(s / m.softcap);
      }
      scores[static_cast<std::size_t>(j - first)] = s;
      maxScore = std::max(maxScore, s);
    }
    double sum = 0.0;
    for (float& s : scores) {
      s = std::exp(s - maxScore);
      sum += s;
    }
    float* o = out + (i * d.heads + h) * d.headDim;
    std::fill(o, o + d.headDim, 0.0f);
    const auto inverse = static_cast<float>(1.0 / sum);
    for (std::int64_t j = first; j < visible; ++j) {
      const float p = scores[static_cast<std::size_t>(j - first)] * inverse;
      const float* vRow = v + (j * d.kvHeads + kvHead) * d.headDim;
      for (std::int64_t c = 0; c < d.headDim; ++c) {
        o[c] += p * vRow[c];
      }
    }
  });
}

}  // namespace lorascope::compute::cpu
