// hip/device_common.h — device helpers shared by the kernels: loads and stores as float, block
// reductions (sum, max).
// Include only from .hip translation units.
#pragma once

#include "gpu/hip_portability.h"  // defines: kWaveSize, waveShflXor, bf16 conversions

namespace lorascope::gpu {

__device__ inline float loadFloat(const float* p, long long i) {
  return p[i];
}
__device__ inline float loadFloat(const hip_bfloat16* p, long long i) {
  return bf16ToFloat(p[i]);
}
__device__ inline void storeFloat(float* p, long long i, float v) {
  p[i] = v;
}
__device__ inline void storeFloat(hip_bfloat16* p, long long i, float v) {
  p[i] = floatToBf16(v);
}

// `combine` (associative, commutative) of `value` over the whole block; every thread gets the
// result. blockDim.x must be a multiple of the wave size and at most kMaxBlockThreads. Safe to
// call repeatedly.
template <typename Combine>
__device__ inline float blockReduce(float value, Combine combine) {
  __shared__ float waveResults[kMaxBlockThreads / kMinWaveSize];
  for (int offset = kWaveSize / 2; offset > 0; offset /= 2) {
    value = combine(value, waveShflXor(value, offset));
  }
  const int lane = static_cast<int>(threadIdx.x) % kWaveSize;
  const int wave = static_cast<int>(threadIdx.x) / kWaveSize;
  if (lane == 0) {
    waveResults[wave] = value;
  }
  __syncthreads();
  const int waves = static_cast<int>(blockDim.x) / kWaveSize;
  float total = waveResults[0];
  for (int w = 1; w < waves; ++w) {
    total = combine(total, waveResults[w]);
  }
  __syncthreads();  // waveResults may be reused by the next call
  return total;
}

struct SumOp {
  __device__ float operator()(float x, float y) const { return x + y; }
};
struct MaxOp {
  __device__ float operator()(float x, float y) const { return fmaxf(x, y); }
};

// Sum and maximum of `value` over the whole block (blockReduce's conditions apply).
__device__ inline float blockSum(float value) {
  return blockReduce(value, SumOp{});
}
__device__ inline float blockMax(float value) {
  return blockReduce(value, MaxOp{});
}

}  // namespace lorascope::gpu
