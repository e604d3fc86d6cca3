// cpu/swiglu.cpp — SwiGLU and GeGLU forward and backward, the scale and the soft-cap for the CPU
// backend, elements in parallel ranges; SwiGLU and the scale through the vector kernels of
// cpu/simd.h.
#include "compute/cpu/swiglu.h"

#include <cmath>

#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges
#include "compute/cpu/simd.h"      // defines: simd

namespace lorascope::compute::cpu {
namespace {
constexpr std::int64_t kElementsPerRange = 16384;  // 64 KiB of each operand per parallel item

constexpr float kSqrtTwoOverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// gelu_tanh(g) and its derivative.
struct Gelu {
  float value;
  float slope;
};
Gelu geluTanh(float g) {
  const float t = std::tanh(kSqrtTwoOverPi * (g + kGeluCubic * g * g * g));
  return {0.5f * g * (1.0f + t), 0.5f * (1.0f + t) + 0.5f * g * (1.0f - t * t) * kSqrtTwoOverPi *
                                                         (1.0f + 3.0f * kGeluCubic * g * g)};
}
}  // namespace

void swigluForward(const float* gate, const float* up, std::int64_t count, float* out) {
  const OpTimer timer(CpuOp::Swiglu);
  const auto kernel = simd().swigluForward;
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    kernel(gate + first, up + first, last - first, out + first);
  });
}

void swigluBackward(const float* dout, const float* gate, const float* up, std::int64_t count,
                    float* dgate, float* dup) {
  const OpTimer timer(CpuOp::Swiglu);
  const auto kernel = simd().swigluBackward;
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    kernel(dout + first, gate + first, up + first, last - first, dgate + first, dup + first);
  });
}

void gegluForward(const float* gate, const float* up, std::int64_t count, float* out) {
  const OpTimer timer(CpuOp::Swiglu);
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      out[i] = geluTanh(gate[i]).value * up[i];
    }
  });
}

void gegluBackward(const float* dout, const float* gate, const float* up, std::int64_t count,
                   float* dgate, float* dup) {
  const OpTimer timer(CpuOp::Swiglu);
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      const Gelu g = geluTanh(gate[i]);
      const float d = dout[i];
      dgate[i] = d * up[i] * g.slope;
      dup[i] = d * g.value;
    }
  });
}

void scaleInPlace(float* x, std::int64_t count, float factor) {
  const auto kernel = simd().scaleArray;
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    kernel(x + first, last - first, factor);
  });
}

void softcapInPlace(float* x, std::int64_t count, float cap) {
  parallelRanges(count, kElementsPerRange, [=](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      x[i] = cap * std::tanh(x[i] / cap);
    }
  });
}

}  // namespace lorascope::compute::cpu
