// HostOptimizer.h — the optimizer ops on fp32 host memory: AdamW, sum of squares, scaling and
// dropout masks. The CPU backend's ops and the host trainer's functions (train/Optimizer.cpp,
// train/LoraDropout.cpp) both call these, so they share one definition of the arithmetic.
// Implemented in cpu/optimizer.cpp (the CPU twin of hip/optimizer.hip).
#pragma once

#include <cstdint>

#include "compute/AdamWScalars.h"

namespace lorascope::compute::host {

// One AdamW step over `count` elements (formula and order in Backend::adamw).
//   param, grad, firstMoment, secondMoment (count)
void adamw(float* param, const float* grad, float* firstMoment, float* secondMoment,
           std::int64_t count, const AdamWScalars& scalars);

// sum + Σ x[i]², each square and addition in double, in index order.
double addSumOfSquares(const float* x, std::int64_t count, double sum);

// x (count) ·= factor
void scale(float* x, std::int64_t count, float factor);

// mask (count): element i of the inverted-dropout mask of (seed, stream) (Backend::dropoutMask).
void dropoutMask(float* mask, std::int64_t count, std::uint64_t seed, std::uint64_t stream,
                 double p);

}  // namespace lorascope::compute::host
