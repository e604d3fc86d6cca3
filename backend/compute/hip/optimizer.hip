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

__global__ void adamwKernel(const TensorChunk* chunks, AdamWScalars s) {
  const TensorChunk c = chunks[blockIdx.x];
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
