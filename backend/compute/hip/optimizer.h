// hip/optimizer.h — launchers of the optimizer kernels; CPU twin: cpu/optimizer.cpp.
// The list ops (fill, scale, sum of squares, AdamW) read a device table of chunks, one GPU block
// per chunk, so a list of any length is one launch (llm.c's adamw.cuh does one tensor; this is
// the multi-tensor form). Plain C++ declarations, callable from host code; hip/optimizer.hip
// defines them.
#pragma once

#include <cstdint>

#include "compute/AdamWScalars.h"
#include "compute/StepScalars.h"
#include "gpu/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

// A run of at most kChunkElements elements of one tensor of a list op (of four, for AdamW).
struct TensorChunk {
  float* x = nullptr;             // the tensor read or written; AdamW's parameter
  const float* grad = nullptr;    // AdamW only
  float* firstMoment = nullptr;   // AdamW only
  float* secondMoment = nullptr;  // AdamW only
  std::int64_t count = 0;         // elements, 1..kChunkElements
};
// 64 elements per thread of a 256-thread block: enough work per block to hide its start-up,
// small enough that a LoRA tensor of a 0.5B model (7K–40K elements) spreads over a few blocks.
inline constexpr std::int64_t kChunkElements = 16384;

// chunks: device array of chunkCount entries (chunkCount ≥ 1).
void fillZero(const TensorChunk* chunks, std::int64_t chunkCount, hipStream_t stream);
void scaleInPlace(const TensorChunk* chunks, std::int64_t chunkCount, float factor,
                  hipStream_t stream);
// partials (chunkCount) and sum (1) are device doubles: *sum = Σ over chunks of Σ x², added in a
// fixed order (the same result every run).
void sumOfSquares(const TensorChunk* chunks, std::int64_t chunkCount, double* partials, double* sum,
                  hipStream_t stream);
void adamw(const TensorChunk* chunks, std::int64_t chunkCount, const AdamWScalars& scalars,
           hipStream_t stream);

// mask (count) f32 or bf16: element i = dropoutFromWord(word i mod 4 of Philox block i / 4).
void dropoutMask(void* mask, bool maskIsBf16, std::int64_t count, std::uint64_t seed,
                 std::uint64_t philoxStream, float p, float keep, hipStream_t stream);
// Backend::dropoutMaskAt: mask (rows·seq, features); streamHigh and rowLength in device memory.
void dropoutMaskPadded(void* mask, bool maskIsBf16, std::int64_t rows, std::int64_t seq,
                       std::int64_t features, std::uint64_t seed, std::uint32_t streamLow,
                       const std::uint32_t* streamHigh, const std::int32_t* rowLength, float p,
                       float keep, hipStream_t stream);

// Graph mode (Backend.h, "Steps without host reads"): scalars and sums in device memory.
// adamw over the chunks with scalars->adamw, only when sums->finite is 1.
void adamwIfFinite(const TensorChunk* chunks, std::int64_t chunkCount, const StepScalars* scalars,
                   const StepSums* sums, hipStream_t stream);
// sums->lossSum += Σ values (count).
void accumulateLoss(const float* values, std::int64_t count, StepSums* sums, hipStream_t stream);
// sums->gradSquares = Σ x² over the chunks (partials: chunkCount doubles), sums->finite and
// *factor (one device float) as Backend::clipScaledGradients says, then x ·= *factor.
void clipScaled(const TensorChunk* chunks, std::int64_t chunkCount, double* partials,
                const StepScalars* scalars, StepSums* sums, float* factor, hipStream_t stream);

}  // namespace lorascope::compute::hip
