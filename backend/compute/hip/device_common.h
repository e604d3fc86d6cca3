// hip/device_common.h — device helpers shared by the kernels: loads as float, block reductions.
// Include only from .hip translation units.
#pragma once

#include "compute/hip/hip_portability.h"  // defines: kWaveSize, waveShflXor, bf16 conversions

namespace lorascope::gpu {

__device__ inline float loadFloat(const float* p, long long i) {
  return p[i];
}
__device__ inline float loadFloat(const hip_bfloat16* p, long long i) {
  return bf16ToFloat(p[i]);
}

// Sum of `value` over the whole block; every thread gets the result. blockDim.x must be a
// multiple of the wave size and at most kMaxBlockThreads. Safe to call repeatedly.
__device__ inline float blockSum(float value) {
  __shared__ float waveSums[kMaxBlockThreads / kMinWaveSize];
  for (int offset = kWaveSize / 2; offset > 0; offset /= 2) {
    value += waveShflXor(value, offset);
  }
  const int lane = static_cast<int>(threadIdx.x) % kWaveSize;
  const int wave = static_cast<int>(threadIdx.x) / kWaveSize;
  if (lane == 0) {
    waveSums[wave] = value;
  }
  __syncthreads();
  const int waves = static_cast<int>(blockDim.x) / kWaveSize;
  float total = 0.0f;
  for (int w = 0; w < waves; ++w) {
    total += waveSums[w];
  }
  __syncthreads();  // waveSums may be reused by the next call
  return total;
}

}  // namespace lorascope::gpu
