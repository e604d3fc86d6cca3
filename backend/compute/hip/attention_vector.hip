// hip/attention_vector.hip — the vector-ALU attention kernels, forward and backward: fp32 on every
// device, every head dim up to 256. The dispatcher (hip/attention.hip) runs them where the
// matrix-core kernels do not serve: RDNA 2, head dims 129-256, or
// LORASCOPE_ATTENTION_KERNEL=vector. What both families share (units, masks, soft-capping):
// hip/attention_kernels.h.
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
// - Sliding window W: query i sees keys i − W < j ≤ i; packed documents: keys from the query's
//   document's start on (a register per query row; a shared int per streamed query in dk/dv). The
//   key (or query) loops start and end where a block's rows can see anything. Soft-capping turns
//   a score s into c·tanh(s / c) before the softmax; the backward multiplies ds by
//   ∂/∂s = 1 − tanh².
#include <cstdint>

#include "compute/hip/attention_kernels.h"  // defines: Dims, visible, capScore, rowOffset
#include "compute/hip/launch.h"             // defines: launch

namespace lorascope::compute::hip::attention {
namespace {

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
  const int start = documentStart(dims, b, iLoad);

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
  for (int t0 = firstVisibleKey(dims, b, r0); t0 < keyEnd; t0 += tileRows) {
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
        s[jj] = visible(dims, i, t0 + j, start) ? score : -INFINITY;  // also drops keys ≥ seq
        subMax = fmaxf(subMax, s[jj]);
      }
      // Without a window or packed documents the first key is visible to every row and newMax is
      // finite from the first sub-chunk on; with them, a row may have seen no key yet (newMax
      // −inf): shift by 0 then, so that rescale and p are 0 rather than NaN.
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
  const int start = documentStart(dims, b, iLoad);

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
  for (int t0 = firstVisibleKey(dims, b, r0); t0 < keyEnd; t0 += tileRows) {
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
      const float p = visible(dims, i, t0 + j, start) ? exp2f(s - lseLog2) : 0.0f;
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
  __shared__ int startTile[tileRows];  // the queries' documents' starts

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
  // W or more rows after its last key, nor, with packed documents, those whose document starts
  // after it.
  const int lastKey = min(k0 + kRowsPerBlock, dims.seq) - 1;
  const int queryEnd = min(queriesSeeingKeysEnd(dims, b, lastKey),
                           dims.window > 0 ? min(dims.seq, lastKey + dims.window) : dims.seq);
  for (int t0 = k0; t0 < queryEnd; t0 += tileRows) {
    __syncthreads();
    const int rows = min(tileRows, dims.seq - t0);
    loadTile<HDP>(reinterpret_cast<float*>(qTile), qBase, qStride, t0, rows, dims.headDim);
    loadTile<HDP>(reinterpret_cast<float*>(doTile), doBase, qStride, t0, rows, dims.headDim);
    for (int r = static_cast<int>(threadIdx.x); r < rows; r += static_cast<int>(blockDim.x)) {
      lseTile[r] = logsumexp[statBase + t0 + r] * kLog2e;
      dTile[r] = rowDot[statBase + t0 + r];
      startTile[r] = documentStart(dims, b, t0 + r);
    }
    __syncthreads();
    for (int r = 0; r < rows; ++r) {
      float slope;
      const float s = capScore(
          dims, groupDot<HDP, kBackwardLaneDims<HDP>>(kr, qTile + r * HDP / 4, lane), &slope);
      const float dp = groupDot<HDP, kBackwardLaneDims<HDP>>(vr, doTile + r * HDP / 4, lane);
      const float p = visible(dims, t0 + r, j, startTile[r]) ? exp2f(s - lseTile[r]) : 0.0f;
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

// The padded head dim the kernels are instantiated for.
int paddedHeadDim(std::int64_t headDim) {
  return headDim <= 64 ? 64 : headDim <= 128 ? 128 : 256;
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

}  // namespace

void forwardVector(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                   const AttentionShape& shape, float scale, std::uint16_t* out, float* logsumexp,
                   hipStream_t stream) {
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

void backwardVector(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                    const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                    const AttentionShape& shape, float scale, AttentionBackwardScratch scratch,
                    std::uint16_t* dq, hipStream_t stream) {
  const long long queryRows = shape.batch * shape.seq * shape.heads;
  launch("attention_backward", attentionRowDotKernel, elementwiseGrid(queryRows),
         dim3(kElementwiseThreads), 0, stream, asBf16(dout), asBf16(out), toDims(shape), queryRows,
         scratch.rowDot);
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

}  // namespace lorascope::compute::hip::attention
