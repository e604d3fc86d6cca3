// hip/optimizer.hip — multi-tensor fill, scale, sum of squares and AdamW, and the Philox dropout
// mask; CPU twin: cpu/optimizer.cpp. A list op's block b processes chunk b of the table.
#include "compute/hip/optimizer.h"

#include "compute/Philox.h"             // defines: philox4x32, dropoutFromWord
#include "compute/hip/device_common.h"  // defines: gpu::floatToBf16
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

constexpr int kThreads = 256;  // a multiple of both wave sizes (32 and 64)

__global__ void fillZeroKernel(const TensorChunk* chunks) {
  const TensorChunk c = chunks[blockIdx.x];
  for (long long i = threadIdx.x; i < c.count; i += blockDim.x) {
    c.x[i] = 0.0f;
  }
}

__global__ void scaleKernel(const TensorChunk* chunks, float factor) {
  const TensorChunk c = chunks[blockIdx.x];
  for (long long i = threadIdx.x; i < c.count; i += blockDim.x) {
    c.x[i] *= factor;
  }
}

// Sum over a kThreads block in a fixed tree, so the result does not depend on timing.
__device__ double blockSumDouble(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) {
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    }
    __syncthreads();
  }
  return partial[0];
}

// partials (chunks): Σ x² of each chunk
__global__ void sumOfSquaresKernel(const TensorChunk* chunks, double* partials) {
  const TensorChunk c = chunks[blockIdx.x];
  double sum = 0.0;
  for (long long i = threadIdx.x; i < c.count; i += blockDim.x) {
    const double v = c.x[i];
    sum += v * v;  // exact: a float's square fits a double
  }
  const double total = blockSumDouble(sum);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = total;
  }
}

// One block: *sum = Σ partials (count).
__global__ void sumPartialsKernel(const double* partials, long long count, double* sum) {
  double s = 0.0;
  for (long long i = threadIdx.x; i < count; i += blockDim.x) {
    s += partials[i];
  }
  const double total = blockSumDouble(s);
  if (threadIdx.x == 0) {
    *sum = total;
  }
}

// Note [optimizer without FMA]
// This file is compiled without contracting a·b + c into fused multiply-adds (nvcc -fmad=false,
// clang -ffp-contract=off: backend/compute/CMakeLists.txt), so every product and sum below is
// rounded on its own, in host::adamw's order (compute/cpu/optimizer.cpp). With contraction on,
// the compiler fused the AdamW update differently in adamwKernel, whose scalars are a kernel
// argument, and adamwIfFiniteKernel, which reads them from memory: graph mode's steps drifted from
// eager steps by a last bit of the moments from the second step on (H200: the first step, whose
// moments start at 0, agreed; after step 2, 332 LoRA weights differed, with every gradient and
// the norm equal; the 50-step loss curves were 1.15e-3 apart).
__device__ void adamwChunk(const TensorChunk& c, const AdamWScalars& s) {
  for (long long i = threadIdx.x; i < c.count; i += blockDim.x) {
    const float g = c.grad[i];
    const float p = c.x[i] * s.decay;
    const float m = s.beta1 * c.firstMoment[i] + (1.0f - s.beta1) * g;
    const float v = s.beta2 * c.secondMoment[i] + (1.0f - s.beta2) * g * g;
    const float denom = sqrtf(v) / s.sqrtBias2 + s.epsilon;
    c.firstMoment[i] = m;
    c.secondMoment[i] = v;
    c.x[i] = p - s.stepSize * m / denom;
  }
}

__global__ void adamwKernel(const TensorChunk* chunks, AdamWScalars s) {
  adamwChunk(chunks[blockIdx.x], s);
}

// --- Graph-mode step kernels: the step's scalars are read from device memory -----------------

__global__ void adamwIfFiniteKernel(const TensorChunk* chunks, const StepScalars* scalars,
                                    const StepSums* sums) {
  if (sums->finite != 1.0) {
    return;  // a step with a NaN or infinite loss or norm changes nothing
  }
  adamwChunk(chunks[blockIdx.x], scalars->adamw);
}

