// hip/attention_cached.h — launcher of the KV-cache attention of generation (bf16 in/out, fp32
// math). Plain C++ declarations; hip/attention_cached.hip defines them. CPU twin:
// cpu/attention_cached.cpp. Shapes and contract: Backend::attentionCached.
#pragma once

#include <cstdint>

#include "gpu/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

// Head dims up to this (two per thread of a 128-thread block); the caller rejects larger ones.
inline constexpr std::int64_t kMaxCachedAttentionHeadDim = 256;

// q (S, heads, hd), k and v (keys, kvHeads, hd) bf16 -> out (S, heads, hd) bf16; query i attends
// keys 0 … keys − S + i, only the last `window` of them when window > 0; scores s become
// softcap·tanh(s / softcap) when softcap > 0.
void attentionCached(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                     std::int64_t queries, std::int64_t keys, std::int64_t heads,
                     std::int64_t kvHeads, std::int64_t headDim, float scale, std::int64_t window,
                     float softcap, std::uint16_t* out, hipStream_t stream);

}  // namespace lorascope::compute::hip
