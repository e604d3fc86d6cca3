// hip/nf4.h — the launcher of the NF4 dequantisation kernel (hip/nf4.hip), the GPU twin of
// compute/Nf4.cpp's dequantize. Plain C++17 declarations, callable from host code.
#pragma once

#include <cstdint>

#include "gpu/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

// Floats of the table argument: the 16 NF4 code values, then the 256 dynamic-code values
// (compute/Nf4.h's kCode and dynamicCode()), as one f32 device array.
inline constexpr std::int64_t kNf4TableFloats = 16 + 256;

// out[i] = weight i of the NF4 buffer `packed` (compute/Nf4.h's layout), rounded to bf16, for
// i < numel. `tables` holds kNf4TableFloats f32 on the device. Returns at once when numel is 0.
void nf4Dequantize(const void* packed, std::int64_t numel, const float* tables, std::uint16_t* out,
                   hipStream_t stream);

}  // namespace lorascope::compute::hip
