// compute/Nf4.cpp — the NF4 double-quantisation format on the host (compute/Nf4.h): its codes,
// sizes and the dequantiser; the quantiser, which uses the CPU threads, is compute/Nf4Quantize.cpp.
#include "compute/Nf4.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

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

float loadFloat(const std::byte* p) {
  float v = 0.0f;
  std::memcpy(&v, p, sizeof v);
  return v;
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
