// cpu/rmsnorm.h — RMSNorm forward and backward in fp32 (the reference for hip/rmsnorm.hip).
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

// x (rows, dim), weight (dim) -> y (rows, dim), rstd (rows)
void rmsnormForward(const float* x, const float* weight, float eps, std::int64_t rows,
                    std::int64_t dim, float* y, float* rstd);

// dy (rows, dim), x (rows, dim), weight (dim), rstd (rows) -> dx (rows, dim)
// With g = weight ⊙ dy: dx = rstd · (g − x · rstd² · mean(g ⊙ x)); with accumulate, dx += that.
void rmsnormBackward(const float* dy, const float* x, const float* weight, const float* rstd,
                     std::int64_t rows, std::int64_t dim, float* dx, bool accumulate);

}  // namespace lorascope::compute::cpu
