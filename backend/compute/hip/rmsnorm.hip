// hip/rmsnorm.hip — RMSNorm forward and backward kernels; CPU twin: cpu/rmsnorm.cpp.
// One block per row; each thread strides over the row; sums in fp32 through blockSum.
#include "compute/hip/rmsnorm.h"

#include "compute/hip/device_common.h"  // defines: blockSum, loadFloat
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

using gpu::blockSum;
using gpu::loadFloat;

constexpr int kThreadsPerRow = 256;  // a multiple of both wave sizes (32 and 64)

// x, y (rows, dim); weight (dim); rstd (rows)
template <typename WeightT>
__global__ void rmsnormForwardKernel(const hip_bfloat16* x, const WeightT* weight, float eps,
                                     long long dim, hip_bfloat16* y, float* rstd) {
  const long long row = blockIdx.x;
  const hip_bfloat16* xRow = x + row * dim;
  float sumSquares = 0.0f;
  for (long long i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = loadFloat(xRow, i);
    sumSquares += v * v;
  }
  const float s = rsqrtf(blockSum(sumSquares) / static_cast<float>(dim) + eps);
  if (threadIdx.x == 0) {
    rstd[row] = s;
  }
  hip_bfloat16* yRow = y + row * dim;
  for (long long i = threadIdx.x; i < dim; i += blockDim.x) {
    yRow[i] = gpu::floatToBf16(loadFloat(xRow, i) * s * loadFloat(weight, i));
  }
}

// dy, x, dx (rows, dim); weight (dim); rstd (rows)
template <typename WeightT>
__global__ void rmsnormBackwardKernel(const hip_bfloat16* dy, const hip_bfloat16* x,
                                      const WeightT* weight, const float* rstd, long long dim,
                                      hip_bfloat16* dx) {
  const long long row = blockIdx.x;
  const hip_bfloat16* xRow = x + row * dim;
  const hip_bfloat16* dyRow = dy + row * dim;
  float dotGx = 0.0f;
  for (long long i = threadIdx.x; i < dim; i += blockDim.x) {
    dotGx += loadFloat(weight, i) * loadFloat(dyRow, i) * loadFloat(xRow, i);
  }
  const float s = rstd[row];
  const float correction = blockSum(dotGx) / static_cast<float>(dim) * s * s;
  hip_bfloat16* dxRow = dx + row * dim;
  for (long long i = threadIdx.x; i < dim; i += blockDim.x) {
    const float g = loadFloat(weight, i) * loadFloat(dyRow, i);
    dxRow[i] = gpu::floatToBf16(s * (g - loadFloat(xRow, i) * correction));
  }
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
  if (weightIsBf16) {
    launch("rmsnorm_forward", rmsnormForwardKernel<hip_bfloat16>, grid, dim3(kThreadsPerRow), 0,
           stream, asBf16(x), static_cast<const hip_bfloat16*>(weight), eps, dim, asBf16(y), rstd);
  } else {
    launch("rmsnorm_forward", rmsnormForwardKernel<float>, grid, dim3(kThreadsPerRow), 0, stream,
           asBf16(x), static_cast<const float*>(weight), eps, dim, asBf16(y), rstd);
  }
}

void rmsnormBackward(const std::uint16_t* dy, const std::uint16_t* x, const void* weight,
                     bool weightIsBf16, const float* rstd, std::int64_t rows, std::int64_t dim,
                     std::uint16_t* dx, hipStream_t stream) {
  if (rows == 0) {
    return;
  }
  const dim3 grid(static_cast<unsigned>(rows));
  if (weightIsBf16) {
    launch("rmsnorm_backward", rmsnormBackwardKernel<hip_bfloat16>, grid, dim3(kThreadsPerRow), 0,
           stream, asBf16(dy), asBf16(x), static_cast<const hip_bfloat16*>(weight), rstd, dim,
           asBf16(dx));
  } else {
    launch("rmsnorm_backward", rmsnormBackwardKernel<float>, grid, dim3(kThreadsPerRow), 0, stream,
           asBf16(dy), asBf16(x), static_cast<const float*>(weight), rstd, dim, asBf16(dx));
  }
}

}  // namespace lorascope::compute::hip
