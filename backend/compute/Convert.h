// Convert.h — widening of stored weight dtypes (bf16, f16, f32) to fp32: what the CPU backend
// computes in (per op, on blocks of a weight, never on a whole model: see cpu/matmul.cpp), and
// what the host code reads weights as (merge, export, device upload). Implemented in
// cpu/convert.cpp.
#pragma once

#include <cstdint>

#include "compute/Tensor.h"  // defines: DType

namespace lorascope::compute {

// IEEE 754 binary16 bits to float, subnormals, infinities and NaN included.
float f16ToFloat(std::uint16_t bits);

// dst[i] = float(src[offset + i]) for i < count, src holding elements of `dtype` (an NF4 src is
// the whole packed tensor: compute/Nf4.h).
void widenToFloat(const void* src, DType dtype, std::int64_t offset, std::int64_t count,
                  float* dst);

}  // namespace lorascope::compute
