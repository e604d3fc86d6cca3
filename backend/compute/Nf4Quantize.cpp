// compute/Nf4Quantize.cpp — the NF4 quantiser (compute/Nf4.h), split over the CPU threads; the
// format itself is compute/Nf4.cpp, which needs no thread pool.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compute/Convert.h"  // defines: widenToFloat
#include "compute/Errors.h"
#include "compute/Nf4.h"
#include "compute/cpu/parallel.h"  // defines: parallelFor

namespace lorascope::compute::nf4 {
namespace {

// nearestIndex(kCode, 16, v) without branches: the count of code values below v is the lower
// bound, then the nearer of its two neighbours (ties to the lower). The same comparisons give the
// same index; a binary search over 16 values mispredicts on nearly every weight.
int nearestCode(float v) {
  int upper = 0;
  for (const float c : kCode) {
    upper += c < v ? 1 : 0;
  }
  const int lower = upper > 0 ? upper - 1 : 0;
  const int higher = upper < 16 ? upper : 15;
  return std::abs(v - kCode[static_cast<std::size_t>(lower)]) <=
                 std::abs(v - kCode[static_cast<std::size_t>(higher)])
             ? lower
             : higher;
}

void storeFloat(std::byte* p, float v) {
  std::memcpy(p, &v, sizeof v);
}
// Widens weights [first, first + count) of the source, checking that each is finite.
void readWeights(const void* src, DType dtype, std::int64_t first, std::int64_t count, float* dst) {
  widenToFloat(src, dtype, first, count, dst);
  for (std::int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(dst[i])) {
      throw ShapeError("nf4 quantize: weight " + std::to_string(first + i) + " is " +
                       std::to_string(dst[i]) + " (NaN or infinite weights cannot be quantised)");
    }
  }
}
}  // namespace

void quantize(const void* src, DType dtype, std::int64_t numel, std::byte* out) {
  if (dtype == DType::NF4) {
    throw ShapeError("nf4 quantize: the source is already nf4");
  }
  const std::int64_t groups = groupsOf(numel);
  const std::int64_t blocks = (numel + kBlockSize - 1) / kBlockSize;
  std::memset(out, 0, storageBytes(numel));
  // Pass 1: the exact absmax of every block, and its 4-bit codes (which use the exact absmax).
  std::vector<float> absmax(static_cast<std::size_t>(blocks));
  std::vector<std::string> errors(static_cast<std::size_t>(groups));
  cpu::parallelFor(groups, [&](std::int64_t g) {
    try {
      const std::int64_t first = g * kGroupWeights;
      const std::int64_t count = std::min(kGroupWeights, numel - first);
      std::vector<float> w(static_cast<std::size_t>(count));
      readWeights(src, dtype, first, count, w.data());
      auto* codes = reinterpret_cast<std::uint8_t*>(groupStart(out, g));
      for (std::int64_t b0 = 0; b0 < count; b0 += kBlockSize) {
        const std::int64_t n = std::min(kBlockSize, count - b0);
        float m = 0.0f;
        for (std::int64_t i = 0; i < n; ++i) {
          m = std::max(m, std::abs(w[static_cast<std::size_t>(b0 + i)]));
        }
        absmax[static_cast<std::size_t>((first + b0) / kBlockSize)] = m;
        for (std::int64_t i = 0; i < n; ++i) {
          // An all-zero block stores code 7 (0.0) instead of dividing by zero.
          const float v = m > 0.0f ? w[static_cast<std::size_t>(b0 + i)] / m : 0.0f;
          const auto index = static_cast<std::uint8_t>(nearestCode(v));
          const std::int64_t at = b0 + i;
          codes[at / 2] |= static_cast<std::uint8_t>(at % 2 == 0 ? index << 4 : index);
        }
      }
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(g)] = e.what();
    }
  });
  for (const std::string& error : errors) {
    if (!error.empty()) {
      throw ShapeError(error);
    }
  }
  // The offset: the mean of every absmax (in double, so it does not depend on the split).
  double sum = 0.0;
  for (const float m : absmax) {
    sum += m;
  }
  const float offset = blocks > 0 ? static_cast<float>(sum / static_cast<double>(blocks)) : 0.0f;
  storeFloat(out, offset);
  // Pass 2: absmax − offset in groups of 256 with the dynamic 8-bit code.
  const std::array<float, 256>& dynamic = dynamicCode();
  cpu::parallelFor(groups, [&](std::int64_t g) {
    const std::int64_t firstBlock = g * kBlocksPerGroup;
    const std::int64_t count = std::min(kBlocksPerGroup, blocks - firstBlock);
    float scale = 0.0f;
    for (std::int64_t b = 0; b < count; ++b) {
      scale = std::max(scale, std::abs(absmax[static_cast<std::size_t>(firstBlock + b)] - offset));
    }
    std::byte* group = groupStart(out, g);
    auto* qabsmax = reinterpret_cast<std::uint8_t*>(group + kGroupCodeBytes);
    for (std::int64_t b = 0; b < count; ++b) {
      const float centred = absmax[static_cast<std::size_t>(firstBlock + b)] - offset;
      const float v = scale > 0.0f ? centred / scale : 0.0f;
      qabsmax[b] = static_cast<std::uint8_t>(nearestIndex(dynamic.data(), 256, v));
    }
    storeFloat(group + kGroupCodeBytes + kBlocksPerGroup, scale);
  });
}
}  // namespace lorascope::compute::nf4
