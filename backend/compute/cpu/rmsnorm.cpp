// cpu/rmsnorm.cpp — RMSNorm forward and backward in fp32. Rows run in parallel
// (cpu/parallel.h). Row sums accumulate in double: this is the reference the GPU kernels are
// measured against, so its own rounding should not matter.
#include "compute/cpu/rmsnorm.h"

#include <cmath>

#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges

namespace lorascope::compute::cpu {
namespace {
constexpr std::int64_t kRowsPerRange = 16;  // rows per parallel item
}  // namespace

void rmsnormForward(const float* x, const float* weight, float eps, std::int64_t rows,
                    std::int64_t dim, float* y, float* rstd) {
  const OpTimer timer(CpuOp::RmsNorm);
  parallelRanges(rows, kRowsPerRange, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t r = first; r < last; ++r) {
      const float* xr = x + r * dim;
      double sumSquares = 0.0;
      for (std::int64_t i = 0; i < dim; ++i) {
        sumSquares += static_cast<double>(xr[i]) * xr[i];
      }
      const float s =
          static_cast<float>(1.0 / std::sqrt(sumSquares / static_cast<double>(dim) + eps));
      rstd[r] = s;
      float* yr = y + r * dim;
      for (std::int64_t i = 0; i < dim; ++i) {
        yr[i] = xr[i] * s * weight[i];
      }
    }
  });
}

void rmsnormBackward(const float* dy, const float* x, const float* weight, const float* rstd,
                     std::int64_t rows, std::int64_t dim, float* dx) {
  const OpTimer timer(CpuOp::RmsNorm);
  parallelRanges(rows, kRowsPerRange, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t r = first; r < last; ++r) {
      const float* xr = x + r * dim;
      const float* dyr = dy + r * dim;
      double dotGx = 0.0;
      for (std::int64_t i = 0; i < dim; ++i) {
        dotGx += static_cast<double>(weight[i]) * dyr[i] * xr[i];
      }
      const float s = rstd[r];
      const float correction = static_cast<float>(dotGx / static_cast<double>(dim)) * s * s;
      float* dxr = dx + r * dim;
      for (std::int64_t i = 0; i < dim; ++i) {
        dxr[i] = s * (weight[i] * dyr[i] - xr[i] * correction);
      }
    }
  });
}

}  // namespace lorascope::compute::cpu
