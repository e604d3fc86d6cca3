// cpu/swiglu.h — the gated MLP activations (fp32), forward and backward: SwiGLU of the Llama
// MLP and GeGLU (tanh-approximated GELU) of the Gemma MLP; plus the elementwise scale and tanh
// soft-cap of Gemma's embeddings and logits.
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

// gate, up (count) -> out (count): out = silu(gate) ⊙ up, silu(g) = g / (1 + e^−g).
void swigluForward(const float* gate, const float* up, std::int64_t count, float* out);

// dout, gate, up (count) -> dgate, dup (count):
//   dup = dout·silu(g),  dgate = dout·up·σ(g)·(1 + g·(1 − σ(g))).
void swigluBackward(const float* dout, const float* gate, const float* up, std::int64_t count,
                    float* dgate, float* dup);

// out = gelu_tanh(gate) ⊙ up, gelu_tanh(g) = ½·g·(1 + tanh(√(2/π)·(g + 0.044715·g³))).
void gegluForward(const float* gate, const float* up, std::int64_t count, float* out);
// dup = dout·gelu_tanh(g),  dgate = dout·up·gelu_tanh'(g).
void gegluBackward(const float* dout, const float* gate, const float* up, std::int64_t count,
                   float* dgate, float* dup);

// x ← x·factor, in place.
void scaleInPlace(float* x, std::int64_t count, float factor);
// x ← cap·tanh(x / cap), in place.
void softcapInPlace(float* x, std::int64_t count, float cap);

}  // namespace lorascope::compute::cpu
