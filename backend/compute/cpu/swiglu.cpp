// cpu/swiglu.cpp — SwiGLU forward and backward for the CPU backend.
#include "compute/cpu/swiglu.h"

#include <cmath>

namespace lorascope::compute::cpu {

void swigluForward(const float* gate, const float* up, std::int64_t count, float* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swigluBackward(const float* dout, const float* gate, const float* up, std::int64_t count,
                    float* dgate, float* dup) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    const float sigmoid = 1.0f / (1.0f + std::exp(-g));
    const float d = dout[i];
    const float u = up[i];
    dup[i] = d * g * sigmoid;
    dgate[i] = d * u * sigmoid * (1.0f + g * (1.0f - sigmoid));
  }
}

}  // namespace lorascope::compute::cpu
