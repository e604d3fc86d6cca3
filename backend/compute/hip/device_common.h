// hip/device_common.h — device helpers shared by the kernels: loads and stores as float, block
// reductions (sum, max).
// Include only from .hip translation units.
#pragma once

#include <cstdint>

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

// Packed access (Note [packed elementwise], hip/elementwise.hip): kPack consecutive values a
// thread, one 16-byte load or store per bf16 operand (two per f32 one).
constexpr int kPack = 8;  // elements per thread and iteration of a packed kernel

// Whether p is a multiple of `bytes` (a pack's access size) from address 0.
inline bool alignedTo(const void* p, std::uintptr_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// P when count and every address allow packs of kPack (Note [packed elementwise]), else 1.
template <typename... T>
bool packable(long long count, const T*... p) {
  return count % kPack == 0 && (alignedTo(p, 16) && ...);
}

// The unsigned type of P bf16 values: one load or store of 2P bytes (P = 2, 4, 8: 4, 8, 16 bytes).
template <int P>
struct Bf16PackBits;
template <>
struct Bf16PackBits<2> {
  using Type = unsigned int;
};
template <>
struct Bf16PackBits<4> {
  using Type = uint2;
};
template <>
struct Bf16PackBits<8> {
  using Type = uint4;
};

// P consecutive bf16 at p + i as floats, one load of 2P bytes (p + i aligned to it) when P > 1.
template <int P>
__device__ inline void loadPack(const hip_bfloat16* p, long long i, float (&v)[P]) {
  if constexpr (P == 1) {
    v[0] = loadFloat(p, i);
  } else {
    using Bits = typename Bf16PackBits<P>::Type;
    alignas(sizeof(Bits)) hip_bfloat16 h[P];
    *reinterpret_cast<Bits*>(h) = *reinterpret_cast<const Bits*>(p + i);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      v[k] = bf16ToFloat(h[k]);
    }
  }
}
template <int P>
__device__ inline void loadPack(const float* p, long long i, float (&v)[P]) {
  if constexpr (P == 1) {
    v[0] = p[i];
  } else if constexpr (P == 4) {
    const float4 a = *reinterpret_cast<const float4*>(p + i);
    v[0] = a.x;
    v[1] = a.y;
    v[2] = a.z;
    v[3] = a.w;
  } else {
    static_assert(P == kPack, "a pack is one or two 16-byte loads");
    const float4 a = *reinterpret_cast<const float4*>(p + i);
    const float4 b = *reinterpret_cast<const float4*>(p + i + 4);
    const float e[P] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int k = 0; k < P; ++k) {
      v[k] = e[k];
    }
  }
}
template <int P>
__device__ inline void storePack(hip_bfloat16* p, long long i, const float (&v)[P]) {
  if constexpr (P == 1) {
    storeFloat(p, i, v[0]);
  } else {
    using Bits = typename Bf16PackBits<P>::Type;
    alignas(sizeof(Bits)) hip_bfloat16 h[P];
#pragma unroll
    for (int k = 0; k < P; ++k) {
      h[k] = floatToBf16(v[k]);
    }
    *reinterpret_cast<Bits*>(p + i) = *reinterpret_cast<const Bits*>(h);
  }
}

// `combine` (associative, commutative) of `value` over the wave's lanes in a butterfly; every
// lane gets the result.
template <typename Combine>
__device__ inline float waveReduce(float value, Combine combine) {
  for (int offset = kWaveSize / 2; offset > 0; offset /= 2) {
    value = combine(value, waveShflXor(value, offset));
  }
  return value;
}

// `combine` (associative, commutative) of `value` over the whole block; every thread gets the
// result. blockDim.x must be a multiple of the wave size and at most kMaxBlockThreads. Safe to
// call repeatedly.
template <typename Combine>
__device__ inline float blockReduce(float value, Combine combine) {
  __shared__ float waveResults[kMaxBlockThreads / kMinWaveSize];
  value = waveReduce(value, combine);
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

// Sum of `value` over the wave's lanes (waveReduce).
__device__ inline float waveSum(float value) {
  return waveReduce(value, SumOp{});
}

// Sum and maximum of `value` over the whole block (blockReduce's conditions apply).
__device__ inline float blockSum(float value) {
  return blockReduce(value, SumOp{});
}
__device__ inline float blockMax(float value) {
  return blockReduce(value, MaxOp{});
}

}  // namespace lorascope::gpu
