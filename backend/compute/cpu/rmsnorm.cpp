// cpu/rmsnorm.cpp — RMSNorm forward and backward in fp32. Rows run in parallel
// (cpu/parallel.h), each through the vector kernels of cpu/simd.h. Row sums accumulate in double:
// this is the reference the GPU kernels are measured against, so its own rounding should not
// matter.
#include "compute/cpu/rmsnorm.h"

#include <vector>

#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges
#include "compute/cpu/simd.h"      // defines: simd

namespace lorascope::compute::cpu {
namespace {
constexpr std::int64_t kRowsPerRange = 16;  // rows per parallel item
}  // namespace

void rmsnormForward(const float* x, const float* weight, float eps, std::int64_t rows,
                    std::int64_t dim, float* y, float* rstd) {
  const OpTimer timer(CpuOp::RmsNorm);
  const auto kernel = simd().rmsnormRow;
  parallelRanges(rows, kRowsPerRange, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t r = first; r < last; ++r) {
      rstd[r] = kernel(x + r * dim, weight, eps, dim, y + r * dim);
    }
  });
}

void rmsnormBackward(const float* dy, const float* x, const float* weight, const float* rstd,
                     std::int64_t rows, std::int64_t dim, float* dx, bool accumulate) {
  const OpTimer timer(CpuOp::RmsNorm);
  const auto kernel = simd().rmsnormBackwardRow;
  parallelRanges(rows, kRowsPerRange, [=](std::int64_t first, std::int64_t last) {
    // With accumulate a row's gradient goes through a row of scratch, then into dx: each sum is
    // the one a separate add of the whole gradient would make. The scratch is the worker's own,
    // kept between calls (no allocation a range on this per-layer path).
    thread_local std::vector<float> row;
    if (accumulate) {
      row.resize(static_cast<std::size_t>(dim));
    }
    for (std::int64_t r = first; r < last; ++r) {
      float* out = dx + r * dim;
      kernel(dy + r * dim, x + r * dim, weight, rstd[r], dim, accumulate ? row.data() : out);
      if (accumulate) {
        for (std::int64_t i = 0; i < dim; ++i) {
          out[i] += row[static_cast<std::size_t>(i)];
        }
      }
    }
  });
}

}  // namespace lorascope::compute::cpu
