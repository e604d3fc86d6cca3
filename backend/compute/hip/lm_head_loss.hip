// hip/lm_head_loss.hip — the row kernels of the fused lm-head + cross-entropy (the scheme is in
// lm_head_loss.h); CPU twin: cpu/lm_head_loss.cpp. Row kernels run one block per row, every
// thread striding over the columns; the chunk kernel reads its row's logits twice, for their
// maximum and then for the weights and their sum (Note [one exponential a logit]).
#include "compute/hip/lm_head_loss.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "compute/hip/device_common.h"  // defines: blockSum, blockMax, loadFloat, floatToBf16
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

constexpr int kThreadsPerRow = 256;  // a multiple of both wave sizes (32 and 64)
// The chunk kernel's threads a row (it reads its row twice: the statistics, then the weights). On
// an H200 (bench_gpu_train --prompt-percent 50 --profile-steps 3, 2 runs each in one call) the
// lm-head's own kernels took 0.770-0.775 ms a Llama-3.2-1B step with 512 against 0.837-0.844 with
// 256, 0.889 against 0.961-0.962 on Qwen2.5-0.5B; with 1024 they took 0.885-0.891 on Llama.
constexpr int kChunkThreads = 512;

// Note [one exponential a logit]: the chunk kernel had kept an online (max, Σ exp) pair per
// thread over its first read of the logits, an expf and a data-dependent branch a logit, then
// taken a second expf a logit for the weights. Nsight Compute found it bound by the ALU, not by
// memory (Llama-3.2-1B, B8 × S512 at 50% prompt tokens, H200: 95 µs a chunk, SM 75%, DRAM 52%).
// Now the first read takes only the maximum, and the second takes each weight's exponential once
// (2^x, gpu::exp2Fast: ex2.approx on NVIDIA, whose relative error of 2^-22 is far below the
// weights' bf16 rounding) and sums the weights as it writes them: the chunk's sum is relative to
// the row's new running max, and the running sum is rescaled by the old one alone. Under Nsight
// Compute (same call shape) a chunk then took 70.5-74.8 µs (SM 40-43%, DRAM 53-57%); in the
// product's loop (Llama-3.2-1B, --packing documents, op timing) the lm-head's own kernels took
// 1.06 ms a step against 1.17.

// logits, weights (rows, columns). Each thread takes P consecutive columns at a time (one 16-byte
// load of logits, one 2P-byte store of weights: Note [packed elementwise]); P divides columns.
template <int P>
__global__ void lmHeadChunkKernel(const float* logits, long long columns, long long firstColumn,
                                  bool firstChunk, const std::int32_t* targets,
                                  std::int32_t ignoreTarget, float softcap, LmHeadRowState state,
                                  hip_bfloat16* weights) {
  constexpr float kLog2e = 1.4426950408889634f;
  const long long row = blockIdx.x;
  const float* rowLogits = logits + row * columns;
  const auto capped = [&](float raw) {
    return softcap > 0.0f ? softcap * tanhf(raw / softcap) : raw;
  };
  const long long first = static_cast<long long>(threadIdx.x) * P;
  const long long stride = static_cast<long long>(blockDim.x) * P;
  float threadMax = -INFINITY;
  for (long long c = first; c < columns; c += stride) {
    float v[P];
    gpu::loadPack(rowLogits, c, v);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      threadMax = fmaxf(threadMax, capped(v[k]));
    }
  }
  // A chunk has ≥ 1 column of finite logits, so newMax is finite.
  const float chunkMax = gpu::blockMax(threadMax);
  const float previousMax = firstChunk ? chunkMax : state.runningMax[row];
  const float newMax = fmaxf(previousMax, chunkMax);
  hip_bfloat16* rowWeights = weights != nullptr ? weights + row * columns : nullptr;
  const bool ignored = targets[row] == ignoreTarget;
  float threadSum = 0.0f;
  for (long long c = first; c < columns; c += stride) {
    float v[P];
    gpu::loadPack(rowLogits, c, v);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const float l = capped(v[k]);
      // l − newMax first: exact, and 0 for the row's largest logit, whose weight is then 1.
      const float p = gpu::exp2Fast((l - newMax) * kLog2e);
      threadSum += p;
      const float slope = softcap > 0.0f ? 1.0f - (l / softcap) * (l / softcap) : 1.0f;
      v[k] = ignored ? 0.0f : p * slope;
    }
    if (rowWeights != nullptr) {
      gpu::storePack(rowWeights, c, v);
    }
  }
  const float chunkSum = gpu::blockSum(threadSum);
  __syncthreads();  // every thread has read runningMax before thread 0 replaces it
  if (threadIdx.x == 0) {
    const float rescale = expf(previousMax - newMax);
    const float previousSum = firstChunk ? 0.0f : state.runningSum[row];
    state.runningSum[row] = previousSum * rescale + chunkSum;
    state.runningMax[row] = newMax;
    state.rescale[row] = rescale;
    const std::int32_t target = targets[row];
    if (target != ignoreTarget && target >= firstColumn && target < firstColumn + columns) {
      state.targetLogit[row] = capped(rowLogits[target - firstColumn]);
    }
  }
}

