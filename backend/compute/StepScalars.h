// StepScalars.h — the per-step values of a step whose host reads wait until its end (graph mode:
// train/StepGraphs.h), as they sit in device memory. Apart from Backend.h so that the kernels
// (compiled as C++17 by nvcc) read the very structs the Backend interface writes.
#pragma once

#include <cstdint>

#include "compute/AdamWScalars.h"

namespace lorascope::compute {

// What the host sets before each step (Backend::copyIn from pinned memory): the values that were
// kernel arguments in an eager step, read by the kernels from here instead.
struct StepScalars {
  AdamWScalars adamw;      // this step's learning rate and bias corrections
  float gradScale = 1.0f;  // 1 / the tokens predicted in the step: the loss weight of a token
  // The high 32 bits of every dropout mask's Philox stream (train/LoraDropout.h: the step).
  std::uint32_t dropoutStreamHigh = 0;
  double maxGradNorm = 0.0;  // ≤ 0: no clipping (a double, as the eager step computes with it)
};

// What the step leaves for the host (Backend::copyOut into pinned memory, read after the step).
struct StepSums {
  double lossSum = 0.0;      // Σ token losses of the step's micro-batches (unscaled)
  double gradSquares = 0.0;  // Σ g² of the accumulated gradients: the norm²
  double finite = 0.0;       // 1 when the loss and the gradient norm were finite (update applied)
  double unused = 0.0;
};

inline constexpr std::int64_t kStepScalarsWords =
    static_cast<std::int64_t>(sizeof(StepScalars) / sizeof(float));
inline constexpr std::int64_t kStepSumsWords =
    static_cast<std::int64_t>(sizeof(StepSums) / sizeof(float));

}  // namespace lorascope::compute