// One block: sums->lossSum += Σ values (count), in a fixed tree.
__global__ void accumulateLossKernel(const float* values, long long count, StepSums* sums) {
  double s = 0.0;
  for (long long i = threadIdx.x; i < count; i += blockDim.x) {
    s += values[i];
  }
  const double total = blockSumDouble(s);
  if (threadIdx.x == 0) {
    sums->lossSum += total;
  }
}

// One thread: the gradient norm, the finite flag and the factor every gradient is multiplied by
// (train::clipFactor's rule in its double arithmetic; 1 when nothing is clipped).
__global__ void clipFactorKernel(const StepScalars* scalars, StepSums* sums, float* factor) {
  const double norm = sqrt(sums->gradSquares);
  sums->finite = isfinite(sums->lossSum) && isfinite(norm) ? 1.0 : 0.0;
  float f = 1.0f;
  if (scalars->maxGradNorm > 0.0) {
    const double coefficient = scalars->maxGradNorm / (norm + 1e-6);
    if (coefficient < 1.0) {
      f = static_cast<float>(coefficient);
    }
  }
  *factor = f;
}

__global__ void scaleByKernel(const TensorChunk* chunks, const float* factor) {
  const TensorChunk c = chunks[blockIdx.x];
  const float f = *factor;
  for (long long i = threadIdx.x; i < c.count; i += blockDim.x) {
    c.x[i] *= f;
  }
}

__device__ inline void storeMask(float* mask, long long i, float value) {
  mask[i] = value;
}
__device__ inline void storeMask(hip_bfloat16* mask, long long i, float value) {
  mask[i] = gpu::floatToBf16(value);
}

// One thread per Philox block: four mask elements.
template <typename MaskT>
__global__ void dropoutMaskKernel(MaskT* mask, long long count, unsigned long long seed,
                                  unsigned long long philoxStream, float p, float keep) {
  const long long block = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long first = block * 4;
  if (first >= count) {
    return;
  }
  const PhiloxWords words = philox4x32(seed, philoxStream, static_cast<std::uint64_t>(block));
  for (int lane = 0; lane < 4 && first + lane < count; ++lane) {
    storeMask(mask, first + lane, dropoutFromWord(words.word[lane], p, keep));
  }
}

// Graph mode: one thread per element of the padded (rows·seq, features) mask, drawing the
// element of the unpadded (rows·length, features) mask at the same (row, t, f); the stream's high
// half and the length are read from device memory.
template <typename MaskT>
__global__ void dropoutMaskPaddedKernel(MaskT* mask, long long rows, long long seq,
                                        long long features, unsigned long long seed,
                                        unsigned int streamLow, const std::uint32_t* streamHigh,
                                        const std::int32_t* rowLength, float p, float keep) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * seq * features) {
    return;
  }
  const long long f = i % features;
  const long long t = (i / features) % seq;
  const long long row = i / (features * seq);
  const long long length = *rowLength;
  if (t >= length) {
    storeMask(mask, i, 0.0f);
    return;
  }
  const long long e = (row * length + t) * features + f;
  const std::uint64_t stream = (static_cast<std::uint64_t>(*streamHigh) << 32) | streamLow;
  const PhiloxWords words = philox4x32(seed, stream, static_cast<std::uint64_t>(e / 4));
  storeMask(mask, i, dropoutFromWord(words.word[e % 4], p, keep));
}

dim3 gridOfChunks(std::int64_t chunkCount) {
  return dim3(static_cast<unsigned>(chunkCount));
}

}  // namespace

void fillZero(const TensorChunk* chunks, std::int64_t chunkCount, hipStream_t stream) {
  launch("fill_zero", fillZeroKernel, gridOfChunks(chunkCount), dim3(kThreads), 0, stream, chunks);
}

