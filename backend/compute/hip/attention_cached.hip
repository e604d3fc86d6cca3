// hip/attention_cached.hip — attention of a generation step over its KV cache; CPU twin:
// cpu/attention_cached.cpp.
//
// One block of kThreads per (query, head). Keys are taken kThreads at a time: each thread scores
// one key (q is staged in shared memory), the block finds the chunk's maximum and the
// exponentials (online softmax: the running sum and the accumulator are rescaled once per chunk),
// and each thread then adds the chunk's weighted values into the head-dim elements it owns
// (tid and tid + kThreads). Decoding asks for one query per step, so a block per (query, head) is
// all the parallelism there is outside the GEMMs; the prompt pass reuses the kernel with S rows.
#include "compute/hip/attention_cached.h"

#include <algorithm>
#include <cmath>

#include "compute/hip/device_common.h"  // defines: bf16ToFloat, floatToBf16, blockMax, blockSum
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

using gpu::bf16ToFloat;
using gpu::floatToBf16;

constexpr int kThreads = 128;  // keys per chunk, and head-dim elements per pass

__global__ void attentionCachedKernel(const hip_bfloat16* q, const hip_bfloat16* k,
                                      const hip_bfloat16* v, int queries, int keys, int heads,
                                      int kvHeads, int headDim, float scale, int window,
                                      float softcap, hip_bfloat16* out) {
  __shared__ float qShared[kMaxCachedAttentionHeadDim];
  __shared__ float weights[kThreads];
  const int query = static_cast<int>(blockIdx.x) / heads;
  const int head = static_cast<int>(blockIdx.x) % heads;
  const int kvHead = head / (heads / kvHeads);
  const int tid = static_cast<int>(threadIdx.x);
  const int visible = keys - queries + query + 1;
  const int start = window > 0 ? max(0, visible - window) : 0;  // the sliding window's first key
  const long long qRow = (static_cast<long long>(query) * heads + head) * headDim;
  for (int c = tid; c < headDim; c += kThreads) {
    qShared[c] = bf16ToFloat(q[qRow + c]);
  }
  __syncthreads();
  float runningMax = -INFINITY;
  float runningSum = 0.0f;
  float acc[2] = {0.0f, 0.0f};  // head-dim elements tid and tid + kThreads
  for (int first = start; first < visible; first += kThreads) {
    const int j = first + tid;
    float score = -INFINITY;
    if (j < visible) {
      const hip_bfloat16* kRow = k + (static_cast<long long>(j) * kvHeads + kvHead) * headDim;
      float dot = 0.0f;
      for (int c = 0; c < headDim; ++c) {
        dot += qShared[c] * bf16ToFloat(kRow[c]);
      }
      score = scale * dot;
      if (softcap > 0.0f) {
        score = softcap * tanhf(score / softcap);
      }
    }
    const float newMax = fmaxf(runningMax, gpu::blockMax(score));
    const float weight = j < visible ? expf(score - newMax) : 0.0f;
    weights[tid] = weight;
    const float rescale = expf(runningMax - newMax);  // 0 on the first chunk
    runningSum = runningSum * rescale + gpu::blockSum(weight);
    runningMax = newMax;
    __syncthreads();  // weights[] complete
    const int count = min(kThreads, visible - first);
    for (int e = 0; e < 2; ++e) {
      const int c = tid + e * kThreads;
      if (c >= headDim) {
        continue;
      }
      float sum = acc[e] * rescale;
      for (int t = 0; t < count; ++t) {
        sum += weights[t] *
               bf16ToFloat(v[(static_cast<long long>(first + t) * kvHeads + kvHead) * headDim + c]);
      }
      acc[e] = sum;
    }
    __syncthreads();  // weights[] is rewritten by the next chunk
  }
  for (int e = 0; e < 2; ++e) {
    const int c = tid + e * kThreads;
    if (c < headDim) {
      out[qRow + c] = floatToBf16(acc[e] / runningSum);
    }
  }
}

}  // namespace

void attentionCached(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                     std::int64_t queries, std::int64_t keys, std::int64_t heads,
                     std::int64_t kvHeads, std::int64_t headDim, float scale, std::int64_t window,
                     float softcap, std::uint16_t* out, hipStream_t stream) {
  launch("attention_cached", attentionCachedKernel, dim3(static_cast<unsigned>(queries * heads)),
         dim3(kThreads), 0, stream, reinterpret_cast<const hip_bfloat16*>(q),
         reinterpret_cast<const hip_bfloat16*>(k), reinterpret_cast<const hip_bfloat16*>(v),
         static_cast<int>(queries), static_cast<int>(keys), static_cast<int>(heads),
         static_cast<int>(kvHeads), static_cast<int>(headDim), scale,
         static_cast<int>(std::min(window, keys)), softcap, reinterpret_cast<hip_bfloat16*>(out));
}

}  // namespace lorascope::compute::hip
