// cpu/add.h — elementwise ops in place (fp32): residual and bias additions, mask products.
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

// x (count) += y (count)
void addInPlace(float* x, const float* y, std::int64_t count);

// x (rows, dim): every row += bias (dim)
void addBias(float* x, const float* bias, std::int64_t rows, std::int64_t dim);

// x (count) ⊙= y (count)
void multiplyInPlace(float* x, const float* y, std::int64_t count);

}  // namespace lorascope::compute::cpu
