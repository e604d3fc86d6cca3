// cpu/swiglu.h — SwiGLU activation of the Llama MLP (fp32).
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

// gate, up (count) -> out (count): out = silu(gate) ⊙ up, silu(g) = g / (1 + e^−g).
void swigluForward(const float* gate, const float* up, std::int64_t count, float* out);

}  // namespace lorascope::compute::cpu