// dhSum (rows, hidden), grid-stride over packs of P (1 or 4) elements of one row (P divides
// hidden). A row whose running max this chunk left as it was has factor 1 and is not touched:
// after the first few chunks that is most rows (a row's max changes at each new record, ~3 times
// over 16 random chunks), and x · 1 = x, so skipping it changes no bit.
template <int P>
__global__ void lmHeadRescaleRowsKernel(float* dhSum, long long rows, long long hidden,
                                        const float* rescale) {
  const long long count = rows * hidden;
  for (long long e = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) * P; e < count;
       e += static_cast<long long>(gridDim.x) * blockDim.x * P) {
    const float factor = rescale[e / hidden];
    if (factor == 1.0f) {
      continue;
    }
    if constexpr (P == 4) {
      float4 v = *reinterpret_cast<const float4*>(dhSum + e);
      v.x *= factor;
      v.y *= factor;
      v.z *= factor;
      v.w *= factor;
      *reinterpret_cast<float4*>(dhSum + e) = v;
    } else {
      dhSum[e] *= factor;
    }
  }
}

// out (rows, hidden) = src rows sourceRows[..]; Unit: 16 bytes (uint4) where hidden and both
// tensors allow, else one bf16.
template <typename Unit>
__global__ void lmHeadGatherRowsKernel(const Unit* src, const std::int32_t* sourceRows,
                                       long long unitsPerRow, Unit* out) {
  const long long row = blockIdx.x;
  const Unit* from = src + static_cast<long long>(sourceRows[row]) * unitsPerRow;
  for (long long u = threadIdx.x; u < unitsPerRow; u += blockDim.x) {
    out[row * unitsPerRow + u] = from[u];
  }
}

__global__ void lmHeadLossesKernel(LmHeadRowState state, long long rows,
                                   const std::int32_t* targets, std::int32_t ignoreTarget,
                                   const std::int32_t* outRows, float* losses) {
  for (long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<long long>(gridDim.x) * blockDim.x) {
    losses[outRows != nullptr ? outRows[r] : r] =
        targets[r] == ignoreTarget
            ? 0.0f
            : state.runningMax[r] + logf(state.runningSum[r]) - state.targetLogit[r];
  }
}

// dhSum (rows, hidden) f32, weight (vocab, hidden), dh (rows, hidden) bf16
template <typename WeightT>
__global__ void lmHeadFinishGradientKernel(const float* dhSum, long long hidden,
                                           const WeightT* weight, const std::int32_t* targets,
                                           std::int32_t ignoreTarget, float softcap,
                                           LmHeadRowState state, float gradScale,
                                           const float* gradScaleOnDevice,
                                           const std::int32_t* outRows, hip_bfloat16* dh) {
  const long long row = blockIdx.x;
  hip_bfloat16* dhRow = dh + (outRows != nullptr ? outRows[row] : row) * hidden;
  const float scale = gradScaleOnDevice != nullptr ? *gradScaleOnDevice : gradScale;
  const std::int32_t target = targets[row];
  const bool ignored = target == ignoreTarget;
  const float inverseSum = 1.0f / state.runningSum[row];
  const WeightT* targetRow = weight + (ignored ? 0 : static_cast<long long>(target) * hidden);
  const float capped = softcap > 0.0f && !ignored ? state.targetLogit[row] / softcap : 0.0f;
  const float targetSlope = 1.0f - capped * capped;
  for (long long d = threadIdx.x; d < hidden; d += blockDim.x) {
    const float g = ignored ? 0.0f
                            : scale * (dhSum[row * hidden + d] * inverseSum -
                                       targetSlope * gpu::loadFloat(targetRow, d));
    dhRow[d] = gpu::floatToBf16(g);
  }
}

constexpr int kElementwiseThreads = 256;
constexpr long long kMaxElementwiseBlocks = 4096;  // grid-stride beyond this

dim3 elementwiseGrid(long long items) {
  return dim3(static_cast<unsigned>(std::min<long long>(
      (items + kElementwiseThreads - 1) / kElementwiseThreads, kMaxElementwiseBlocks)));
}

}  // namespace

std::int64_t lmHeadChunkColumns(std::int64_t rows, std::int64_t vocab) {
  constexpr std::int64_t kAlign = 128;
  std::int64_t columns = kLmHeadChunkFloats / std::max<std::int64_t>(rows, 1);
  if (columns >= kAlign) {
    columns -= columns % kAlign;
  }
  return std::clamp<std::int64_t>(columns, 1, std::max<std::int64_t>(vocab, 1));
}

