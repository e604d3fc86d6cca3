// hip/lm_head_loss.h — the kernels of the fused lm-head + cross-entropy between its GEMMs (the
// GEMMs run on the backend's selected GEMM through HipBackend::matmul). Plain C++ declarations,
// callable from host code; hip/lm_head_loss.hip defines them. CPU twin: cpu/lm_head_loss.cpp.
// Targets are device copies, already range-checked by the caller; ignoreTarget rows are skipped.
//
// One pass over the vocabulary, two GEMMs per chunk (the online softmax of flash attention):
// per chunk, logits_c = h·W_cᵀ (f32); each row's running max m and Σ exp(l − m) are updated,
// the chunk's weights p = exp(l − m) are written in bf16, the row's dh accumulator (f32) is
// multiplied by exp(m_old − m_new) when the max grew, and dhSum += p·W_c. At the end
// dh_r = gradScale · (dhSum_r / Σ_r − W[t_r]) = Σ_v (softmax_v − onehot_v)·gradScale·W_v.
#pragma once

#include <cstdint>

#include "gpu/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

// Columns per vocabulary chunk for `rows` tokens: the f32 logits of a chunk stay within
// kLmHeadChunkFloats (128 MiB) and its bf16 weights within half that, whatever the vocabulary;
// a multiple of 128 where the vocabulary allows, so that the rows of a chunk's logits and weights
// start at aligned addresses whatever the row count (the chunk kernel's packs need 16 bytes).
inline constexpr std::int64_t kLmHeadChunkFloats = std::int64_t{32} << 20;
std::int64_t lmHeadChunkColumns(std::int64_t rows, std::int64_t vocab);

// Note [lm-head row buckets]: the predicted rows of a step (HipBackend::lmHeadLoss) vary from
// batch to batch, and a vendor GEMM meets each new shape cold: on the H200 (cuBLAS 13) a pass
// over Llama-3.2-1B's vocabulary took up to 14 ms longer the first time a row count came (5 ms
// or more for one count in ten; the median 0.15), the host choosing and loading kernels while
// the device waited, and in the trainer's loop a step met a new count nearly every time (the
// lm-head's GEMMs 3.3 to 19 ms a step with op timing on, median 4.6). So
// the GEMMs run over the predicted rows rounded up to a multiple of kLmHeadRowBucket (at most
// every row of the batch), the extra rows zero in their inputs and never read in their outputs:
// a handful of shapes a run, at up to 127 rows of extra work. (compute::kLmHeadRowBucket, in
// compute/Backend.h: graph mode's counts are its multiples too.)

// Per-row state of the pass, f32, (rows) each.
struct LmHeadRowState {
  float* runningMax = nullptr;
  float* runningSum = nullptr;   // Σ exp(logit − runningMax) over the chunks so far
  float* rescale = nullptr;      // exp(m_old − m_new) of the last chunk
  float* targetLogit = nullptr;  // written by the chunk holding the target; unset when ignored
};

// Folds the chunk's logits (rows, columns) f32 — vocabulary ids firstColumn.. — into the row
// state (firstChunk starts it). When `weights` is not null, also writes the chunk's
// exp(logit − new running max) there as bf16 (rows, columns), zero rows where ignored. With
// softcap > 0 each logit is first capped, l ← softcap·tanh(l / softcap) (the target logit too),
// and the weights carry ∂l/∂raw = 1 − (l / softcap)².
void lmHeadChunk(const float* logits, std::int64_t rows, std::int64_t columns,
                 std::int64_t firstColumn, bool firstChunk, const std::int32_t* targets,
                 std::int32_t ignoreTarget, float softcap, LmHeadRowState state,
                 std::uint16_t* weights, hipStream_t stream);

// dhSum (rows, hidden) f32: row r *= state.rescale[r] (before the chunk's dhSum += p·W_c).
void lmHeadRescaleRows(float* dhSum, std::int64_t rows, std::int64_t hidden, LmHeadRowState state,
                       hipStream_t stream);

// out (rows, hidden) bf16: row r = src row sourceRows[r] (the predicted rows of a pass that
// skips the others, HipBackend::lmHeadLoss).
void lmHeadGatherRows(const std::uint16_t* src, const std::int32_t* sourceRows, std::int64_t rows,
                      std::int64_t hidden, std::uint16_t* out, hipStream_t stream);

// The pass's row r lands in row outRows[r] of losses and dh when outRows is not null (a pass over
// gathered rows), else in row r.

// losses (rows) f32 = running max + log(running sum) − target logit, 0 for ignored rows.
void lmHeadLosses(LmHeadRowState state, std::int64_t rows, const std::int32_t* targets,
                  std::int32_t ignoreTarget, const std::int32_t* outRows, float* losses,
                  hipStream_t stream);

// dh (rows, hidden) bf16 = gradScale · (dhSum / running sum − slope·weight[target]), 0 for
// ignored rows; slope = 1 − (target logit / softcap)² when capped, else 1; weight (vocab,
// hidden) bf16 or f32. With gradScaleOnDevice (graph mode) the scale is read from there.
void lmHeadFinishGradient(const float* dhSum, std::int64_t rows, std::int64_t hidden,
                          const void* weight, bool weightIsBf16, const std::int32_t* targets,
                          std::int32_t ignoreTarget, float softcap, LmHeadRowState state,
                          float gradScale, const float* gradScaleOnDevice,
                          const std::int32_t* outRows, std::uint16_t* dh, hipStream_t stream);

}  // namespace lorascope::compute::hip
