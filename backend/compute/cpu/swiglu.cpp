// cpu/swiglu.cpp — SwiGLU for the CPU backend.
#include "compute/cpu/swiglu.h"

#include <cmath>

namespace lorascope::compute::cpu {

void swigluForward(const float* gate, const float* up, std::int64_t count, float* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace lorascope::compute::cpu
