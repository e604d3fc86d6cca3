// cpu/attention.h — causal grouped-query self-attention (fp32), forward and backward, with an
// optional sliding window, documents packed apart and tanh soft-capping of the scores: the
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

// What a query sees and how its scores are shaped (Backend::AttentionOptions).
struct AttentionMasking {
  float scale = 1.0f;
  std::int64_t window = 0;  // query i sees keys i − window < j ≤ i; 0 = every j ≤ i
  float softcap = 0.0f;     // scores s ← softcap·tanh(s / softcap); 0 = off
  // (batch, seq) or null: query i of row b sees only keys j ≥ documentStarts[b·seq + i], which
  // never falls along a row (Backend::AttentionOptions::documentStarts); null = every start 0.
  const std::int32_t* documentStarts = nullptr;
};

// q (batch, seq, heads, headDim), k and v (batch, seq, kvHeads, headDim)
//   -> out (batch, seq, heads, headDim), logsumexp (batch, heads, seq)
void attentionForward(const float* q, const float* k, const float* v, AttentionDims dims,
                      AttentionMasking masking, float* out, float* logsumexp);

// dout, q, out (batch, seq, heads, headDim), k and v (batch, seq, kvHeads, headDim),
// logsumexp (batch, heads, seq) from the forward
//   -> dq (batch, seq, heads, headDim), dk and dv (batch, seq, kvHeads, headDim), overwritten.
// With s_ij = scale·q_i·k_j (capped: c·tanh(s_ij / c)), p_ij = exp(s_ij − lse_i) over the visible
// keys and D_i = dout_i·out_i:
//   ds_ij = p_ij·(dout_i·v_j − D_i)·(1 − tanh²) (the last factor only when capped);
//   dq_i = scale·Σ_j ds_ij·k_j;  dk_j = scale·Σ_i ds_ij·q_i;  dv_j = Σ_i p_ij·dout_i,
// the last two summed over the query heads of the KV head's group.
void attentionBackward(const float* dout, const float* q, const float* k, const float* v,
                       const float* out, const float* logsumexp, AttentionDims dims,
                       AttentionMasking masking, float* dq, float* dk, float* dv);

}  // namespace lorascope::compute::cpu
