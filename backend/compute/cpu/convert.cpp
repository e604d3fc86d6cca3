// cpu/convert.cpp — bf16/f16/f32/nf4 → f32 widening (compute/Convert.h).
#include "compute/Convert.h"

#include <bit>
#include <cstring>

#include "compute/Bf16.h"  // defines: bf16ToFloat
#include "compute/Nf4.h"   // defines: nf4::dequantize

namespace lorascope::compute {

float f16ToFloat(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  int exponent = (bits >> 10) & 0x1f;
  std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) {  // infinity or NaN: all-ones exponent, mantissa kept
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {
    if (mantissa == 0) {
      return std::bit_cast<float>(sign);
    }
    // Subnormal: shift the mantissa up until its leading 1 is the implicit bit.
    exponent = 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3ffu;
  }
  // f16 exponent bias 15, f32 bias 127 (a subnormal's exponent may be ≤ 0 before rebiasing).
  const auto exponent32 = static_cast<std::uint32_t>(exponent + (127 - 15));
  return std::bit_cast<float>(sign | (exponent32 << 23) | (mantissa << 13));
}

void widenToFloat(const void* src, DType dtype, std::int64_t offset, std::int64_t count,
                  float* dst) {
  switch (dtype) {
    case DType::F32:
      std::memcpy(dst, static_cast<const float*>(src) + offset,
                  static_cast<std::size_t>(count) * sizeof(float));
      return;
    case DType::BF16: {
      const auto* bits = static_cast<const std::uint16_t*>(src) + offset;
      for (std::int64_t i = 0; i < count; ++i) {
        dst[i] = bf16ToFloat(bits[i]);
      }
      return;
    }
    case DType::F16: {
      const auto* bits = static_cast<const std::uint16_t*>(src) + offset;
      for (std::int64_t i = 0; i < count; ++i) {
        dst[i] = f16ToFloat(bits[i]);
      }
      return;
    }
    case DType::NF4:
      nf4::dequantize(static_cast<const std::byte*>(src), offset, count, dst);
      return;
  }
}

}  // namespace lorascope::compute
