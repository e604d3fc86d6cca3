// cpu/attention_cached.h — attention of a generation step over its KV cache (fp32): the reference
// for hip/attention_cached.hip. Contract: Backend::attentionCached.
#pragma once

#include <cstdint>

#include "compute/cpu/attention.h"  // defines: AttentionMasking

namespace lorascope::compute::cpu {

struct CachedAttentionDims {
  std::int64_t queries = 0;  // new tokens S
  std::int64_t keys = 0;     // cached tokens, the new ones included (≥ S)
  std::int64_t heads = 0;
  std::int64_t kvHeads = 0;  // divides heads
  std::int64_t headDim = 0;
};

// q (S, heads, hd), k and v (keys, kvHeads, hd) -> out (S, heads, hd); query i attends keys
// 0 … keys − S + i (the last `window` of them with a window), scores soft-capped when asked.
void attentionCached(const float* q, const float* k, const float* v, CachedAttentionDims dims,
                     AttentionMasking masking, float* out);

}  // namespace lorascope::compute::cpu
