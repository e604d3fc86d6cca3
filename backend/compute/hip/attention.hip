// hip/attention.hip — causal GQA attention, forward and backward, with an optional sliding window
// and tanh soft-capping of the scores (Mistral, Gemma 2/3); CPU twin: cpu/attention.cpp.
//
// Two sets of kernels, chosen per launch by attentionKernels(): the matrix-core kernels (further
// down: tensor cores on NVIDIA sm_80+, MFMA on CDNA 2/3, WMMA on RDNA 3/4, through gpu::mma of
// the portability header) for head dims up to 128, and the vector-ALU kernels described here for
// every other case (RDNA 2, head dims 129-256, or LORASCOPE_ATTENTION_KERNEL=vector).
//
// Vector kernels. Flash-style: no (seq, seq) matrix is ever stored. Keys (forward, dq) or queries
// (dk/dv) are staged through shared memory as fp32 tiles of at most 16 KiB each; every thread keeps
// its own row's vectors and accumulators in registers.
// - A row (a query row, or a key row in the dk/dv kernel) belongs to a group of G consecutive
//   lanes; lane l of the group holds the row's float4 chunks l, l+G, l+2G, ... of the head dim,
//   padded with zeros to HDP (64, 128 or 256). A dot product is a per-lane partial sum reduced
//   over the group with waveShflXor (G ≤ 8 divides every wave size). Interleaving the chunks
//   makes the group's lanes read neighbouring float4s of a shared-memory row: no bank conflicts.
// - Forward: online softmax in base 2 (q is pre-scaled by scale·log2 e) over sub-chunks of 16
//   keys, so the running max and the accumulator are rescaled once per 16 keys; logsumexp is
//   stored in natural units as Backend.h specifies.
// - Backward (FA2): D_i = dout_i·out_i first; then one kernel for dq (a query row per group,
//   keys streamed) and one for dk/dv (a key row per group and query head, queries streamed),
//   which writes per-query-head partials; a last kernel sums them over the KV group in a fixed
//   order. No atomics, so the gradients are bit-identical from run to run.
// - Sliding window W: query i sees keys i − W < j ≤ i; the key (or query) loops start and end
//   where a block's rows can see anything. Soft-capping turns a score s into c·tanh(s / c) before
//   the softmax; the backward multiplies ds by ∂/∂s = 1 − tanh².
#include "compute/hip/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "compute/hip/HipCheck.h"       // defines: LORASCOPE_HIP_CHECK
#include "compute/hip/device_common.h"  // defines: bf16ToFloat, floatToBf16, waveShflXor
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

using gpu::bf16ToFloat;
using gpu::floatToBf16;

constexpr int kRowsPerBlock = 64;  // query rows (forward, dq) or key rows (dk/dv) per block
constexpr int kTileFloats = 4096;  // one shared tile: (4096 / HDP) rows × HDP floats = 16 KiB
// Head-dim elements per lane. Fewer lanes per row would mean fewer shuffles but more registers
// per thread and so fewer resident waves; these keep every kernel under ~128 registers.
constexpr int kForwardLaneDims = 32;  // q and the output accumulator live per row
// The backward kernels keep three (dq: q, dout, dq) or four (dk/dv: k, v, dk, dv) vectors per
// row; at head dim 256, 16 dims per lane would take 16 lanes (1024 threads per block, 64
// registers each), so that size keeps 32.
template <int HDP>
constexpr int kBackwardLaneDims = HDP >= 256 ? 32 : 16;
constexpr int kSubKeys = 16;  // forward: keys per online-softmax rescale
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct Dims {
  int seq;
  int heads;
  int kvHeads;
  int headDim;
  int window;     // sliding window in keys; 0 = full causal
  float softcap;  // 0 = off
};

// Whether query row i sees key row j.
__device__ inline bool visible(const Dims& d, int i, int j) {
  return j <= i && (d.window <= 0 || i - j < d.window);
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

// The first key a row block starting at r0 can see.
__device__ inline int firstVisibleKey(const Dims& d, int r0) {
  return d.window > 0 ? max(0, r0 - d.window + 1) : 0;
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

// dst[r][c] = src row (t0 + r), element c, as fp32; zero outside [0, rows) × [0, headDim).
template <int HDP>
__device__ void loadTile(float* dst, const hip_bfloat16* src, long long tokenStride, int t0,
                         int rows, int headDim) {
  constexpr int tileRows = kTileFloats / HDP;
  for (int idx = threadIdx.x; idx < tileRows * HDP; idx += blockDim.x) {
    const int r = idx / HDP;
    const int c = idx % HDP;
    dst[idx] = (r < rows && c < headDim) ? bf16ToFloat(src[(t0 + r) * tokenStride + c]) : 0.0f;
  }
}

// The lane's chunks of one row of a (…, headDim) bf16 tensor, times `factor`; zero padded.
template <int HDP, int LaneDims>
__device__ void loadLaneChunks(float4 (&chunks)[LaneDims / 4], const hip_bfloat16* row, int headDim,
                               int lane, float factor) {
  constexpr int groupLanes = HDP / LaneDims;
#pragma unroll
  for (int c = 0; c < LaneDims / 4; ++c) {
    const int d = 4 * (c * groupLanes + lane);
    float e[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      e[u] = d + u < headDim ? bf16ToFloat(row[d + u]) * factor : 0.0f;
    }
    chunks[c] = make_float4(e[0], e[1], e[2], e[3]);
  }
}

template <int HDP, int LaneDims>
__device__ void storeLaneChunks(const float4 (&chunks)[LaneDims / 4], hip_bfloat16* row,
                                int headDim, int lane, float factor) {
  constexpr int groupLanes = HDP / LaneDims;
#pragma unroll
  for (int c = 0; c < LaneDims / 4; ++c) {
    const int d = 4 * (c * groupLanes + lane);
    const float e[4] = {chunks[c].x, chunks[c].y, chunks[c].z, chunks[c].w};
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (d + u < headDim) {
        row[d + u] = floatToBf16(e[u] * factor);
      }
    }
  }
}

// Σ over the group's lanes of this lane's chunks · the same chunks of a shared-memory row.
template <int HDP, int LaneDims>
__device__ inline float groupDot(const float4 (&mine)[LaneDims / 4], const float4* sharedRow,
                                 int lane) {
  constexpr int groupLanes = HDP / LaneDims;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);  // four chains for instruction parallelism
#pragma unroll
  for (int c = 0; c < LaneDims / 4; ++c) {
    const float4 o = sharedRow[c * groupLanes + lane];
    acc.x += mine[c].x * o.x;
    acc.y += mine[c].y * o.y;
    acc.z += mine[c].z * o.z;
    acc.w += mine[c].w * o.w;
  }
  float sum = (acc.x + acc.y) + (acc.z + acc.w);
#pragma unroll
  for (int offset = 1; offset < groupLanes; offset *= 2) {
    sum += gpu::waveShflXor(sum, offset);
  }
  return sum;
}

// acc += alpha · (this lane's chunks of a shared-memory row)
template <int HDP, int LaneDims>
__device__ inline void addScaledRow(float4 (&acc)[LaneDims / 4], float alpha,
                                    const float4* sharedRow, int lane) {
  constexpr int groupLanes = HDP / LaneDims;
#pragma unroll
  for (int c = 0; c < LaneDims / 4; ++c) {
    const float4 o = sharedRow[c * groupLanes + lane];
    acc[c].x += alpha * o.x;
    acc[c].y += alpha * o.y;
    acc[c].z += alpha * o.z;
    acc[c].w += alpha * o.w;
  }
}

