// cpu/attention.h — causal grouped-query self-attention (fp32), forward and backward: the
// reference for the GPU kernels.
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

// dout, q, out (batch, seq, heads, headDim), k and v (batch, seq, kvHeads, headDim),
// logsumexp (batch, heads, seq) from the forward
//   -> dq (batch, seq, heads, headDim), dk and dv (batch, seq, kvHeads, headDim), overwritten.
// With p_ij = exp(scale·q_i·k_j − lse_i) and D_i = dout_i·out_i:
//   ds_ij = p_ij·(dout_i·v_j − D_i);  dq_i = scale·Σ_j ds_ij·k_j;  dk_j = scale·Σ_i ds_ij·q_i;
//   dv_j = Σ_i p_ij·dout_i, the last two summed over the query heads of the KV head's group.
void attentionBackward(const float* dout, const float* q, const float* k, const float* v,
                       const float* out, const float* logsumexp, AttentionDims dims, float scale,
                       float* dq, float* dk, float* dv);

}  // namespace lorascope::compute::cpu
