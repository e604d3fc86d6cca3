// compute/Nf4.cpp — the NF4 double-quantisation format on the host (compute/Nf4.h).
#include "compute/Nf4.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compute/Convert.h"  // defines: widenToFloat
#include "compute/Errors.h"
#include "compute/cpu/parallel.h"  // defines: parallelFor

namespace lorascope::compute::nf4 {
namespace {

constexpr int kDynamicExponentBits = 7;  // create_dynamic_map's max_exponent_bits

// torch.linspace(start, end, steps) in f32 as ATen's vectorised CPU kernel computes it: an f32
// step, the first half counted up from start and the second down from end, each value one fused
// multiply-add (rounded once). Rounding the product first moves 42 of the 256 dynamic-code values
// by an ulp (checked against scripts/reference/nf4.py's table in test_nf4).
std::vector<float> linspace(float start, float end, int steps) {
  std::vector<float> out(static_cast<std::size_t>(steps));
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  for (int i = 0; i < steps; ++i) {
    out[static_cast<std::size_t>(i)] =
        i < halfway ? std::fma(step, static_cast<float>(i), start)
                    : std::fma(-step, static_cast<float>(steps - i - 1), end);
  }
  return out;
}

std::array<float, 256> makeDynamicCode() {
  std::vector<float> data;
  for (int i = 0; i < kDynamicExponentBits; ++i) {
    // Signed, 8 bits: 2^i + 1 boundaries in [0.1, 1], their midpoints scaled by 10^(i − 6).
    const std::vector<float> boundaries = linspace(0.1f, 1.0f, (1 << i) + 1);
    const auto scale = static_cast<float>(std::pow(10.0, -(kDynamicExponentBits - 1) + i));
    for (std::size_t j = 0; j + 1 < boundaries.size(); ++j) {
      const float mean = (boundaries[j] + boundaries[j + 1]) / 2.0f;
      data.push_back(scale * mean);
      data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  std::sort(data.begin(), data.end());
  std::array<float, 256> code{};
  std::copy(data.begin(), data.end(), code.begin());  // 2 · 127 + 2 = 256 values
  return code;
}

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

std::int64_t groupsOf(std::int64_t numel) {
  return (numel + kGroupWeights - 1) / kGroupWeights;
}

std::byte* groupStart(std::byte* packed, std::int64_t group) {
  return packed + kHeaderBytes + static_cast<std::size_t>(group) * kGroupBytes;
}
const std::byte* groupStart(const std::byte* packed, std::int64_t group) {
  return packed + kHeaderBytes + static_cast<std::size_t>(group) * kGroupBytes;
}

float loadFloat(const std::byte* p) {
  float v = 0.0f;
  std::memcpy(&v, p, sizeof v);
  return v;
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

const std::array<float, 256>& dynamicCode() {
  static const std::array<float, 256> code = makeDynamicCode();
  return code;
}

std::size_t storageBytes(std::int64_t numel) {
  return kHeaderBytes +
         static_cast<std::size_t>(groupsOf(std::max<std::int64_t>(numel, 0))) * kGroupBytes;
}

int nearestIndex(const float* table, int size, float v) {
  const int upper = static_cast<int>(std::lower_bound(table, table + size, v) - table);
  if (upper == 0) {
    return 0;
  }
  if (upper == size) {
    return size - 1;
  }
  // torch.argmin(|v − table|): the first (lower) index on a tie.
  return std::abs(v - table[upper - 1]) <= std::abs(v - table[upper]) ? upper - 1 : upper;
}

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

float blockScale(const std::byte* packed, std::int64_t block) {
  const std::int64_t g = block / kBlocksPerGroup;
  const std::byte* group = groupStart(packed, g);
  const auto q = static_cast<std::uint8_t>(group[kGroupCodeBytes + block % kBlocksPerGroup]);
  const float scale = loadFloat(group + kGroupCodeBytes + kBlocksPerGroup);
  // Two roundings, as bitsandbytes' dequantize_blockwise then "+= offset" (no fused multiply-add).
  volatile float product = dynamicCode()[q] * scale;
  return product + loadFloat(packed);
}

void dequantize(const std::byte* packed, std::int64_t offset, std::int64_t count, float* dst) {
  std::int64_t i = 0;
  while (i < count) {
    const std::int64_t at = offset + i;
    const std::int64_t block = at / kBlockSize;
    const float scale = blockScale(packed, block);
    const std::int64_t blockEnd = std::min((block + 1) * kBlockSize - offset, count);
    const auto* codes =
        reinterpret_cast<const std::uint8_t*>(groupStart(packed, at / kGroupWeights));
    for (; i < blockEnd; ++i) {
      const std::int64_t inGroup = (offset + i) % kGroupWeights;
      const std::uint8_t byte = codes[inGroup / 2];
      const int index = inGroup % 2 == 0 ? byte >> 4 : byte & 0x0f;
      dst[i] = kCode[static_cast<std::size_t>(index)] * scale;
    }
  }
}

}  // namespace lorascope::compute::nf4
