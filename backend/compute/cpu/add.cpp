// cpu/add.cpp — elementwise in-place ops for the CPU backend, in parallel ranges (cpu/parallel.h).
#include "compute/cpu/add.h"

#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges
#include "compute/cpu/simd.h"      // defines: simd

namespace lorascope::compute::cpu {
namespace {
constexpr std::int64_t kElementsPerRange = 16384;  // 64 KiB of each operand per parallel item
}  // namespace

void addInPlace(float* x, const float* y, std::int64_t count) {
  const OpTimer timer(CpuOp::Elementwise);
  const auto kernel = simd().addArray;
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    kernel(x + first, y + first, last - first);
  });
}

void addBias(float* x, const float* bias, std::int64_t rows, std::int64_t dim) {
  const auto kernel = simd().addArray;
  for (std::int64_t r = 0; r < rows; ++r) {
    kernel(x + r * dim, bias, dim);
  }
}

void multiplyInPlace(float* x, const float* y, std::int64_t count) {
  const OpTimer timer(CpuOp::Elementwise);
  const auto kernel = simd().multiplyArray;
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    kernel(x + first, y + first, last - first);
  });
}

}  // namespace lorascope::compute::cpu
