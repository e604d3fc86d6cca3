// cpu/swiglu.cpp — SwiGLU forward and backward for the CPU backend, elements in parallel ranges.
#include "compute/cpu/swiglu.h"

#include "compute/cpu/fast_exp.h"  // defines: sigmoidArray
#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges

namespace lorascope::compute::cpu {
namespace {
constexpr std::int64_t kElementsPerRange = 16384;  // 64 KiB of each operand per parallel item
}  // namespace

void swigluForward(const float* gate, const float* up, std::int64_t count, float* out) {
  const OpTimer timer(CpuOp::Swiglu);
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    sigmoidArray(gate + first, out + first, last - first);
    for (std::int64_t i = first; i < last; ++i) {
      out[i] = gate[i] * out[i] * up[i];
    }
  });
}

void swigluBackward(const float* dout, const float* gate, const float* up, std::int64_t count,
                    float* dgate, float* dup) {
  const OpTimer timer(CpuOp::Swiglu);
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    sigmoidArray(gate + first, dgate + first, last - first);
    for (std::int64_t i = first; i < last; ++i) {
      const float g = gate[i];
      const float sigmoid = dgate[i];
      const float d = dout[i];
      const float u = up[i];
      dup[i] = d * g * sigmoid;
      dgate[i] = d * u * sigmoid * (1.0f + g * (1.0f - sigmoid));
    }
  });
}

}  // namespace lorascope::compute::cpu
