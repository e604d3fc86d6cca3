// cpu/add.cpp — elementwise in-place ops for the CPU backend.
#include "compute/cpu/add.h"

namespace lorascope::compute::cpu {

void addInPlace(float* x, const float* y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    x[i] += y[i];
  }
}

void addBias(float* x, const float* bias, std::int64_t rows, std::int64_t dim) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = x + r * dim;
    for (std::int64_t i = 0; i < dim; ++i) {
      row[i] += bias[i];
    }
  }
}

void multiplyInPlace(float* x, const float* y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    x[i] *= y[i];
  }
}

}  // namespace lorascope::compute::cpu
