// hip/nf4.hip — NF4 (double-quantised) weights to bf16, for the GEMMs of a model loaded with
// --quantize nf4. CPU twin: compute/Nf4.cpp's dequantize (the layout is described in
// compute/Nf4.h). One thread makes 8 weights: one 32-bit load of their codes (4-byte aligned:
// a group's codes start 16 + g · 8452 bytes in, and 8 weights are 4 bytes of codes) and one
// 16-byte store where the 8 lie inside the tensor. The block scale is rebuilt with two separately
// rounded operations (no fused multiply-add), as on the CPU, so both see the same scale.
#include "compute/hip/nf4.h"

#include <algorithm>

#include "compute/Nf4.h"                // defines: nf4::kGroupWeights, kHeaderBytes, ...
#include "compute/hip/device_common.h"  // defines: storeFloat
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

constexpr int kThreads = 256;
constexpr long long kMaxBlocks = 1 << 16;
constexpr long long kWeightsPerThread = 8;

__device__ inline unsigned short bf16Bits(float v) {
  const hip_bfloat16 h = gpu::floatToBf16(v);
  unsigned short bits = 0;
  __builtin_memcpy(&bits, &h, sizeof bits);
  return bits;
}

__global__ void nf4DequantizeKernel(const unsigned char* packed, long long numel,
                                    const float* tables, hip_bfloat16* out) {
  __shared__ float code[16];
  __shared__ float dynamic[256];
  for (int i = static_cast<int>(threadIdx.x); i < 16 + 256; i += static_cast<int>(blockDim.x)) {
    if (i < 16) {
      code[i] = tables[i];
    } else {
      dynamic[i - 16] = tables[i];
    }
  }
  __syncthreads();
  const float offset = *reinterpret_cast<const float*>(packed);
  const long long octets = (numel + kWeightsPerThread - 1) / kWeightsPerThread;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < octets;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long first = t * kWeightsPerThread;
    const long long g = first / nf4::kGroupWeights;
    const long long inGroup = first % nf4::kGroupWeights;
    const unsigned char* group =
        packed + nf4::kHeaderBytes + g * static_cast<long long>(nf4::kGroupBytes);
    const unsigned int codes = *reinterpret_cast<const unsigned int*>(group + inGroup / 2);
    const unsigned char q = group[nf4::kGroupCodeBytes + inGroup / nf4::kBlockSize];
    const float absmax2 =
        *reinterpret_cast<const float*>(group + nf4::kGroupCodeBytes + nf4::kBlocksPerGroup);
    const float scale = __fadd_rn(__fmul_rn(dynamic[q], absmax2), offset);
    float w[kWeightsPerThread];
    for (int b = 0; b < 4; ++b) {
      const unsigned int byte = (codes >> (8 * b)) & 0xffu;
      w[2 * b] = __fmul_rn(code[byte >> 4], scale);
      w[2 * b + 1] = __fmul_rn(code[byte & 0x0fu], scale);
    }
    if (first + kWeightsPerThread <= numel) {
      uint4 v;
      v.x = bf16Bits(w[0]) | (static_cast<unsigned int>(bf16Bits(w[1])) << 16);
      v.y = bf16Bits(w[2]) | (static_cast<unsigned int>(bf16Bits(w[3])) << 16);
      v.z = bf16Bits(w[4]) | (static_cast<unsigned int>(bf16Bits(w[5])) << 16);
      v.w = bf16Bits(w[6]) | (static_cast<unsigned int>(bf16Bits(w[7])) << 16);
      *reinterpret_cast<uint4*>(out + first) = v;
    } else {
      for (long long i = 0; first + i < numel; ++i) {
        gpu::storeFloat(out, first + i, w[i]);
      }
    }
  }
}

}  // namespace

void nf4Dequantize(const void* packed, std::int64_t numel, const float* tables, std::uint16_t* out,
                   hipStream_t stream) {
  if (numel <= 0) {
    return;
  }
  const long long octets = (numel + kWeightsPerThread - 1) / kWeightsPerThread;
  const dim3 grid(static_cast<unsigned>(std::min(kMaxBlocks, (octets + kThreads - 1) / kThreads)));
  launch("nf4_dequantize", nf4DequantizeKernel, grid, dim3(kThreads), 0, stream,
         static_cast<const unsigned char*>(packed), static_cast<long long>(numel), tables,
         reinterpret_cast<hip_bfloat16*>(out));
}

}  // namespace lorascope::compute::hip
