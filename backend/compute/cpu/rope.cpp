// cpu/rope.cpp — RoPE for the CPU backend. The angle is formed in fp32 (position · inv_freq), as
// transformers does, and cos/sin are taken in double so that only that product rounds; once per
// distinct position in the call. Tokens run in parallel.
#include "compute/cpu/rope.h"

#include <algorithm>
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
  if (dims.tokens == 0) {
    return;
  }
  const std::int64_t half = dims.headDim / 2;
  const double sign = inverse ? -1.0 : 1.0;
  // cos/sin once per distinct position: a batch repeats the same positions in every sequence.
  const auto [low, high] = std::minmax_element(positions, positions + dims.tokens);
  const std::int64_t first = *low;
  const std::int64_t span = std::int64_t{*high} - first + 1;
  std::vector<float> cosines(static_cast<std::size_t>(span * half));
  std::vector<float> sines(static_cast<std::size_t>(span * half));
  float* const cosTable = cosines.data();
  float* const sinTable = sines.data();
  parallelRanges(span, kTokensPerRange, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      for (std::int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(first + p) * invFreq[i];
        cosTable[p * half + i] = static_cast<float>(std::cos(double{angle}));
        sinTable[p * half + i] = static_cast<float>(sign * std::sin(double{angle}));
      }
    }
  });
  parallelRanges(dims.tokens, kTokensPerRange, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const float* c = cosTable + (positions[t] - first) * half;
      const float* s = sinTable + (positions[t] - first) * half;
      for (std::int64_t h = 0; h < dims.heads; ++h) {
        float* row = x + (t * dims.heads + h) * dims.headDim;
        for (std::int64_t i = 0; i < half; ++i) {
          const float x1 = row[i];
          const float x2 = row[i + half];
          row[i] = x1 * c[i] - x2 * s[i];
          row[i + half] = x2 * c[i] + x1 * s[i];
        }
      }
    }
  });
}

}  // namespace lorascope::compute::cpu
