// cpu/rope.cpp — RoPE for the CPU backend. The angle is formed in fp32 (position · inv_freq), as
// transformers does, and cos/sin are taken in double so that only that product rounds. Tokens run
// in parallel.
#include "compute/cpu/rope.h"

#include <cmath>
#include <vector>

#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges

namespace lorascope::compute::cpu {
namespace {
constexpr std::int64_t kTokensPerRange = 16;  // tokens per parallel item
}  // namespace

void rope(float* x, RopeDims dims, const std::int32_t* positions, const float* invFreq,
          bool inverse) {
  const OpTimer timer(CpuOp::Rope);
  const std::int64_t half = dims.headDim / 2;
  const double sign = inverse ? -1.0 : 1.0;
  parallelRanges(dims.tokens, kTokensPerRange, [=](std::int64_t first, std::int64_t last) {
    std::vector<float> cosines(static_cast<std::size_t>(half));
    std::vector<float> sines(static_cast<std::size_t>(half));
    for (std::int64_t t = first; t < last; ++t) {
      for (std::int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(positions[t]) * invFreq[i];
        cosines[static_cast<std::size_t>(i)] = static_cast<float>(std::cos(double{angle}));
        sines[static_cast<std::size_t>(i)] = static_cast<float>(sign * std::sin(double{angle}));
      }
      for (std::int64_t h = 0; h < dims.heads; ++h) {
        float* row = x + (t * dims.heads + h) * dims.headDim;
        for (std::int64_t i = 0; i < half; ++i) {
          const float c = cosines[static_cast<std::size_t>(i)];
          const float s = sines[static_cast<std::size_t>(i)];
          const float x1 = row[i];
          const float x2 = row[i + half];
          row[i] = x1 * c - x2 * s;
          row[i + half] = x2 * c + x1 * s;
        }
      }
    }
  });
}

}  // namespace lorascope::compute::cpu
