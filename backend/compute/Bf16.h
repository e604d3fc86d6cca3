// Bf16.h — host-side bfloat16 <-> float conversion (round to nearest even, NaN kept quiet).
// Device code uses the vendor types through hip/hip_portability.h; both agree bit for bit.
#pragma once

#include <bit>
#include <cstdint>

namespace lorascope::compute {

inline float bf16ToFloat(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline std::uint16_t floatToBf16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN, sign kept
  }
  const std::uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + roundingBias) >> 16);
}

// Rounds a float to the nearest bf16 value and back: what a bf16 round trip does to data.
inline float roundToBf16(float value) {
  return bf16ToFloat(floatToBf16(value));
}

}  // namespace lorascope::compute
