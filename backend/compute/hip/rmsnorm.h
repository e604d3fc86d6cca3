// hip/rmsnorm.h — launchers of the RMSNorm kernels (bf16 activations, fp32 accumulation).
// Plain C++ declarations, callable from host code; hip/rmsnorm.hip defines them.
#pragma once

#include <cstdint>

#include "gpu/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

// x (rows, dim) bf16, weight (dim) bf16 or f32 -> y (rows, dim) bf16, its rows yLd apart (dim
// when dense), rstd (rows) f32
void rmsnormForward(const std::uint16_t* x, const void* weight, bool weightIsBf16, float eps,
                    std::int64_t rows, std::int64_t dim, std::uint16_t* y, std::int64_t yLd,
                    float* rstd, hipStream_t stream);

// dy, x (rows, dim) bf16, weight (dim) bf16 or f32, rstd (rows) f32 -> dx (rows, dim) bf16; with
// accumulate dx += the gradient, the sum in fp32 and rounded once
void rmsnormBackward(const std::uint16_t* dy, const std::uint16_t* x, const void* weight,
                     bool weightIsBf16, const float* rstd, std::int64_t rows, std::int64_t dim,
                     std::uint16_t* dx, bool accumulate, hipStream_t stream);

}  // namespace lorascope::compute::hip
