// AdamWScalars.h — the scalars of one AdamW step, apart from Backend.h so that the kernels
// (compiled as C++17 by nvcc, without <span>) take the very struct the Backend interface does.
#pragma once

namespace lorascope::compute {

// Precomputed on the host (train::adamwScalars) so that every backend applies the same fp32
// values.
struct AdamWScalars {
  float decay = 1.0f;      // 1 − lr·weight_decay
  float stepSize = 0.0f;   // lr / (1 − β1^t)
  float sqrtBias2 = 1.0f;  // √(1 − β2^t)
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
};

}  // namespace lorascope::compute
