// hip/rmsnorm.hip — RMSNorm forward and backward kernels; CPU twin: cpu/rmsnorm.cpp.
//
// Note [a wave a row]: each row is one wave's: its lanes stride over the row, P values at a time,
// and the sums run over each lane's values in order, then across the wave's lanes in a butterfly
// (waveSum), with no shared memory and no barrier. A block had been one row: 256 threads of 8
// values each for Llama-3.2-1B's 2048, where the block-wide sum (two barriers) outweighed the
// work, and one value a thread for the q/k norms' rows of a head (64 or 128 values; they now
// go in packs too). On an H200 (bench_gpu_train --prompt-percent 50 --profile-steps 3, two calls
// of 2 rounds each beside the tree before) the forward took 0.78-0.80 ms a Llama-3.2-1B step
// against 0.89-0.90 and 0.90-0.92 a Qwen2.5-0.5B step against 1.07-1.10; the backward 0.67-0.68
// against 0.64 on Llama (a lane's 8 passes over 2048 values, where 256 threads had made one) and
// 0.60-0.61 against 0.65-0.66 on Qwen. The Qwen step took 30.3-30.7 ms against 30.7-31.1; the
// Llama step moved within its noise (44.0-44.3 ms either way). Four passes unrolled changed
// nothing, and neither did holding a lane's packs of the row in registers for the second pass
// (the row's length a template argument): under Nsight Compute (Llama-3.2-1B, B8 × S512) the
// forward took 11.4-12.5 µs a call either way, and the backward, at 94 registers and 31%
// occupancy, 25 µs against 20.
#include "compute/hip/rmsnorm.h"

#include "compute/hip/device_common.h"  // defines: loadPack, storePack, packable, waveSum
#include "compute/hip/launch.h"         // defines: launch
#include "compute/hip/matrix_cores.h"   // defines: currentMatrixCores (the wave size)

namespace lorascope::compute::hip {
namespace {

using gpu::loadPack;
using gpu::packable;
using gpu::storePack;
using gpu::waveSum;

constexpr int kRowsPerBlock = 4;  // waves a block, one row each

// P: the values a lane loads at a time (gpu::kPack when the row allows, else 1: see
// packedRows). Block b holds rows kRowsPerBlock·b …, one a wave (Note [a wave a row]).

// x, y (rows, dim), y's rows yLd apart; weight (dim); rstd (rows)
template <int P, typename WeightT>
__global__ void rmsnormForwardKernel(const hip_bfloat16* x, const WeightT* weight, float eps,
                                     long long rows, long long dim, hip_bfloat16* y, long long yLd,
                                     float* rstd) {
  const long long row = static_cast<long long>(blockIdx.x) * kRowsPerBlock +
                        static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  if (row >= rows) {
    return;
  }
  const long long first = static_cast<long long>(threadIdx.x % gpu::kWaveSize) * P;
  constexpr long long stride = static_cast<long long>(gpu::kWaveSize) * P;
  const hip_bfloat16* xRow = x + row * dim;
  float sumSquares = 0.0f;
  for (long long i = first; i < dim; i += stride) {
    float v[P];
    loadPack(xRow, i, v);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      sumSquares += v[k] * v[k];
    }
  }
  const float s = rsqrtf(waveSum(sumSquares) / static_cast<float>(dim) + eps);
  if (first == 0) {
    rstd[row] = s;
  }
  hip_bfloat16* yRow = y + row * yLd;
  for (long long i = first; i < dim; i += stride) {
    float v[P], w[P], out[P];
    loadPack(xRow, i, v);
    loadPack(weight, i, w);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      out[k] = v[k] * s * w[k];
    }
    storePack(yRow, i, out);
  }
}

