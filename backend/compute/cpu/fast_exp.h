// cpu/fast_exp.h — exp and sigmoid over float arrays, four lanes at a time.
//
// The softmaxes of attention and of the lm-head loss and SwiGLU's sigmoid take ~10⁷ exps per
// training step of even the tiny model; libm's scalar expf made them a third of the step. The
// build targets baseline x86-64 (no -march), where GCC at -O2 does not vectorise a libm call, so
// this is Cephes' expf written on GCC vector types (SSE2 on x86-64, the same code on any target
// GCC and clang know): x = n·ln2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r, and 2^n
// put into the exponent bits. Within 2 ulp of expf on the clamped range [−87.3, 88.3]; below it
// returns ~1e−38 instead of 0, above it ~2e38 instead of inf (harmless in a softmax and a
// sigmoid). Every element goes through the same lanes code, so results do not depend on where
// an element sits in the array.
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

// y[i] = exp(x[i] · scale − shift) for i < count; y may be x.
void expArray(const float* x, float* y, std::int64_t count, float scale, float shift);

// y[i] = 1 / (1 + exp(−x[i])) for i < count; y may be x.
void sigmoidArray(const float* x, float* y, std::int64_t count);

// Σ x[i] in double (four partial sums, a fixed order).
double sumAsDouble(const float* x, std::int64_t count);

}  // namespace lorascope::compute::cpu
