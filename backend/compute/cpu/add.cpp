// cpu/add.cpp — elementwise in-place ops for the CPU backend, in parallel ranges (cpu/parallel.h).
#include "compute/cpu/add.h"

#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges

namespace lorascope::compute::cpu {
namespace {
constexpr std::int64_t kElementsPerRange = 16384;  // 64 KiB of each operand per parallel item
}  // namespace

void addInPlace(float* x, const float* y, std::int64_t count) {
  const OpTimer timer(CpuOp::Elementwise);
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      x[i] += y[i];
    }
  });
}

void addBias(float* x, const float* bias, std::int64_t rows, std::int64_t dim) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = x + r * dim;
    for (std::int64_t i = 0; i < dim; ++i) {
      row[i] += bias[i];
    }
  }
}

void multiplyInPlace(float* x, const float* y, std::int64_t count) {
  const OpTimer timer(CpuOp::Elementwise);
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      x[i] *= y[i];
    }
  });
}

}  // namespace lorascope::compute::cpu