// dy, x, dx (rows, dim); weight (dim); rstd (rows). With accumulate, dx += the gradient.
template <int P, typename WeightT>
__global__ void rmsnormBackwardKernel(const hip_bfloat16* dy, const hip_bfloat16* x,
                                      const WeightT* weight, const float* rstd, long long rows,
                                      long long dim, bool accumulate, hip_bfloat16* dx) {
  const long long row = static_cast<long long>(blockIdx.x) * kRowsPerBlock +
                        static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  if (row >= rows) {
    return;
  }
  const long long first = static_cast<long long>(threadIdx.x % gpu::kWaveSize) * P;
  constexpr long long stride = static_cast<long long>(gpu::kWaveSize) * P;
  const hip_bfloat16* xRow = x + row * dim;
  const hip_bfloat16* dyRow = dy + row * dim;
  float dotGx = 0.0f;
  for (long long i = first; i < dim; i += stride) {
    float w[P], d[P], v[P];
    loadPack(weight, i, w);
    loadPack(dyRow, i, d);
    loadPack(xRow, i, v);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      dotGx += w[k] * d[k] * v[k];
    }
  }
  const float s = rstd[row];
  const float correction = waveSum(dotGx) / static_cast<float>(dim) * s * s;
  hip_bfloat16* dxRow = dx + row * dim;
  for (long long i = first; i < dim; i += stride) {
    float w[P], d[P], v[P], previous[P] = {}, out[P];
    loadPack(weight, i, w);
    loadPack(dyRow, i, d);
    loadPack(xRow, i, v);
    if (accumulate) {
      loadPack(dxRow, i, previous);
    }
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const float g = s * (w[k] * d[k] - v[k] * correction);
      out[k] = accumulate ? previous[k] + g : g;
    }
    storePack(dxRow, i, out);
  }
}

// Whether rows of `dim`, the strided operand's `ld` apart, go in packs: every address 16-byte
// aligned and dim and ld multiples of the pack.
template <typename... T>
bool packedRows(long long dim, long long ld, const T*... p) {
  return ld % gpu::kPack == 0 && packable(dim, p...);
}

dim3 rowBlocks(std::int64_t rows) {
  return dim3(static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock));
}

dim3 rowThreads() {
  return dim3(static_cast<unsigned>(kRowsPerBlock * currentMatrixCores().waveSize));
}

const hip_bfloat16* asBf16(const std::uint16_t* p) {
  return reinterpret_cast<const hip_bfloat16*>(p);
}
hip_bfloat16* asBf16(std::uint16_t* p) {
  return reinterpret_cast<hip_bfloat16*>(p);
}

}  // namespace

void rmsnormForward(const std::uint16_t* x, const void* weight, bool weightIsBf16, float eps,
                    std::int64_t rows, std::int64_t dim, std::uint16_t* y, std::int64_t yLd,
                    float* rstd, hipStream_t stream) {
  if (rows == 0) {
    return;
  }
  const auto run = [&](auto kernel, const auto* w) {
    launch("rmsnorm_forward", kernel, rowBlocks(rows), rowThreads(), 0, stream, asBf16(x), w, eps,
           static_cast<long long>(rows), dim, asBf16(y), static_cast<long long>(yLd), rstd);
  };
  if (weightIsBf16) {
    const auto* w = static_cast<const hip_bfloat16*>(weight);
    packedRows(dim, yLd, x, w, y) ? run(rmsnormForwardKernel<gpu::kPack, hip_bfloat16>, w)
                                  : run(rmsnormForwardKernel<1, hip_bfloat16>, w);
  } else {
    const auto* w = static_cast<const float*>(weight);
    packedRows(dim, yLd, x, w, y) ? run(rmsnormForwardKernel<gpu::kPack, float>, w)
                                  : run(rmsnormForwardKernel<1, float>, w);
  }
}

void rmsnormBackward(const std::uint16_t* dy, const std::uint16_t* x, const void* weight,
                     bool weightIsBf16, const float* rstd, std::int64_t rows, std::int64_t dim,
                     std::uint16_t* dx, bool accumulate, hipStream_t stream) {
  if (rows == 0) {
    return;
  }
  const auto run = [&](auto kernel, const auto* w) {
    launch("rmsnorm_backward", kernel, rowBlocks(rows), rowThreads(), 0, stream, asBf16(dy),
           asBf16(x), w, rstd, static_cast<long long>(rows), dim, accumulate, asBf16(dx));
  };
  if (weightIsBf16) {
    const auto* w = static_cast<const hip_bfloat16*>(weight);
    packedRows(dim, dim, dy, x, w, dx) ? run(rmsnormBackwardKernel<gpu::kPack, hip_bfloat16>, w)
                                       : run(rmsnormBackwardKernel<1, hip_bfloat16>, w);
  } else {
    const auto* w = static_cast<const float*>(weight);
    packedRows(dim, dim, dy, x, w, dx) ? run(rmsnormBackwardKernel<gpu::kPack, float>, w)
                                       : run(rmsnormBackwardKernel<1, float>, w);
  }
}

}  // namespace lorascope::compute::hip