void scaleInPlace(const TensorChunk* chunks, std::int64_t chunkCount, float factor,
                  hipStream_t stream) {
  launch("scale", scaleKernel, gridOfChunks(chunkCount), dim3(kThreads), 0, stream, chunks, factor);
}

void sumOfSquares(const TensorChunk* chunks, std::int64_t chunkCount, double* partials, double* sum,
                  hipStream_t stream) {
  launch("sum_of_squares", sumOfSquaresKernel, gridOfChunks(chunkCount), dim3(kThreads), 0, stream,
         chunks, partials);
  launch("sum_of_squares", sumPartialsKernel, dim3(1), dim3(kThreads), 0, stream, partials,
         static_cast<long long>(chunkCount), sum);
}

void adamw(const TensorChunk* chunks, std::int64_t chunkCount, const AdamWScalars& scalars,
           hipStream_t stream) {
  launch("adamw", adamwKernel, gridOfChunks(chunkCount), dim3(kThreads), 0, stream, chunks,
         scalars);
}

void dropoutMaskPadded(void* mask, bool maskIsBf16, std::int64_t rows, std::int64_t seq,
                       std::int64_t features, std::uint64_t seed, std::uint32_t streamLow,
                       const std::uint32_t* streamHigh, const std::int32_t* rowLength, float p,
                       float keep, hipStream_t stream) {
  const std::int64_t count = rows * seq * features;
  if (count == 0) {
    return;
  }
  const dim3 grid(static_cast<unsigned>((count + kThreads - 1) / kThreads));
  if (maskIsBf16) {
    launch("dropout_mask", dropoutMaskPaddedKernel<hip_bfloat16>, grid, dim3(kThreads), 0, stream,
           static_cast<hip_bfloat16*>(mask), rows, seq, features, seed, streamLow, streamHigh,
           rowLength, p, keep);
  } else {
    launch("dropout_mask", dropoutMaskPaddedKernel<float>, grid, dim3(kThreads), 0, stream,
           static_cast<float*>(mask), rows, seq, features, seed, streamLow, streamHigh, rowLength,
           p, keep);
  }
}

void adamwIfFinite(const TensorChunk* chunks, std::int64_t chunkCount, const StepScalars* scalars,
                   const StepSums* sums, hipStream_t stream) {
  launch("adamw", adamwIfFiniteKernel, gridOfChunks(chunkCount), dim3(kThreads), 0, stream, chunks,
         scalars, sums);
}

void accumulateLoss(const float* values, std::int64_t count, StepSums* sums, hipStream_t stream) {
  launch("accumulate_loss", accumulateLossKernel, dim3(1), dim3(kThreads), 0, stream, values,
         static_cast<long long>(count), sums);
}

void clipScaled(const TensorChunk* chunks, std::int64_t chunkCount, double* partials,
                const StepScalars* scalars, StepSums* sums, float* factor, hipStream_t stream) {
  sumOfSquares(chunks, chunkCount, partials, &sums->gradSquares, stream);
  launch("clip", clipFactorKernel, dim3(1), dim3(1), 0, stream, scalars, sums, factor);
  launch("scale", scaleByKernel, gridOfChunks(chunkCount), dim3(kThreads), 0, stream, chunks,
         static_cast<const float*>(factor));
}

void dropoutMask(void* mask, bool maskIsBf16, std::int64_t count, std::uint64_t seed,
                 std::uint64_t philoxStream, float p, float keep, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const std::int64_t philoxBlocks = (count + 3) / 4;
  const dim3 grid(static_cast<unsigned>((philoxBlocks + kThreads - 1) / kThreads));
  if (maskIsBf16) {
    launch("dropout_mask", dropoutMaskKernel<hip_bfloat16>, grid, dim3(kThreads), 0, stream,
           static_cast<hip_bfloat16*>(mask), count, seed, philoxStream, p, keep);
  } else {
    launch("dropout_mask", dropoutMaskKernel<float>, grid, dim3(kThreads), 0, stream,
           static_cast<float*>(mask), count, seed, philoxStream, p, keep);
  }
}

}  // namespace lorascope::compute::hip
