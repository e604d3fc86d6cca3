// cpu/attention.h — causal grouped-query self-attention (fp32), the reference for the GPU kernel.
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

struct AttentionDims {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t heads = 0;    // query heads
  std::int64_t kvHeads = 0;  // divides heads
  std::int64_t headDim = 0;
};

// q (batch, seq, heads, headDim), k and v (batch, seq, kvHeads, headDim)
//   -> out (batch, seq, heads, headDim), logsumexp (batch, heads, seq)
void attentionForward(const float* q, const float* k, const float* v, AttentionDims dims,
                      float scale, float* out, float* logsumexp);

}  // namespace lorascope::compute::cpu
