// hip/elementwise.h — launchers of the gather, rotary, activation, add, cast and cross-entropy
// kernels (bf16 activations, fp32 math). Plain C++17 declarations, callable from host code;
// hip/elementwise.hip defines them. Index arrays (ids, positions, targets) are device copies,
// already range-checked by the caller. Every launcher returns at once for empty inputs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

// out[t] = table[ids[t]]: table (vocab, dim) bf16 or f32, ids (tokens), out (tokens, dim) bf16
void embeddingForward(const void* table, bool tableIsBf16, std::int64_t dim,
                      const std::int32_t* ids, std::int64_t tokens, std::uint16_t* out,
                      hipStream_t stream);

// rotate_half RoPE in place (Backend::rope): x (tokens, heads, headDim) bf16, positions (tokens),
// invFreq (headDim / 2) f32; `inverse` rotates by the negative angle.
void rope(std::uint16_t* x, std::int64_t tokens, std::int64_t heads, std::int64_t headDim,
          const std::int32_t* positions, const float* invFreq, bool inverse, hipStream_t stream);

// dqkv's rows (outLd apart) = [rope⁻¹(dq) | rope⁻¹(dk) | dv] (Backend::ropeBackwardStacked); dq
// (tokens, heads, headDim), dk and dv (tokens, kvHeads, headDim); all bf16.
void ropeBackwardStacked(const std::uint16_t* dq, const std::uint16_t* dk, const std::uint16_t* dv,
                         std::int64_t tokens, std::int64_t heads, std::int64_t kvHeads,
                         std::int64_t headDim, const std::int32_t* positions, const float* invFreq,
                         std::uint16_t* dqkv, std::int64_t outLd, hipStream_t stream);

// out = silu(gate) ⊙ up; all (count) bf16
void swigluForward(const std::uint16_t* gate, const std::uint16_t* up, std::int64_t count,
                   std::uint16_t* out, hipStream_t stream);
// dgate, dup from dout, gate, up (Backend::swigluBackward); all (count) bf16
void swigluBackward(const std::uint16_t* dout, const std::uint16_t* gate, const std::uint16_t* up,
                    std::int64_t count, std::uint16_t* dgate, std::uint16_t* dup,
                    hipStream_t stream);
// The same into dGateUp (rows, 2·cols) = [dgate | dup] (Backend::swigluBackwardStacked), its rows
// outLd apart; the inputs (rows, cols).
void swigluBackwardStacked(const std::uint16_t* dout, const std::uint16_t* gate,
                           const std::uint16_t* up, std::int64_t rows, std::int64_t cols,
                           std::uint16_t* dGateUp, std::int64_t outLd, hipStream_t stream);

// out = gelu_tanh(gate) ⊙ up, and its gradients (Backend::gegluForward/Backward); all (count)
// bf16
void gegluForward(const std::uint16_t* gate, const std::uint16_t* up, std::int64_t count,
                  std::uint16_t* out, hipStream_t stream);
void gegluBackward(const std::uint16_t* dout, const std::uint16_t* gate, const std::uint16_t* up,
                   std::int64_t count, std::uint16_t* dgate, std::uint16_t* dup,
                   hipStream_t stream);

// x ← x·factor and x ← cap·tanh(x / cap), in place; x (count) bf16
void scaleInPlace(std::uint16_t* x, std::int64_t count, float factor, hipStream_t stream);
void softcapInPlace(std::uint16_t* x, std::int64_t count, float cap, hipStream_t stream);

// x += y and x ⊙= y, in place; x, y (count) bf16
void addInPlace(std::uint16_t* x, const std::uint16_t* y, std::int64_t count, hipStream_t stream);
// dst ← src, (rows, cols) bf16 each, their rows srcLd and dstLd elements apart: one part of a
// side-by-side stack (dst points at its first column), or a column block of a wider tensor.
void copyColumns(const std::uint16_t* src, std::int64_t rows, std::int64_t cols, std::int64_t srcLd,
                 std::uint16_t* dst, std::int64_t dstLd, hipStream_t stream);
// One matrix of copyMatrices: dst (rows, cols), its rows dstLd apart, = scale·op(src), src's rows
// srcLd apart and op the transpose when `transpose`; bf16.
struct MatrixCopyJob {
  const std::uint16_t* src = nullptr;
  std::int64_t srcLd = 0;
  std::uint16_t* dst = nullptr;
  std::int64_t dstLd = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  bool transpose = false;
  float scale = 1.0f;
};
inline constexpr std::size_t kMatrixCopiesPerLaunch = 16;
// Backend::copyMatrices: up to kMatrixCopiesPerLaunch copies a launch.
void copyMatrices(const MatrixCopyJob* jobs, std::size_t count, hipStream_t stream);
void multiplyInPlace(std::uint16_t* x, const std::uint16_t* y, std::int64_t count,
                     hipStream_t stream);
// x[r] += bias: x (rows, dim) bf16, bias (dim) bf16 or f32
void addBias(std::uint16_t* x, const void* bias, bool biasIsBf16, std::int64_t rows,
             std::int64_t dim, hipStream_t stream);

// out = bf16(in), rounding to nearest even: in (count) f32, out (count) bf16
void castF32ToBf16(const float* in, std::int64_t count, std::uint16_t* out, hipStream_t stream);

// c = bf16(product + beta·c), one rounding: product (count) f32, c (count) bf16. The vendor
// matmul's epilogue for a bf16 c with beta ≠ 0 (hip/HipBackendOpsGemm.cpp says why).
void accumulateIntoBf16(const float* product, std::int64_t count, float beta, std::uint16_t* c,
                        hipStream_t stream);

// The largest inner dimension addLowRankProduct takes.
inline constexpr std::int64_t kMaxLowRank = 64;
// y += scale · lhsTᵀ · op(w) with k ≤ kMaxLowRank (Backend::addLowRankProduct): lhsT
// (k, tokens) bf16, w (n, k) when transposeW else (k, n), bf16 or f32, y (tokens, n) bf16; the k
// products summed in fp32, y rounded once. No product is written out.
void addLowRankProduct(const std::uint16_t* lhsT, std::int64_t k, std::int64_t tokens,
                       const void* w, bool weightIsBf16, bool transposeW, std::int64_t n,
                       float scale, std::uint16_t* y, hipStream_t stream);

// Per row r: logsumexp[r] and losses[r] = logsumexp[r] − logits[r][targets[r]] (0 where the
// target is ignoreTarget). logits (rows, vocab) bf16, targets (rows), losses, logsumexp (rows) f32
void crossEntropyForward(const std::uint16_t* logits, std::int64_t rows, std::int64_t vocab,
                         const std::int32_t* targets, std::int32_t ignoreTarget, float* losses,
                         float* logsumexp, hipStream_t stream);

}  // namespace lorascope::compute::hip
