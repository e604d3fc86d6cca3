// hip/attention_kernels.h — what the two families of attention kernels share, and the launchers
// each family defines. hip/attention.hip (the dispatcher behind attention.h) picks a family per
// launch with attentionKernels():
//   hip/attention_vector.hip  fp32 on the vector ALUs: every device, head dims up to 256
//   hip/attention_mma.hip     matrix cores through gpu::mma: head dims up to 128
// Both implement the same causal GQA attention, in the same units: scores in log2 units (q or k
// pre-scaled by scale·log2 e), logsumexp stored in natural units as Backend.h specifies, an
// optional sliding window, rows that pack documents apart, tanh soft-capping, and a backward (FA2)
// that writes per-query-head dk/dv partials which the dispatcher's group sum adds up in a fixed
// order (no atomics).
//
// Packed documents: query i sees key j only when j ≥ its document's start (one int per query,
// read from Dims::documentStarts). Starts never fall along a row, so a block of queries sees no
// key before its first query's start (the key loops begin there, skipping whole tiles), and a
// block of keys is seen by no query past the first whose start lies beyond its last key (the
// query loops end there: queriesSeeingKeysEnd).
// Include only from those three .hip translation units.
#pragma once

#include <algorithm>
#include <cstdint>

#include "compute/hip/attention.h"      // defines: AttentionShape, AttentionBackwardScratch
#include "compute/hip/device_common.h"  // defines: bf16ToFloat, floatToBf16, waveShflXor
#include "compute/hip/matrix_cores.h"   // defines: MatrixCores, currentMatrixCores

namespace lorascope::compute::hip::attention {

using gpu::bf16ToFloat;
using gpu::floatToBf16;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Dims {
  int seq;
  int heads;
  int kvHeads;
  int headDim;
  int window;                 // sliding window in keys; 0 = full causal
  float softcap;              // 0 = off
  const int* documentStarts;  // (B, S) or null: AttentionShape::documentStarts
};

// The start of the document of query row i in batch row b (0 without packed documents).
__device__ inline int documentStart(const Dims& d, int b, int i) {
  return d.documentStarts != nullptr ? d.documentStarts[static_cast<long long>(b) * d.seq + i] : 0;
}

// Whether query row i, whose document starts at `start`, sees key row j.
__device__ inline bool visible(const Dims& d, int i, int j, int start) {
  return j <= i && j >= start && (d.window <= 0 || i - j < d.window);
}

// A score in log2 units (q or k pre-scaled by scale·log2 e), soft-capped when the model caps:
// c·tanh(s / c) taken in natural units; *slope = ∂capped/∂s (1 when not capped).
__device__ inline float capScore(const Dims& d, float scoreLog2, float* slope) {
  if (d.softcap <= 0.0f) {
    *slope = 1.0f;
    return scoreLog2;
  }
  const float th = tanhf(scoreLog2 * kLn2 / d.softcap);
  *slope = 1.0f - th * th;
  return d.softcap * th * kLog2e;
}

// The first key a row block of batch row b starting at query r0 can see: the window's and its
// first query's document's start bound it.
__device__ inline int firstVisibleKey(const Dims& d, int b, int r0) {
  const int windowed = d.window > 0 ? max(0, r0 - d.window + 1) : 0;
  return max(windowed, documentStart(d, b, min(r0, d.seq - 1)));
}

// The end of the queries of batch row b that see any key up to lastKey: the first query past
// lastKey whose document starts after it (a binary search over the rising starts; the same loads
// in every thread), or S without packed documents.
__device__ inline int queriesSeeingKeysEnd(const Dims& d, int b, int lastKey) {
  if (d.documentStarts == nullptr) {
    return d.seq;
  }
  const int* starts = d.documentStarts + static_cast<long long>(b) * d.seq;
  int lo = min(lastKey + 1, d.seq);  // queries up to lastKey start at or before it
  int hi = d.seq;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (starts[mid] > lastKey) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Token stride of a (B, S, n, hd) tensor and the offset of (batch b, token t, head n).
__device__ inline long long rowOffset(const Dims& d, int nHeads, int b, int t, int n) {
  return ((static_cast<long long>(b) * d.seq + t) * nHeads + n) * d.headDim;
}

// Row blocks in reverse: under the causal mask the last rows see the most keys, and starting
// the longest blocks first shortens the tail of the grid.
__device__ inline int lastRowsFirst() {
  return static_cast<int>(gridDim.x - 1 - blockIdx.x);
}

// Elementwise kernels (the vector backward's row dot, the group sum): a grid-stride loop.
constexpr int kElementwiseThreads = 256;
constexpr long long kMaxElementwiseBlocks = 4096;  // grid-stride beyond this

inline dim3 elementwiseGrid(long long items) {
  return dim3(static_cast<unsigned>(std::min<long long>(
      (items + kElementwiseThreads - 1) / kElementwiseThreads, kMaxElementwiseBlocks)));
}

inline const hip_bfloat16* asBf16(const std::uint16_t* p) {
  return reinterpret_cast<const hip_bfloat16*>(p);
}
inline hip_bfloat16* asBf16(std::uint16_t* p) {
  return reinterpret_cast<hip_bfloat16*>(p);
}

inline Dims toDims(const AttentionShape& s) {
  return {static_cast<int>(s.seq),
          static_cast<int>(s.heads),
          static_cast<int>(s.kvHeads),
          static_cast<int>(s.headDim),
          static_cast<int>(std::min<std::int64_t>(s.window, s.seq)),
          s.softcap,
          s.documentStarts};
}

// The families' launchers, for a non-empty shape. Shapes and the contract are those of
// attentionForward/Backward in attention.h; the backward launchers fill scratch.rowDot and the
// dk/dv partials (the dispatcher sums those) and write dq.
// attention_vector.hip: every device, head dims up to kMaxAttentionHeadDim.
void forwardVector(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                   const AttentionShape& shape, float scale, std::uint16_t* out, float* logsumexp,
                   hipStream_t stream);
void backwardVector(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                    const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                    const AttentionShape& shape, float scale, AttentionBackwardScratch scratch,
                    std::uint16_t* dq, hipStream_t stream);
// attention_mma.hip: devices with matrix cores, head dims up to kMaxMatrixAttentionHeadDim,
// tensors of head dims 8k on 16 bytes (the dispatcher checks).
void forwardMatrixCores(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                        const AttentionShape& shape, float scale, std::uint16_t* out,
                        float* logsumexp, hipStream_t stream);
void backwardMatrixCores(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                         const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                         const AttentionShape& shape, float scale, AttentionBackwardScratch scratch,
                         std::uint16_t* dq, hipStream_t stream);

}  // namespace lorascope::compute::hip::attention
