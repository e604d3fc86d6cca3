// cpu/add.h — residual and bias additions, in place (fp32).
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

// x (count) += y (count)
void addInPlace(float* x, const float* y, std::int64_t count);

// x (rows, dim): every row += bias (dim)
void addBias(float* x, const float* bias, std::int64_t rows, std::int64_t dim);

}  // namespace lorascope::compute::cpu