// grid (ceil(S / 64), heads, B), block 64 · HDP / 64 threads.
template <int HDP>
__global__ void __launch_bounds__(kRowsPerBlock* HDP / kForwardLaneDims)
    attentionForwardKernel(const hip_bfloat16* q, const hip_bfloat16* k, const hip_bfloat16* v,
                           Dims dims, float scaleLog2, hip_bfloat16* out, float* logsumexp) {
  constexpr int groupLanes = HDP / kForwardLaneDims;
  constexpr int chunks = kForwardLaneDims / 4;
  constexpr int tileRows = kTileFloats / HDP;
  __shared__ float4 kTile[kTileFloats / 4];
  __shared__ float4 vTile[kTileFloats / 4];

  const int lane = static_cast<int>(threadIdx.x) % groupLanes;
  const int r0 = lastRowsFirst() * kRowsPerBlock;
  const int i = r0 + static_cast<int>(threadIdx.x) / groupLanes;  // this group's query row
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const bool valid = i < dims.seq;
  const int iLoad = valid ? i : dims.seq - 1;  // rows past the end compute, but never store

  float4 qr[chunks];
  loadLaneChunks<HDP, kForwardLaneDims>(qr, q + rowOffset(dims, dims.heads, b, iLoad, h),
                                        dims.headDim, lane, scaleLog2);
  float4 acc[chunks];
#pragma unroll
  for (int c = 0; c < chunks; ++c) {
    acc[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  float runningMax = -INFINITY;
  float runningSum = 0.0f;

  const long long kvStride = static_cast<long long>(dims.kvHeads) * dims.headDim;
  const hip_bfloat16* kBase = k + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const hip_bfloat16* vBase = v + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const int keyEnd = min(r0 + kRowsPerBlock, dims.seq);  // the block's last row sees keys < this
  for (int t0 = firstVisibleKey(dims, r0); t0 < keyEnd; t0 += tileRows) {
    __syncthreads();  // the previous tile is no longer read
    const int rows = min(tileRows, dims.seq - t0);
    loadTile<HDP>(reinterpret_cast<float*>(kTile), kBase, kvStride, t0, rows, dims.headDim);
    loadTile<HDP>(reinterpret_cast<float*>(vTile), vBase, kvStride, t0, rows, dims.headDim);
    __syncthreads();
    for (int j0 = 0; j0 < tileRows && t0 + j0 < keyEnd; j0 += kSubKeys) {
      float s[kSubKeys];
      float subMax = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < kSubKeys; ++jj) {
        const int j = j0 + jj;
        float slope;
        const float score =
            capScore(dims, groupDot<HDP, kForwardLaneDims>(qr, kTile + j * HDP / 4, lane), &slope);
        s[jj] = visible(dims, i, t0 + j) ? score : -INFINITY;  // also drops keys ≥ seq
        subMax = fmaxf(subMax, s[jj]);
      }
      // Without a window key 0 is visible to every row and newMax is finite from the first
      // sub-chunk on; with one, a row may have seen no key yet (newMax −inf): shift by 0 then,
      // so that rescale and p are 0 rather than NaN.
      const float newMax = fmaxf(runningMax, subMax);
      const float shift = newMax == -INFINITY ? 0.0f : newMax;
      const float rescale = exp2f(runningMax - shift);
      runningSum *= rescale;
#pragma unroll
      for (int c = 0; c < chunks; ++c) {
        acc[c].x *= rescale;
        acc[c].y *= rescale;
        acc[c].z *= rescale;
        acc[c].w *= rescale;
      }
#pragma unroll
      for (int jj = 0; jj < kSubKeys; ++jj) {
        const float p = exp2f(s[jj] - shift);
        runningSum += p;
        addScaledRow<HDP, kForwardLaneDims>(acc, p, vTile + (j0 + jj) * HDP / 4, lane);
      }
      runningMax = newMax;
    }
  }
  if (valid) {
    storeLaneChunks<HDP, kForwardLaneDims>(acc, out + rowOffset(dims, dims.heads, b, i, h),
                                           dims.headDim, lane, 1.0f / runningSum);
    if (lane == 0) {
      logsumexp[(static_cast<long long>(b) * dims.heads + h) * dims.seq + i] =
          (runningMax + log2f(runningSum)) * kLn2;
    }
  }
}

// rowDot (B, heads, S) = Σ_d dout · out; one thread per (b, t, head), grid-stride.
__global__ void attentionRowDotKernel(const hip_bfloat16* dout, const hip_bfloat16* out, Dims dims,
                                      long long rows, float* rowDot) {
  for (long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long base = r * dims.headDim;  // r enumerates (b, t, head) in memory order
    float sum = 0.0f;
    for (int d = 0; d < dims.headDim; ++d) {
      sum += bf16ToFloat(dout[base + d]) * bf16ToFloat(out[base + d]);
    }
    const long long h = r % dims.heads;
    const long long bt = r / dims.heads;
    const long long t = bt % dims.seq;
    const long long b = bt / dims.seq;
    rowDot[(b * dims.heads + h) * dims.seq + t] = sum;
  }
}

// dq_i = scale · Σ_j p_ij (dout_i·v_j − D_i) k_j. grid (ceil(S / 64), heads, B).
template <int HDP>
__global__ void __launch_bounds__(kRowsPerBlock* HDP / kBackwardLaneDims<HDP>)
    attentionDqKernel(const hip_bfloat16* dout, const hip_bfloat16* q, const hip_bfloat16* k,
                      const hip_bfloat16* v, const float* logsumexp, const float* rowDot, Dims dims,
                      float scale, hip_bfloat16* dq) {
  constexpr int groupLanes = HDP / kBackwardLaneDims<HDP>;
  constexpr int chunks = kBackwardLaneDims<HDP> / 4;
  constexpr int tileRows = kTileFloats / HDP;
  __shared__ float4 kTile[kTileFloats / 4];
  __shared__ float4 vTile[kTileFloats / 4];

  const int lane = static_cast<int>(threadIdx.x) % groupLanes;
  const int r0 = lastRowsFirst() * kRowsPerBlock;
  const int i = r0 + static_cast<int>(threadIdx.x) / groupLanes;
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const bool valid = i < dims.seq;
  const int iLoad = valid ? i : dims.seq - 1;

  const float scaleLog2 = scale * kLog2e;
  float4 qr[chunks];
  float4 dor[chunks];
  float4 acc[chunks];
  loadLaneChunks<HDP, kBackwardLaneDims<HDP>>(qr, q + rowOffset(dims, dims.heads, b, iLoad, h),
                                              dims.headDim, lane, scaleLog2);
  loadLaneChunks<HDP, kBackwardLaneDims<HDP>>(dor, dout + rowOffset(dims, dims.heads, b, iLoad, h),
                                              dims.headDim, lane, 1.0f);
#pragma unroll
  for (int c = 0; c < chunks; ++c) {
    acc[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  const long long stat = (static_cast<long long>(b) * dims.heads + h) * dims.seq + iLoad;
  const float lseLog2 = logsumexp[stat] * kLog2e;
  const float rowD = rowDot[stat];

  const long long kvStride = static_cast<long long>(dims.kvHeads) * dims.headDim;
  const hip_bfloat16* kBase = k + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const hip_bfloat16* vBase = v + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const int keyEnd = min(r0 + kRowsPerBlock, dims.seq);
  for (int t0 = firstVisibleKey(dims, r0); t0 < keyEnd; t0 += tileRows) {
    __syncthreads();
    const int rows = min(tileRows, dims.seq - t0);
    loadTile<HDP>(reinterpret_cast<float*>(kTile), kBase, kvStride, t0, rows, dims.headDim);
    loadTile<HDP>(reinterpret_cast<float*>(vTile), vBase, kvStride, t0, rows, dims.headDim);
    __syncthreads();
    const int tileEnd = min(tileRows, keyEnd - t0);
    for (int j = 0; j < tileEnd; ++j) {
      float slope;
      const float s = capScore(
          dims, groupDot<HDP, kBackwardLaneDims<HDP>>(qr, kTile + j * HDP / 4, lane), &slope);
      const float dp = groupDot<HDP, kBackwardLaneDims<HDP>>(dor, vTile + j * HDP / 4, lane);
      const float p = visible(dims, i, t0 + j) ? exp2f(s - lseLog2) : 0.0f;
      addScaledRow<HDP, kBackwardLaneDims<HDP>>(acc, p * (dp - rowD) * slope, kTile + j * HDP / 4,
                                                lane);
    }
  }
  if (valid) {
    storeLaneChunks<HDP, kBackwardLaneDims<HDP>>(acc, dq + rowOffset(dims, dims.heads, b, i, h),
                                                 dims.headDim, lane, scale);
  }
}

// Per query head h: dk_j = scale · Σ_i ds_ij q_i, dv_j = Σ_i p_ij dout_i over i ≥ j, into the
// f32 partials (B, S, heads, hd). grid (ceil(S / 64), heads, B); a group of lanes per key row.
template <int HDP>
__global__ void __launch_bounds__(kRowsPerBlock* HDP / kBackwardLaneDims<HDP>)
    attentionDkDvKernel(const hip_bfloat16* dout, const hip_bfloat16* q, const hip_bfloat16* k,
                        const hip_bfloat16* v, const float* logsumexp, const float* rowDot,
                        Dims dims, float scale, float* dkPartial, float* dvPartial) {
  constexpr int groupLanes = HDP / kBackwardLaneDims<HDP>;
  constexpr int chunks = kBackwardLaneDims<HDP> / 4;
  constexpr int tileRows = kTileFloats / HDP;
  __shared__ float4 qTile[kTileFloats / 4];
  __shared__ float4 doTile[kTileFloats / 4];
  __shared__ float lseTile[tileRows];  // log2 units
  __shared__ float dTile[tileRows];

  const int lane = static_cast<int>(threadIdx.x) % groupLanes;
  const int k0 = static_cast<int>(blockIdx.x) * kRowsPerBlock;
  const int j = k0 + static_cast<int>(threadIdx.x) / groupLanes;  // this group's key row
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const bool valid = j < dims.seq;
  const int jLoad = valid ? j : dims.seq - 1;

  const float scaleLog2 = scale * kLog2e;
  float4 kr[chunks];
  float4 vr[chunks];
  float4 dkAcc[chunks];
  float4 dvAcc[chunks];
  loadLaneChunks<HDP, kBackwardLaneDims<HDP>>(kr, k + rowOffset(dims, dims.kvHeads, b, jLoad, kvh),
                                              dims.headDim, lane, scaleLog2);
  loadLaneChunks<HDP, kBackwardLaneDims<HDP>>(vr, v + rowOffset(dims, dims.kvHeads, b, jLoad, kvh),
                                              dims.headDim, lane, 1.0f);
#pragma unroll
  for (int c = 0; c < chunks; ++c) {
    dkAcc[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    dvAcc[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  const long long qStride = static_cast<long long>(dims.heads) * dims.headDim;
  const hip_bfloat16* qBase = q + rowOffset(dims, dims.heads, b, 0, h);
  const hip_bfloat16* doBase = dout + rowOffset(dims, dims.heads, b, 0, h);
  const long long statBase = (static_cast<long long>(b) * dims.heads + h) * dims.seq;
  // Queries before the block's first key see none of its keys; with a window, neither do those
  // W or more rows after its last key.
  const int queryEnd =
      dims.window > 0 ? min(dims.seq, k0 + kRowsPerBlock - 1 + dims.window) : dims.seq;
  for (int t0 = k0; t0 < queryEnd; t0 += tileRows) {
    __syncthreads();
    const int rows = min(tileRows, dims.seq - t0);
    loadTile<HDP>(reinterpret_cast<float*>(qTile), qBase, qStride, t0, rows, dims.headDim);
    loadTile<HDP>(reinterpret_cast<float*>(doTile), doBase, qStride, t0, rows, dims.headDim);
    for (int r = static_cast<int>(threadIdx.x); r < rows; r += static_cast<int>(blockDim.x)) {
      lseTile[r] = logsumexp[statBase + t0 + r] * kLog2e;
      dTile[r] = rowDot[statBase + t0 + r];
    }
    __syncthreads();
    for (int r = 0; r < rows; ++r) {
      float slope;
      const float s = capScore(
          dims, groupDot<HDP, kBackwardLaneDims<HDP>>(kr, qTile + r * HDP / 4, lane), &slope);
      const float dp = groupDot<HDP, kBackwardLaneDims<HDP>>(vr, doTile + r * HDP / 4, lane);
      const float p = visible(dims, t0 + r, j) ? exp2f(s - lseTile[r]) : 0.0f;
      addScaledRow<HDP, kBackwardLaneDims<HDP>>(dvAcc, p, doTile + r * HDP / 4, lane);
      addScaledRow<HDP, kBackwardLaneDims<HDP>>(dkAcc, p * (dp - dTile[r]) * slope,
                                                qTile + r * HDP / 4, lane);
    }
  }
  if (valid) {
    const long long base = rowOffset(dims, dims.heads, b, j, h);
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
      const int d = 4 * (c * groupLanes + lane);
      const float dkE[4] = {dkAcc[c].x, dkAcc[c].y, dkAcc[c].z, dkAcc[c].w};
      const float dvE[4] = {dvAcc[c].x, dvAcc[c].y, dvAcc[c].z, dvAcc[c].w};
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (d + u < dims.headDim) {
          dkPartial[base + d + u] = dkE[u] * scale;
          dvPartial[base + d + u] = dvE[u];
        }
      }
    }
  }
}

// dk[b, t, kvh, d] = Σ over the group's query heads of dkPartial[b, t, h, d] (same for dv).
__global__ void attentionGroupSumKernel(const float* dkPartial, const float* dvPartial, Dims dims,
                                        long long elements, hip_bfloat16* dk, hip_bfloat16* dv) {
  const int group = dims.heads / dims.kvHeads;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < elements;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long d = e % dims.headDim;
    const long long kvh = e / dims.headDim % dims.kvHeads;
    const long long bt = e / (static_cast<long long>(dims.headDim) * dims.kvHeads);
    const long long first = (bt * dims.heads + kvh * group) * dims.headDim + d;
    float dkSum = 0.0f;
    float dvSum = 0.0f;
    for (int g = 0; g < group; ++g) {
      dkSum += dkPartial[first + static_cast<long long>(g) * dims.headDim];
      dvSum += dvPartial[first + static_cast<long long>(g) * dims.headDim];
    }
    dk[e] = floatToBf16(dkSum);
    dv[e] = floatToBf16(dvSum);
  }
}

// ---------------------------------------------------------------------------------------------
// Matrix-core kernels (gpu::mma: NVIDIA tensor cores, AMD MFMA/WMMA), head dims up to 128.
// A block has kMmaWaves waves; each wave owns 16 rows (query rows in the forward and dq kernels,
// key rows in the dk/dv kernel) and multiplies 16×16 bf16 tiles staged in shared memory into f32
// accumulators. Q·Kᵀ, dO·Vᵀ and K·Qᵀ, V·dOᵀ take their B operand row by row (loadBt); P·V, dS·K,
// Pᵀ·dO and dSᵀ·Q take it transposed (loadB). P and dS enter their product as a pair of bf16
// operands (accToASplit: hi + lo, ~16 significant bits), not as one rounded bf16 as in
// FlashAttention-2: one bf16 P gives errors of 2^-9·Σ|p·v|, which where the sum cancels are
// several times the parity tolerance. The second product cost ~10% of the kernels' time on an
// H100 (bench_attention, Qwen2.5-0.5B shape). Softmax statistics, masks and
// soft-capping are applied per accumulator element in fp32, in the same units (log2) as the vector
// kernels above; the dk/dv partials and their group sum are those kernels' too, so the backward
// stays free of atomics. The dq kernel also computes D = rowsum(dO ∘ O) for its rows, in place of
// the vector path's separate row-dot kernel. K/V (forward, dq)
// and Q/dO (dk/dv) tiles stream through kStages buffers: on NVIDIA the next tile's cp.async copies
// run while the current one is multiplied.
constexpr int kMmaWaves = 4;
constexpr int kMmaBlockRows = kMmaWaves * 16;  // query rows (forward, dq) or key rows (dk/dv)
[[maybe_unused]] constexpr int kMmaKeys = 64;  // keys per shared tile (forward, dq)
constexpr int kMmaScratch = 256;               // bf16 per wave for accToA
// Shared rows padded by 16 bytes, so that the 8 rows an ldmatrix (or a lane group) reads start
// in different banks.
template <int HDP>
constexpr int kMmaLd = HDP + 8;
// dq: keys per register pass (the score and dO·Vᵀ accumulators of a pass stay live together).
template <int HDP>
constexpr int kDqKeyChunk = HDP >= 128 ? 32 : 64;
// dk/dv: queries per shared tile (K, V, Q and dO tiles fit 64 KiB, AMD's limit per block).
template <int HDP>
constexpr int kDkDvQueries = HDP >= 128 ? 32 : 64;

constexpr int kStages = gpu::kAsyncCopyStages;  // buffers per streamed tile

// Dynamic shared memory of the matrix-core kernels, in bytes (NVIDIA lets them past 48 KiB on
// request; AMD's single-buffered layout stays within its 64 KiB).
template <int HDP>
struct MmaShared {
  static constexpr std::size_t row = kMmaLd<HDP> * sizeof(std::uint16_t);  // a tile row
  static constexpr std::size_t scratch = kMmaWaves * kMmaScratch * sizeof(std::uint16_t);
  // forward, dq: kStages × (K and V tiles of kMmaKeys rows), then the waves' scratch
  static constexpr std::size_t keyLoop = kStages * 2 * kMmaKeys * row + scratch;
  // dk/dv: K and V tiles of the block's keys, kStages × (Q and dO tiles, logsumexp and D), scratch
  static constexpr std::size_t queries = kDkDvQueries<HDP>;
  static constexpr std::size_t queryStage = 2 * queries * row + 2 * queries * sizeof(float);
  static constexpr std::size_t dkDv = 2 * kMmaBlockRows * row + kStages * queryStage + scratch;
};

// The matrix-core kernels compile to empty bodies for targets without matrix cores (RDNA 2, the
// host pass); their launcher never picks them there.
template <typename... Params>
__device__ inline void unusedWithoutMatrixCores(const Params&...) {}

#if defined(LORASCOPE_GPU_MMA)
namespace mma = gpu::mma;

// dst[r][c] (row stride kMmaLd) = src row t0 + r, element c; zero outside rows [0, rows) and
// [0, headDim). Head dims 8k: 16-byte asynchronous copies (the caller commits and waits for
// them); others: element by element, finished when this returns.
template <int HDP>
__device__ void loadTileBf16(hip_bfloat16* dst, const hip_bfloat16* src, long long tokenStride,
                             int t0, int rows, int tileRows, int headDim) {
  constexpr int ld = kMmaLd<HDP>;
  if (headDim % 8 == 0) {
    constexpr int vectorsPerRow = HDP / 8;
    for (int idx = static_cast<int>(threadIdx.x); idx < tileRows * vectorsPerRow;
         idx += static_cast<int>(blockDim.x)) {
      const int r = idx / vectorsPerRow;
      const int c = idx % vectorsPerRow * 8;
      const bool inside = r < rows && c < headDim;
      mma::copy16Async(dst + r * ld + c, inside ? src + (t0 + r) * tokenStride + c : src, inside);
    }
    return;
  }
  for (int idx = static_cast<int>(threadIdx.x); idx < tileRows * HDP;
       idx += static_cast<int>(blockDim.x)) {
    const int r = idx / HDP;
    const int c = idx % HDP;
    dst[r * ld + c] =
        (r < rows && c < headDim) ? src[(t0 + r) * tokenStride + c] : floatToBf16(0.0f);
  }
}
#endif

// grid (ceil(S / 64), heads, B), block kMmaWaves waves.
template <int HDP>
__global__ void __launch_bounds__(kMmaWaves* gpu::kWaveSize)
    attentionForwardMmaKernel(const hip_bfloat16* q, const hip_bfloat16* k, const hip_bfloat16* v,
                              Dims dims, float scaleLog2, hip_bfloat16* out, float* logsumexp) {
#if defined(LORASCOPE_GPU_MMA)
  constexpr int ld = kMmaLd<HDP>;
  constexpr int steps = HDP / 16;
  constexpr int keyBlocks = kMmaKeys / 16;
  constexpr int slots = mma::kAccRowSlots;
  constexpr int tileElems = kMmaKeys * ld;
  // Stage s: K tile at tiles + 2s·tileElems, V tile after it; the waves' scratch after the last.
  extern __shared__ __align__(16) unsigned char forwardShared[];
  auto* tiles = reinterpret_cast<hip_bfloat16*>(forwardShared);
  hip_bfloat16* scratch = tiles + kStages * 2 * tileElems;

  const int wave = static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  hip_bfloat16* waveScratch = scratch + wave * kMmaScratch;
  const int r0 = lastRowsFirst() * kMmaBlockRows;
  const int w0 = r0 + wave * 16;  // this wave's first query row
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const long long qStride = static_cast<long long>(dims.heads) * dims.headDim;
  const long long kvStride = static_cast<long long>(dims.kvHeads) * dims.headDim;

  // Q through shared memory into A operands, kept for the whole key loop.
  loadTileBf16<HDP>(tiles, q + rowOffset(dims, dims.heads, b, 0, h), qStride, r0,
                    min(kMmaBlockRows, dims.seq - r0), kMmaBlockRows, dims.headDim);
  mma::copyAsyncCommit();
  mma::copyAsyncWait<0>();
  __syncthreads();
  mma::FragA qa[steps];
#pragma unroll
  for (int kk = 0; kk < steps; ++kk) {
    mma::loadA(qa[kk], tiles + wave * 16 * ld + kk * 16, ld);
  }
  mma::FragC o[steps];
#pragma unroll
  for (int n = 0; n < steps; ++n) {
    mma::zero(o[n]);
  }
  float runningMax[slots];
  float runningSum[slots];  // this lane's share; summed over the row's lanes at the end
#pragma unroll
  for (int sl = 0; sl < slots; ++sl) {
    runningMax[sl] = -INFINITY;
    runningSum[sl] = 0.0f;
  }

  const hip_bfloat16* kBase = k + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const hip_bfloat16* vBase = v + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const int keyEnd = min(r0 + kMmaBlockRows, dims.seq);
  const int firstKey = firstVisibleKey(dims, r0);
  const auto stageKeys = [&](int t0, int stage) {
    const int rows = min(kMmaKeys, dims.seq - t0);
    loadTileBf16<HDP>(tiles + 2 * stage * tileElems, kBase, kvStride, t0, rows, kMmaKeys,
                      dims.headDim);
    loadTileBf16<HDP>(tiles + (2 * stage + 1) * tileElems, vBase, kvStride, t0, rows, kMmaKeys,
                      dims.headDim);
  };
  __syncthreads();  // Q's staging is read
  if (kStages > 1) {
    stageKeys(firstKey, 0);
    mma::copyAsyncCommit();
  }
  int stage = 0;
  for (int t0 = firstKey; t0 < keyEnd; t0 += kMmaKeys, stage = (stage + 1) % kStages) {
    // With two stages the next tile streams in while this one is multiplied; with one, this
    // tile is loaded now. The first barrier frees the buffer the load overwrites.
    __syncthreads();
    if (kStages == 1) {
      stageKeys(t0, 0);
    } else if (t0 + kMmaKeys < keyEnd) {
      stageKeys(t0 + kMmaKeys, (stage + 1) % kStages);
    }
    mma::copyAsyncCommit();
    mma::copyAsyncWait<kStages - 1>();
    __syncthreads();
    const hip_bfloat16* kTile = tiles + 2 * stage * tileElems;
    const hip_bfloat16* vTile = kTile + tileElems;
    // Waves whose rows see none of these keys (all before the diagonal, or all past the
    // window's start, or rows past the end) skip the tile.
    if (w0 >= dims.seq || t0 > w0 + 15 ||
        (dims.window > 0 && t0 + kMmaKeys - 1 <= w0 - dims.window)) {
      continue;
    }
    const bool masked = t0 + kMmaKeys - 1 > w0 || t0 + kMmaKeys > dims.seq ||
                        (dims.window > 0 && t0 <= w0 + 15 - dims.window);
    mma::FragC s[keyBlocks];
#pragma unroll
    for (int n = 0; n < keyBlocks; ++n) {
      mma::zero(s[n]);
    }
#pragma unroll
    for (int kk = 0; kk < steps; ++kk) {
#pragma unroll
      for (int n = 0; n < keyBlocks; ++n) {
        mma::FragB kb;
        mma::loadBt(kb, kTile + n * 16 * ld + kk * 16, ld);
        mma::mma(s[n], qa[kk], kb);
      }
    }
    float tileMax[slots];
#pragma unroll
    for (int sl = 0; sl < slots; ++sl) {
      tileMax[sl] = -INFINITY;
    }
#pragma unroll
    for (int n = 0; n < keyBlocks; ++n) {
#pragma unroll
      for (int e = 0; e < mma::kAccElems; ++e) {
        const int sl = mma::accSlot(e);
        float slope;
        float x = capScore(dims, s[n].v[e] * scaleLog2, &slope);
        if (masked && !visible(dims, w0 + mma::slotRow(sl), t0 + n * 16 + mma::accCol(e))) {
          x = -INFINITY;
        }
        s[n].v[e] = x;
        tileMax[sl] = fmaxf(tileMax[sl], x);
      }
    }
    float shift[slots];
#pragma unroll
    for (int sl = 0; sl < slots; ++sl) {
      // As in the vector kernel: a row that has seen no key yet (window) shifts by 0.
      const float newMax = fmaxf(runningMax[sl], mma::rowMax(tileMax[sl]));
      shift[sl] = newMax == -INFINITY ? 0.0f : newMax;
      const float rescale = exp2f(runningMax[sl] - shift[sl]);
      runningSum[sl] *= rescale;
      runningMax[sl] = newMax;
      tileMax[sl] = rescale;
    }
#pragma unroll
    for (int n = 0; n < steps; ++n) {
#pragma unroll
      for (int e = 0; e < mma::kAccElems; ++e) {
        o[n].v[e] *= tileMax[mma::accSlot(e)];
      }
    }
#pragma unroll
    for (int kb = 0; kb < keyBlocks; ++kb) {
#pragma unroll
      for (int e = 0; e < mma::kAccElems; ++e) {
        const int sl = mma::accSlot(e);
        const float p = exp2f(s[kb].v[e] - shift[sl]);
        runningSum[sl] += p;
        s[kb].v[e] = p;
      }
      mma::FragA pHigh;
      mma::FragA pLow;
      mma::accToASplit(pHigh, pLow, s[kb], waveScratch);
#pragma unroll
      for (int n = 0; n < steps; ++n) {
        mma::FragB vb;
        mma::loadB(vb, vTile + kb * 16 * ld + n * 16, ld);
        mma::mma(o[n], pHigh, vb);
        mma::mma(o[n], pLow, vb);
      }
    }
  }
  float inverseSum[slots];
#pragma unroll
  for (int sl = 0; sl < slots; ++sl) {
    runningSum[sl] = mma::rowSum(runningSum[sl]);
    inverseSum[sl] = 1.0f / runningSum[sl];
  }
#pragma unroll
  for (int n = 0; n < steps; ++n) {
#pragma unroll
    for (int e = 0; e < mma::kAccElems; ++e) {
      const int sl = mma::accSlot(e);
      const int i = w0 + mma::slotRow(sl);
      const int c = n * 16 + mma::accCol(e);
      if (i < dims.seq && c < dims.headDim) {
        out[rowOffset(dims, dims.heads, b, i, h) + c] = floatToBf16(o[n].v[e] * inverseSum[sl]);
      }
      if (n == 0 && i < dims.seq && mma::accCol(e) == 0) {
        logsumexp[(static_cast<long long>(b) * dims.heads + h) * dims.seq + i] =
            (runningMax[sl] + log2f(runningSum[sl])) * kLn2;
      }
    }
  }
#else
  unusedWithoutMatrixCores(q, k, v, dims, scaleLog2, out, logsumexp);
#endif
}

// dq_i = scale · Σ_j p_ij (dout_i·v_j − D_i) k_j, and D_i = dout_i · out_i itself, written to
// rowDot (B, heads, S) for the dk/dv kernel after it. grid (ceil(S / 64), heads, B); dynamic
// shared memory MmaShared<HDP>::keyLoop.
template <int HDP>
__global__ void __launch_bounds__(kMmaWaves* gpu::kWaveSize)
    attentionDqMmaKernel(const hip_bfloat16* dout, const hip_bfloat16* q, const hip_bfloat16* k,
                         const hip_bfloat16* v, const hip_bfloat16* out, const float* logsumexp,
                         Dims dims, float scale, float* rowDot, hip_bfloat16* dq) {
#if defined(LORASCOPE_GPU_MMA)
  constexpr int ld = kMmaLd<HDP>;
  constexpr int steps = HDP / 16;
  constexpr int chunkBlocks = kDqKeyChunk<HDP> / 16;
  constexpr int slots = mma::kAccRowSlots;
  constexpr int tileElems = kMmaKeys * ld;
  extern __shared__ __align__(16) unsigned char dqShared[];  // as the forward kernel's
  auto* tiles = reinterpret_cast<hip_bfloat16*>(dqShared);
  hip_bfloat16* scratch = tiles + kStages * 2 * tileElems;

  const int wave = static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  hip_bfloat16* waveScratch = scratch + wave * kMmaScratch;
  const int r0 = lastRowsFirst() * kMmaBlockRows;
  const int w0 = r0 + wave * 16;
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const long long qStride = static_cast<long long>(dims.heads) * dims.headDim;
  const long long kvStride = static_cast<long long>(dims.kvHeads) * dims.headDim;
  const float scaleLog2 = scale * kLog2e;

  const int blockRows = min(kMmaBlockRows, dims.seq - r0);
  loadTileBf16<HDP>(tiles, q + rowOffset(dims, dims.heads, b, 0, h), qStride, r0, blockRows,
                    kMmaBlockRows, dims.headDim);
  loadTileBf16<HDP>(tiles + tileElems, dout + rowOffset(dims, dims.heads, b, 0, h), qStride, r0,
                    blockRows, kMmaBlockRows, dims.headDim);
  mma::copyAsyncCommit();
  mma::copyAsyncWait<0>();
  __syncthreads();
  mma::FragA qa[steps];
  mma::FragA da[steps];
#pragma unroll
  for (int kk = 0; kk < steps; ++kk) {
    mma::loadA(qa[kk], tiles + wave * 16 * ld + kk * 16, ld);
    mma::loadA(da[kk], tiles + tileElems + wave * 16 * ld + kk * 16, ld);
  }
  // D_i = dout_i · out_i: out takes Q's place, two lanes per row sum half the head dim each.
  __shared__ float rowDotTile[kMmaBlockRows];
  const long long statBase = (static_cast<long long>(b) * dims.heads + h) * dims.seq;
  __syncthreads();
  loadTileBf16<HDP>(tiles, out + rowOffset(dims, dims.heads, b, 0, h), qStride, r0, blockRows,
                    kMmaBlockRows, dims.headDim);
  mma::copyAsyncCommit();
  mma::copyAsyncWait<0>();
  __syncthreads();
  for (int t = static_cast<int>(threadIdx.x); t < 2 * kMmaBlockRows;
       t += static_cast<int>(blockDim.x)) {
    const int r = t / 2;
    const hip_bfloat16* outRow = tiles + r * ld + (t % 2) * (HDP / 2);
    const hip_bfloat16* doRow = tiles + tileElems + r * ld + (t % 2) * (HDP / 2);
    float sum = 0.0f;
    for (int c = 0; c < HDP / 2; ++c) {  // the padding is zero
      sum += bf16ToFloat(doRow[c]) * bf16ToFloat(outRow[c]);
    }
    sum += gpu::waveShflXor(sum, 1);
    if (t % 2 == 0) {
      rowDotTile[r] = sum;
      if (r < blockRows) {
        rowDot[statBase + r0 + r] = sum;
      }
    }
  }
  __syncthreads();
  float lseLog2[slots];
  float rowD[slots];
#pragma unroll
  for (int sl = 0; sl < slots; ++sl) {
    const int i = min(w0 + mma::slotRow(sl), dims.seq - 1);
    lseLog2[sl] = logsumexp[statBase + i] * kLog2e;
    rowD[sl] = rowDotTile[wave * 16 + mma::slotRow(sl)];
  }
  mma::FragC acc[steps];
#pragma unroll
  for (int n = 0; n < steps; ++n) {
    mma::zero(acc[n]);
  }

  const hip_bfloat16* kBase = k + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const hip_bfloat16* vBase = v + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const int keyEnd = min(r0 + kMmaBlockRows, dims.seq);
  const int firstKey = firstVisibleKey(dims, r0);
  const auto stageKeys = [&](int t0, int stage) {
    const int rows = min(kMmaKeys, dims.seq - t0);
    loadTileBf16<HDP>(tiles + 2 * stage * tileElems, kBase, kvStride, t0, rows, kMmaKeys,
                      dims.headDim);
    loadTileBf16<HDP>(tiles + (2 * stage + 1) * tileElems, vBase, kvStride, t0, rows, kMmaKeys,
                      dims.headDim);
  };
  __syncthreads();  // the staging of out and dO is read
  if (kStages > 1) {
    stageKeys(firstKey, 0);
    mma::copyAsyncCommit();
  }
  int stage = 0;
  for (int t0 = firstKey; t0 < keyEnd; t0 += kMmaKeys, stage = (stage + 1) % kStages) {
    __syncthreads();  // as in the forward kernel
    if (kStages == 1) {
      stageKeys(t0, 0);
    } else if (t0 + kMmaKeys < keyEnd) {
      stageKeys(t0 + kMmaKeys, (stage + 1) % kStages);
    }
    mma::copyAsyncCommit();
    mma::copyAsyncWait<kStages - 1>();
    __syncthreads();
    const hip_bfloat16* kTile = tiles + 2 * stage * tileElems;
    const hip_bfloat16* vTile = kTile + tileElems;
#pragma unroll
    for (int c0 = 0; c0 < kMmaKeys; c0 += kDqKeyChunk<HDP>) {
      const int j0 = t0 + c0;  // the chunk's first key
      if (w0 >= dims.seq || j0 > w0 + 15 ||
          (dims.window > 0 && j0 + kDqKeyChunk<HDP> - 1 <= w0 - dims.window)) {
        continue;
      }
      const bool masked = j0 + kDqKeyChunk<HDP> - 1 > w0 || j0 + kDqKeyChunk<HDP> > dims.seq ||
                          (dims.window > 0 && j0 <= w0 + 15 - dims.window);
      mma::FragC s[chunkBlocks];
      mma::FragC dp[chunkBlocks];
#pragma unroll
      for (int n = 0; n < chunkBlocks; ++n) {
        mma::zero(s[n]);
        mma::zero(dp[n]);
      }
#pragma unroll
      for (int kk = 0; kk < steps; ++kk) {
#pragma unroll
        for (int n = 0; n < chunkBlocks; ++n) {
          mma::FragB kb;
          mma::loadBt(kb, kTile + (c0 + n * 16) * ld + kk * 16, ld);
          mma::mma(s[n], qa[kk], kb);
          mma::FragB vb;
          mma::loadBt(vb, vTile + (c0 + n * 16) * ld + kk * 16, ld);
          mma::mma(dp[n], da[kk], vb);
        }
      }
#pragma unroll
      for (int n = 0; n < chunkBlocks; ++n) {
#pragma unroll
        for (int e = 0; e < mma::kAccElems; ++e) {
          const int sl = mma::accSlot(e);
          float slope;
          const float x = capScore(dims, s[n].v[e] * scaleLog2, &slope);
          const bool seen =
              !masked || visible(dims, w0 + mma::slotRow(sl), j0 + n * 16 + mma::accCol(e));
          const float p = seen ? exp2f(x - lseLog2[sl]) : 0.0f;
          s[n].v[e] = p * (dp[n].v[e] - rowD[sl]) * slope;
        }
        mma::FragA dsHigh;
        mma::FragA dsLow;
        mma::accToASplit(dsHigh, dsLow, s[n], waveScratch);
#pragma unroll
        for (int m = 0; m < steps; ++m) {
          mma::FragB kb;
          mma::loadB(kb, kTile + (c0 + n * 16) * ld + m * 16, ld);
          mma::mma(acc[m], dsHigh, kb);
          mma::mma(acc[m], dsLow, kb);
        }
      }
    }
  }
#pragma unroll
  for (int n = 0; n < steps; ++n) {
#pragma unroll
    for (int e = 0; e < mma::kAccElems; ++e) {
      const int i = w0 + mma::slotRow(mma::accSlot(e));
      const int c = n * 16 + mma::accCol(e);
      if (i < dims.seq && c < dims.headDim) {
        dq[rowOffset(dims, dims.heads, b, i, h) + c] = floatToBf16(acc[n].v[e] * scale);
      }
    }
  }
#else
  unusedWithoutMatrixCores(dout, q, k, v, out, logsumexp, dims, scale, rowDot, dq);
#endif
}

// Per query head h: dk_j = scale · Σ_i ds_ij q_i, dv_j = Σ_i p_ij dout_i over visible i, into
// the f32 partials (B, S, heads, hd), as attentionDkDvKernel. grid (ceil(S / 64), heads, B);
// dynamic shared memory MmaShared<HDP>::dkDv.
template <int HDP>
__global__ void __launch_bounds__(kMmaWaves* gpu::kWaveSize)
    attentionDkDvMmaKernel(const hip_bfloat16* dout, const hip_bfloat16* q, const hip_bfloat16* k,
                           const hip_bfloat16* v, const float* logsumexp, const float* rowDot,
                           Dims dims, float scale, float* dkPartial, float* dvPartial) {
#if defined(LORASCOPE_GPU_MMA)
  constexpr int ld = kMmaLd<HDP>;
  constexpr int steps = HDP / 16;
  constexpr int queries = kDkDvQueries<HDP>;
  // K and V tiles, then per stage: Q and dO tiles, logsumexp (log2 units) and D; then scratch.
  extern __shared__ __align__(16) unsigned char dkDvShared[];
  auto* kTile = reinterpret_cast<hip_bfloat16*>(dkDvShared);
  hip_bfloat16* vTile = kTile + kMmaBlockRows * ld;
  unsigned char* stages = dkDvShared + 2 * kMmaBlockRows * ld * sizeof(hip_bfloat16);
  auto* scratch = reinterpret_cast<hip_bfloat16*>(stages + kStages * MmaShared<HDP>::queryStage);
  const auto qTileOf = [&](int stage) {
    return reinterpret_cast<hip_bfloat16*>(stages + stage * MmaShared<HDP>::queryStage);
  };
  const auto lseTileOf = [&](int stage) {
    return reinterpret_cast<float*>(qTileOf(stage) + 2 * queries * ld);
  };

  const int wave = static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  hip_bfloat16* waveScratch = scratch + wave * kMmaScratch;
  const int k0 = static_cast<int>(blockIdx.x) * kMmaBlockRows;
  const int kw0 = k0 + wave * 16;  // this wave's first key row
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const long long qStride = static_cast<long long>(dims.heads) * dims.headDim;
  const long long kvStride = static_cast<long long>(dims.kvHeads) * dims.headDim;
  const float scaleLog2 = scale * kLog2e;

  const int blockKeys = min(kMmaBlockRows, dims.seq - k0);
  loadTileBf16<HDP>(kTile, k + rowOffset(dims, dims.kvHeads, b, 0, kvh), kvStride, k0, blockKeys,
                    kMmaBlockRows, dims.headDim);
  loadTileBf16<HDP>(vTile, v + rowOffset(dims, dims.kvHeads, b, 0, kvh), kvStride, k0, blockKeys,
                    kMmaBlockRows, dims.headDim);
  mma::FragC dkAcc[steps];
  mma::FragC dvAcc[steps];
#pragma unroll
  for (int n = 0; n < steps; ++n) {
    mma::zero(dkAcc[n]);
    mma::zero(dvAcc[n]);
  }

  const hip_bfloat16* qBase = q + rowOffset(dims, dims.heads, b, 0, h);
  const hip_bfloat16* doBase = dout + rowOffset(dims, dims.heads, b, 0, h);
  const long long statBase = (static_cast<long long>(b) * dims.heads + h) * dims.seq;
  const int queryEnd =
      dims.window > 0 ? min(dims.seq, k0 + kMmaBlockRows - 1 + dims.window) : dims.seq;
  const auto stageQueries = [&](int t0, int stage) {
    const int rows = min(queries, dims.seq - t0);
    loadTileBf16<HDP>(qTileOf(stage), qBase, qStride, t0, rows, queries, dims.headDim);
    loadTileBf16<HDP>(qTileOf(stage) + queries * ld, doBase, qStride, t0, rows, queries,
                      dims.headDim);
    float* lse = lseTileOf(stage);
    for (int r = static_cast<int>(threadIdx.x); r < queries; r += static_cast<int>(blockDim.x)) {
      // Rows past the end get p = 0 (their Q and dO are zero too).
      lse[r] = r < rows ? logsumexp[statBase + t0 + r] * kLog2e : INFINITY;
      lse[queries + r] = r < rows ? rowDot[statBase + t0 + r] : 0.0f;
    }
  };
  if (kStages > 1) {
    stageQueries(k0, 0);  // in the same group as K and V above
  }
  mma::copyAsyncCommit();
  int stage = 0;
  for (int t0 = k0; t0 < queryEnd; t0 += queries, stage = (stage + 1) % kStages) {
    __syncthreads();  // as in the forward kernel
    if (kStages == 1) {
      stageQueries(t0, 0);
    } else if (t0 + queries < queryEnd) {
      stageQueries(t0 + queries, (stage + 1) % kStages);
    }
    mma::copyAsyncCommit();
    mma::copyAsyncWait<kStages - 1>();
    __syncthreads();
    const hip_bfloat16* qTile = qTileOf(stage);
    const hip_bfloat16* doTile = qTile + queries * ld;
    const float* lseTile = lseTileOf(stage);
    const float* dTile = lseTile + queries;
    if (kw0 >= dims.seq || t0 + queries - 1 < kw0 ||
        (dims.window > 0 && t0 >= kw0 + 15 + dims.window)) {
      continue;
    }
    const bool masked = t0 < kw0 + 15 || t0 + queries > dims.seq ||
                        (dims.window > 0 && t0 + queries - 1 >= kw0 + dims.window);
#pragma unroll
    for (int qs = 0; qs < queries / 16; ++qs) {
      const int i0 = t0 + qs * 16;
      if (i0 + 15 < kw0) {
        continue;  // these queries precede every key of the wave
      }
      mma::FragC s;   // K·Qᵀ: rows are keys, columns queries
      mma::FragC dp;  // V·dOᵀ
      mma::zero(s);
      mma::zero(dp);
#pragma unroll
      for (int kk = 0; kk < steps; ++kk) {
        mma::FragA ka;
        mma::loadA(ka, kTile + wave * 16 * ld + kk * 16, ld);
        mma::FragB qb;
        mma::loadBt(qb, qTile + qs * 16 * ld + kk * 16, ld);
        mma::mma(s, ka, qb);
        mma::FragA va;
        mma::loadA(va, vTile + wave * 16 * ld + kk * 16, ld);
        mma::FragB db;
        mma::loadBt(db, doTile + qs * 16 * ld + kk * 16, ld);
        mma::mma(dp, va, db);
      }
#pragma unroll
      for (int e = 0; e < mma::kAccElems; ++e) {
        const int r = qs * 16 + mma::accCol(e);  // the query's row in the tile
        float slope;
        const float x = capScore(dims, s.v[e] * scaleLog2, &slope);
        const bool seen = !masked || visible(dims, t0 + r, kw0 + mma::slotRow(mma::accSlot(e)));
        const float p = seen ? exp2f(x - lseTile[r]) : 0.0f;
        s.v[e] = p;
        dp.v[e] = p * (dp.v[e] - dTile[r]) * slope;
      }
      mma::FragA high;
      mma::FragA low;
      mma::accToASplit(high, low, s, waveScratch);
#pragma unroll
      for (int n = 0; n < steps; ++n) {
        mma::FragB dob;
        mma::loadB(dob, doTile + qs * 16 * ld + n * 16, ld);
        mma::mma(dvAcc[n], high, dob);
        mma::mma(dvAcc[n], low, dob);
      }
      mma::accToASplit(high, low, dp, waveScratch);
#pragma unroll
      for (int n = 0; n < steps; ++n) {
        mma::FragB qb;
        mma::loadB(qb, qTile + qs * 16 * ld + n * 16, ld);
        mma::mma(dkAcc[n], high, qb);
        mma::mma(dkAcc[n], low, qb);
      }
    }
  }
#pragma unroll
  for (int n = 0; n < steps; ++n) {
#pragma unroll
    for (int e = 0; e < mma::kAccElems; ++e) {
      const int j = kw0 + mma::slotRow(mma::accSlot(e));
      const int c = n * 16 + mma::accCol(e);
      if (j < dims.seq && c < dims.headDim) {
        const long long at = rowOffset(dims, dims.heads, b, j, h) + c;
        dkPartial[at] = dkAcc[n].v[e] * scale;
        dvPartial[at] = dvAcc[n].v[e];
      }
    }
  }
#else
  unusedWithoutMatrixCores(dout, q, k, v, logsumexp, rowDot, dims, scale, dkPartial, dvPartial);
#endif
}

constexpr int kElementwiseThreads = 256;
constexpr long long kMaxElementwiseBlocks = 4096;  // grid-stride beyond this

dim3 elementwiseGrid(long long items) {
  return dim3(static_cast<unsigned>(std::min<long long>(
      (items + kElementwiseThreads - 1) / kElementwiseThreads, kMaxElementwiseBlocks)));
}

// The padded head dim the kernels are instantiated for.
int paddedHeadDim(std::int64_t headDim) {
  return headDim <= 64 ? 64 : headDim <= 128 ? 128 : 256;
}

const hip_bfloat16* asBf16(const std::uint16_t* p) {
  return reinterpret_cast<const hip_bfloat16*>(p);
}
hip_bfloat16* asBf16(std::uint16_t* p) {
  return reinterpret_cast<hip_bfloat16*>(p);
}

Dims toDims(const AttentionShape& s) {
  return {static_cast<int>(s.seq),
          static_cast<int>(s.heads),
          static_cast<int>(s.kvHeads),
          static_cast<int>(s.headDim),
          static_cast<int>(std::min<std::int64_t>(s.window, s.seq)),
          s.softcap};
}

dim3 rowBlocksGrid(const AttentionShape& s) {
  return dim3(static_cast<unsigned>((s.seq + kRowsPerBlock - 1) / kRowsPerBlock),
              static_cast<unsigned>(s.heads), static_cast<unsigned>(s.batch));
}

template <int HDP>
void launchForward(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                   const AttentionShape& shape, float scale, std::uint16_t* out, float* logsumexp,
                   hipStream_t stream) {
  launch("attention_forward", attentionForwardKernel<HDP>, rowBlocksGrid(shape),
         dim3(kRowsPerBlock * HDP / kForwardLaneDims), 0, stream, asBf16(q), asBf16(k), asBf16(v),
         toDims(shape), scale * kLog2e, asBf16(out), logsumexp);
}

template <int HDP>
void launchBackward(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                    const std::uint16_t* v, const float* logsumexp, const AttentionShape& shape,
                    float scale, AttentionBackwardScratch scratch, std::uint16_t* dq,
                    hipStream_t stream) {
  launch("attention_backward", attentionDqKernel<HDP>, rowBlocksGrid(shape),
         dim3(kRowsPerBlock * HDP / kBackwardLaneDims<HDP>), 0, stream, asBf16(dout), asBf16(q),
         asBf16(k), asBf16(v), logsumexp, scratch.rowDot, toDims(shape), scale, asBf16(dq));
  launch("attention_backward", attentionDkDvKernel<HDP>, rowBlocksGrid(shape),
         dim3(kRowsPerBlock * HDP / kBackwardLaneDims<HDP>), 0, stream, asBf16(dout), asBf16(q),
         asBf16(k), asBf16(v), logsumexp, scratch.rowDot, toDims(shape), scale, scratch.dkPartial,
         scratch.dvPartial);
}

// The matrix-core kernels' grid: 64 rows per block (forward, dq: query rows; dk/dv: key rows).
dim3 mmaGrid(const AttentionShape& s) {
  return dim3(static_cast<unsigned>((s.seq + kMmaBlockRows - 1) / kMmaBlockRows),
              static_cast<unsigned>(s.heads), static_cast<unsigned>(s.batch));
}

struct MatrixCores {
  bool available = false;
  int waveSize = 0;
};

// Whether the current device has matrix cores the kernels drive, and its wave size (the blocks
// are kMmaWaves waves); asked once per device.
MatrixCores currentMatrixCores() {
  constexpr int kMaxDevices = 64;
  static std::mutex mutex;
  static std::array<std::optional<MatrixCores>, kMaxDevices> known;
  int device = 0;
  LORASCOPE_HIP_CHECK(hipGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  if (device < 0 || device >= kMaxDevices) {
    return {};
  }
  if (!known[static_cast<std::size_t>(device)]) {
    hipDeviceProp_t prop{};
    LORASCOPE_HIP_CHECK(hipGetDeviceProperties(&prop, device));
    known[static_cast<std::size_t>(device)] = MatrixCores{gpu::hasMatrixCores(prop), prop.warpSize};
  }
  return *known[static_cast<std::size_t>(device)];
}

// LORASCOPE_ATTENTION_KERNEL=vector: the vector-ALU kernels everywhere (a comparison, or a way
// around a matrix-core kernel suspected of a fault); unset or "auto": matrix cores where they
// serve. Read once per process.
bool vectorKernelsForced() {
  static const bool forced = [] {
    const char* value = std::getenv("LORASCOPE_ATTENTION_KERNEL");
    return value != nullptr && std::string_view(value) == "vector";
  }();
  return forced;
}

dim3 mmaBlock() {
  return dim3(static_cast<unsigned>(kMmaWaves * currentMatrixCores().waveSize));
}

// Past 48 KiB of dynamic shared memory NVIDIA wants the kernel's consent, per device (AMD's
// kernels stay within 64 KiB, which needs none). Asked once per kernel and device, so that a
// step captured as a graph later makes no such call.
template <typename... Params>
void allowSharedBytes(void (*kernel)(Params...), std::size_t bytes) {
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> allowed;
  int device = 0;
  LORASCOPE_HIP_CHECK(hipGetDevice(&device));
  const auto* function = reinterpret_cast<const void*>(kernel);
  const std::lock_guard<std::mutex> lock(mutex);
  if (allowed.count({function, device}) == 0) {
    LORASCOPE_HIP_CHECK(hipFuncSetAttribute(function, hipFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(bytes)));
    allowed.insert({function, device});
  }
}

template <int HDP>
void launchForwardMma(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                      const AttentionShape& shape, float scale, std::uint16_t* out,
                      float* logsumexp, hipStream_t stream) {
  constexpr std::size_t shared = MmaShared<HDP>::keyLoop;
  allowSharedBytes(attentionForwardMmaKernel<HDP>, shared);
  launch("attention_forward", attentionForwardMmaKernel<HDP>, mmaGrid(shape), mmaBlock(), shared,
         stream, asBf16(q), asBf16(k), asBf16(v), toDims(shape), scale * kLog2e, asBf16(out),
         logsumexp);
}

template <int HDP>
void launchBackwardMma(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                       const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                       const AttentionShape& shape, float scale, AttentionBackwardScratch scratch,
                       std::uint16_t* dq, hipStream_t stream) {
  allowSharedBytes(attentionDqMmaKernel<HDP>, MmaShared<HDP>::keyLoop);
  launch("attention_backward", attentionDqMmaKernel<HDP>, mmaGrid(shape), mmaBlock(),
         MmaShared<HDP>::keyLoop, stream, asBf16(dout), asBf16(q), asBf16(k), asBf16(v),
         asBf16(out), logsumexp, toDims(shape), scale, scratch.rowDot, asBf16(dq));
  constexpr std::size_t shared = MmaShared<HDP>::dkDv;
  allowSharedBytes(attentionDkDvMmaKernel<HDP>, shared);
  launch("attention_backward", attentionDkDvMmaKernel<HDP>, mmaGrid(shape), mmaBlock(), shared,
         stream, asBf16(dout), asBf16(q), asBf16(k), asBf16(v), logsumexp, scratch.rowDot,
         toDims(shape), scale, scratch.dkPartial, scratch.dvPartial);
}

void launchBackwardVector(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                          const std::uint16_t* v, const float* logsumexp,
                          const AttentionShape& shape, float scale,
                          AttentionBackwardScratch scratch, std::uint16_t* dq, hipStream_t stream) {
  switch (paddedHeadDim(shape.headDim)) {
    case 64:
      launchBackward<64>(dout, q, k, v, logsumexp, shape, scale, scratch, dq, stream);
      break;
    case 128:
      launchBackward<128>(dout, q, k, v, logsumexp, shape, scale, scratch, dq, stream);
      break;
    default:
      launchBackward<256>(dout, q, k, v, logsumexp, shape, scale, scratch, dq, stream);
      break;
  }
}

}  // namespace

namespace {
// The matrix-core kernels copy rows of head dims 8k in 16-byte pieces: such tensors must start on
// 16 bytes (the allocator's blocks do; a view at an odd offset goes to the vector kernels).
bool tilesCopyable(const AttentionShape& shape,
                   std::initializer_list<const std::uint16_t*> tensors) {
  if (shape.headDim % 8 != 0) {
    return true;
  }
  return std::all_of(tensors.begin(), tensors.end(), [](const std::uint16_t* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  });
}
}  // namespace

AttentionKernels attentionKernels(const AttentionShape& shape) {
  const MatrixCores device = currentMatrixCores();
  if (shape.headDim <= kMaxMatrixAttentionHeadDim && device.available && !vectorKernelsForced()) {
    return AttentionKernels::MatrixCores;
  }
  return AttentionKernels::Vector;
}

void attentionForward(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                      AttentionShape shape, float scale, std::uint16_t* out, float* logsumexp,
                      hipStream_t stream) {
  if (shape.batch == 0 || shape.seq == 0 || shape.heads == 0) {
    return;
  }
  if (attentionKernels(shape) == AttentionKernels::MatrixCores && tilesCopyable(shape, {q, k, v})) {
    if (shape.headDim <= 64) {
      launchForwardMma<64>(q, k, v, shape, scale, out, logsumexp, stream);
    } else {
      launchForwardMma<128>(q, k, v, shape, scale, out, logsumexp, stream);
    }
    return;
  }
  switch (paddedHeadDim(shape.headDim)) {
    case 64:
      launchForward<64>(q, k, v, shape, scale, out, logsumexp, stream);
      break;
    case 128:
      launchForward<128>(q, k, v, shape, scale, out, logsumexp, stream);
      break;
    default:
      launchForward<256>(q, k, v, shape, scale, out, logsumexp, stream);
      break;
  }
}

void attentionBackward(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                       const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                       AttentionShape shape, float scale, AttentionBackwardScratch scratch,
                       std::uint16_t* dq, std::uint16_t* dk, std::uint16_t* dv,
                       hipStream_t stream) {
  if (shape.batch == 0 || shape.seq == 0 || shape.heads == 0) {
    return;
  }
  if (attentionKernels(shape) == AttentionKernels::MatrixCores &&
      tilesCopyable(shape, {dout, q, k, v, out})) {
    // D = rowsum(dout ∘ out) comes from the dq kernel.
    if (shape.headDim <= 64) {
      launchBackwardMma<64>(dout, q, k, v, out, logsumexp, shape, scale, scratch, dq, stream);
    } else {
      launchBackwardMma<128>(dout, q, k, v, out, logsumexp, shape, scale, scratch, dq, stream);
    }
  } else {
    const long long queryRows = shape.batch * shape.seq * shape.heads;
    launch("attention_backward", attentionRowDotKernel, elementwiseGrid(queryRows),
           dim3(kElementwiseThreads), 0, stream, asBf16(dout), asBf16(out), toDims(shape),
           queryRows, scratch.rowDot);
    launchBackwardVector(dout, q, k, v, logsumexp, shape, scale, scratch, dq, stream);
  }
  const long long kvElements = shape.batch * shape.seq * shape.kvHeads * shape.headDim;
  launch("attention_backward", attentionGroupSumKernel, elementwiseGrid(kvElements),
         dim3(kElementwiseThreads), 0, stream, scratch.dkPartial, scratch.dvPartial, toDims(shape),
         kvElements, asBf16(dk), asBf16(dv));
}

}  // namespace lorascope::compute::hip