void lmHeadGatherRows(const std::uint16_t* src, const std::int32_t* sourceRows, std::int64_t rows,
                      std::int64_t hidden, std::uint16_t* out, hipStream_t stream) {
  if (rows == 0 || hidden == 0) {
    return;
  }
  const dim3 grid(static_cast<unsigned>(rows));
  constexpr long long kPerUnit = sizeof(uint4) / sizeof(std::uint16_t);
  if (hidden % kPerUnit == 0 && gpu::alignedTo(src, 16) && gpu::alignedTo(out, 16)) {
    launch("lm_head_cross_entropy", lmHeadGatherRowsKernel<uint4>, grid, dim3(kThreadsPerRow), 0,
           stream, reinterpret_cast<const uint4*>(src), sourceRows, hidden / kPerUnit,
           reinterpret_cast<uint4*>(out));
  } else {
    launch("lm_head_cross_entropy", lmHeadGatherRowsKernel<std::uint16_t>, grid,
           dim3(kThreadsPerRow), 0, stream, src, sourceRows, hidden, out);
  }
}

void lmHeadChunk(const float* logits, std::int64_t rows, std::int64_t columns,
                 std::int64_t firstColumn, bool firstChunk, const std::int32_t* targets,
                 std::int32_t ignoreTarget, float softcap, LmHeadRowState state,
                 std::uint16_t* weights, hipStream_t stream) {
  if (rows == 0 || columns == 0) {
    return;
  }
  const dim3 grid(static_cast<unsigned>(rows));
  auto* out = reinterpret_cast<hip_bfloat16*>(weights);
  if (columns % 4 == 0 && gpu::alignedTo(logits, 16) && gpu::alignedTo(weights, 8)) {
    launch("lm_head_cross_entropy", lmHeadChunkKernel<4>, grid, dim3(kChunkThreads), 0, stream,
           logits, columns, firstColumn, firstChunk, targets, ignoreTarget, softcap, state, out);
  } else {
    launch("lm_head_cross_entropy", lmHeadChunkKernel<1>, grid, dim3(kChunkThreads), 0, stream,
           logits, columns, firstColumn, firstChunk, targets, ignoreTarget, softcap, state, out);
  }
}

void lmHeadRescaleRows(float* dhSum, std::int64_t rows, std::int64_t hidden, LmHeadRowState state,
                       hipStream_t stream) {
  if (rows == 0 || hidden == 0) {
    return;
  }
  if (hidden % 4 == 0 && gpu::alignedTo(dhSum, 16)) {
    launch("lm_head_cross_entropy", lmHeadRescaleRowsKernel<4>, elementwiseGrid(rows * hidden / 4),
           dim3(kElementwiseThreads), 0, stream, dhSum, rows, hidden, state.rescale);
  } else {
    launch("lm_head_cross_entropy", lmHeadRescaleRowsKernel<1>, elementwiseGrid(rows * hidden),
           dim3(kElementwiseThreads), 0, stream, dhSum, rows, hidden, state.rescale);
  }
}

void lmHeadLosses(LmHeadRowState state, std::int64_t rows, const std::int32_t* targets,
                  std::int32_t ignoreTarget, const std::int32_t* outRows, float* losses,
                  hipStream_t stream) {
  if (rows == 0) {
    return;
  }
  launch("lm_head_cross_entropy", lmHeadLossesKernel, elementwiseGrid(rows),
         dim3(kElementwiseThreads), 0, stream, state, rows, targets, ignoreTarget, outRows, losses);
}

void lmHeadFinishGradient(const float* dhSum, std::int64_t rows, std::int64_t hidden,
                          const void* weight, bool weightIsBf16, const std::int32_t* targets,
                          std::int32_t ignoreTarget, float softcap, LmHeadRowState state,
                          float gradScale, const float* gradScaleOnDevice,
                          const std::int32_t* outRows, std::uint16_t* dh, hipStream_t stream) {
  if (rows == 0) {
    return;
  }
  const dim3 grid(static_cast<unsigned>(rows));
  auto* out = reinterpret_cast<hip_bfloat16*>(dh);
  if (weightIsBf16) {
    launch("lm_head_cross_entropy", lmHeadFinishGradientKernel<hip_bfloat16>, grid,
           dim3(kThreadsPerRow), 0, stream, dhSum, hidden, static_cast<const hip_bfloat16*>(weight),
           targets, ignoreTarget, softcap, state, gradScale, gradScaleOnDevice, outRows, out);
  } else {
    launch("lm_head_cross_entropy", lmHeadFinishGradientKernel<float>, grid, dim3(kThreadsPerRow),
           0, stream, dhSum, hidden, static_cast<const float*>(weight), targets, ignoreTarget,
           softcap, state, gradScale, gradScaleOnDevice, outRows, out);
  }
}

}  // namespace lorascope::compute::hip
