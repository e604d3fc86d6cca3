// cpu/swiglu.h — SwiGLU activation of the Llama MLP (fp32), forward and backward.
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

// gate, up (count) -> out (count): out = silu(gate) ⊙ up, silu(g) = g / (1 + e^−g).
void swigluForward(const float* gate, const float* up, std::int64_t count, float* out);

// dout, gate, up (count) -> dgate, dup (count):
//   dup = dout·silu(g),  dgate = dout·up·σ(g)·(1 + g·(1 − σ(g))).
void swigluBackward(const float* dout, const float* gate, const float* up, std::int64_t count,
                    float* dgate, float* dup);

}  // namespace lorascope::compute::cpu
