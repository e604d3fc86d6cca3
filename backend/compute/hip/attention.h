// hip/attention.h — launchers of the causal GQA attention kernels (bf16 in/out, fp32 math), with
// an optional sliding window, documents packed apart and soft-capping of the scores.
// Plain C++ declarations, callable from host code; hip/attention.hip defines them. CPU twin:
// cpu/attention.cpp. Shapes and the contract are those of Backend::attentionForward/Backward.
#pragma once

#include <cstdint>

#include "gpu/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

// Head dims up to this are supported (padded to 64, 128 or 256 inside the kernels); the caller
// rejects larger ones with a ShapeError.
inline constexpr std::int64_t kMaxAttentionHeadDim = 256;

// Head dims up to this run on matrix cores where the device has them (padded to 64 or 128);
// larger ones, and devices without matrix cores, run the vector-ALU kernels.
inline constexpr std::int64_t kMaxMatrixAttentionHeadDim = 128;

struct AttentionShape {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t heads = 0;    // query heads
  std::int64_t kvHeads = 0;  // divides heads
  std::int64_t headDim = 0;  // 1 .. kMaxAttentionHeadDim
  std::int64_t window = 0;   // query i sees keys i − window < j ≤ i; 0 = full causal
  float softcap = 0.0f;      // scores ← softcap·tanh(scores / softcap); 0 = off
  // (B, S) int32 on the device, or null: query i of row b sees only keys j ≥ its document's start
  // documentStarts[b·S + i], which never falls along a row (Backend::AttentionOptions).
  const std::int32_t* documentStarts = nullptr;
};

enum class AttentionKernels {
  MatrixCores,  // gpu::mma: tensor cores (NVIDIA sm_80+), MFMA (CDNA 2/3), WMMA (RDNA 3/4)
  Vector,       // fp32 on the vector ALUs: every device, every head dim
};

// Which kernels attentionForward/Backward run for `shape` on the current device. The environment
// variable LORASCOPE_ATTENTION_KERNEL=vector forces the vector kernels.
AttentionKernels attentionKernels(const AttentionShape& shape);

// q (B, S, heads, hd), k and v (B, S, kvHeads, hd) bf16
//   -> out (B, S, heads, hd) bf16, logsumexp (B, heads, S) f32
void attentionForward(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                      AttentionShape shape, float scale, std::uint16_t* out, float* logsumexp,
                      hipStream_t stream);

// Scratch of attentionBackward, all f32 and owned by the caller (the backend's allocator):
//   rowDot     (B, heads, S)      D_i = dout_i · out_i
//   dkPartial, dvPartial (B, S, heads, hd)  per-query-head dk, dv before the sum over the group
struct AttentionBackwardScratch {
  float* rowDot = nullptr;
  float* dkPartial = nullptr;
  float* dvPartial = nullptr;
};

// dout, q, out (B, S, heads, hd), k, v (B, S, kvHeads, hd) bf16, logsumexp (B, heads, S) f32
//   -> dq (B, S, heads, hd), dk, dv (B, S, kvHeads, hd) bf16, overwritten
void attentionBackward(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                       const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                       AttentionShape shape, float scale, AttentionBackwardScratch scratch,
                       std::uint16_t* dq, std::uint16_t* dk, std::uint16_t* dv, hipStream_t stream);

}  // namespace lorascope::compute::hip
