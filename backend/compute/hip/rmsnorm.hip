// hip/rmsnorm.hip — RMSNorm forward and backward kernels; CPU twin: cpu/rmsnorm.cpp.
// One block per row; each thread strides over the row; sums in fp32 through blockSum.
#include "compute/hip/rmsnorm.h"

#include "compute/hip/device_common.h"  // defines: blockSum, loadFloat
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

using gpu::blockSum;
using gpu::loadPack;
using gpu::packable;
using gpu::storePack;

constexpr int kThreadsPerRow = 256;  // a multiple of both wave sizes (32 and 64)

// P: the values a thread loads at a time (gpu::kPack when the row allows, else 1: see
// packedRows). The sums run over each thread's values in order, then across the block.

// x, y (rows, dim); weight (dim); rstd (rows)
template <int P, typename WeightT>
__global__ void rmsnormForwardKernel(const hip_bfloat16* x, const WeightT* weight, float eps,
                                     long long dim, hip_bfloat16* y, float* rstd) {
  const long long row = blockIdx.x;
  const hip_bfloat16* xRow = x + row * dim;
  float sumSquares = 0.0f;
  for (long long i = threadIdx.x * P; i < dim; i += blockDim.x * P) {
    float v[P];
    loadPack(xRow, i, v);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      sumSquares += v[k] * v[k];
    }
  }
  const float s = rsqrtf(blockSum(sumSquares) / static_cast<float>(dim) + eps);
  if (threadIdx.x == 0) {
    rstd[row] = s;
  }
  hip_bfloat16* yRow = y + row * dim;
  for (long long i = threadIdx.x * P; i < dim; i += blockDim.x * P) {
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
                                      const WeightT* weight, const float* rstd, long long dim,
                                      bool accumulate, hip_bfloat16* dx) {
  const long long row = blockIdx.x;
  const hip_bfloat16* xRow = x + row * dim;
  const hip_bfloat16* dyRow = dy + row * dim;
  float dotGx = 0.0f;
  for (long long i = threadIdx.x * P; i < dim; i += blockDim.x * P) {
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
  const float correction = blockSum(dotGx) / static_cast<float>(dim) * s * s;
  hip_bfloat16* dxRow = dx + row * dim;
  for (long long i = threadIdx.x * P; i < dim; i += blockDim.x * P) {
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

// Whether rows of `dim` go in packs: every address 16-byte aligned, dim a multiple of the pack
// and long enough that a block's threads still share a row (q/k norms' rows of a head's 64 or
// 128 values keep one value a thread).
template <typename... T>
bool packedRows(long long dim, const T*... p) {
  return dim >= 512 && packable(dim, p...);
}

const hip_bfloat16* asBf16(const std::uint16_t* p) {
  return reinterpret_cast<const hip_bfloat16*>(p);
}
hip_bfloat16* asBf16(std::uint16_t* p) {
  return reinterpret_cast<hip_bfloat16*>(p);
}

}  // namespace

void rmsnormForward(const std::uint16_t* x, const void* weight, bool weightIsBf16, float eps,
                    std::int64_t rows, std::int64_t dim, std::uint16_t* y, float* rstd,
                    hipStream_t stream) {
  if (rows == 0) {
    return;
  }
  const dim3 grid(static_cast<unsigned>(rows));
  const auto run = [&](auto kernel, const auto* w) {
    launch("rmsnorm_forward", kernel, grid, dim3(kThreadsPerRow), 0, stream, asBf16(x), w, eps, dim,
           asBf16(y), rstd);
  };
  if (weightIsBf16) {
    const auto* w = static_cast<const hip_bfloat16*>(weight);
    packedRows(dim, x, w, y) ? run(rmsnormForwardKernel<gpu::kPack, hip_bfloat16>, w)
                             : run(rmsnormForwardKernel<1, hip_bfloat16>, w);
  } else {
    const auto* w = static_cast<const float*>(weight);
    packedRows(dim, x, w, y) ? run(rmsnormForwardKernel<gpu::kPack, float>, w)
                             : run(rmsnormForwardKernel<1, float>, w);
  }
}

void rmsnormBackward(const std::uint16_t* dy, const std::uint16_t* x, const void* weight,
                     bool weightIsBf16, const float* rstd, std::int64_t rows, std::int64_t dim,
                     std::uint16_t* dx, bool accumulate, hipStream_t stream) {
  if (rows == 0) {
    return;
  }
  const dim3 grid(static_cast<unsigned>(rows));
  const auto run = [&](auto kernel, const auto* w) {
    launch("rmsnorm_backward", kernel, grid, dim3(kThreadsPerRow), 0, stream, asBf16(dy), asBf16(x),
           w, rstd, dim, accumulate, asBf16(dx));
  };
  if (weightIsBf16) {
    const auto* w = static_cast<const hip_bfloat16*>(weight);
    packedRows(dim, dy, x, w, dx) ? run(rmsnormBackwardKernel<gpu::kPack, hip_bfloat16>, w)
                                  : run(rmsnormBackwardKernel<1, hip_bfloat16>, w);
  } else {
    const auto* w = static_cast<const float*>(weight);
    packedRows(dim, dy, x, w, dx) ? run(rmsnormBackwardKernel<gpu::kPack, float>, w)
                                  : run(rmsnormBackwardKernel<1, float>, w);
  }
}

}  // namespace lorascope::compute::hip
