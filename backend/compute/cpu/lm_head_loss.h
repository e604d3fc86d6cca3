// cpu/lm_head_loss.h — the fused lm-head + cross-entropy (fp32) over vocabulary chunks: per-token
// losses and the gradient w.r.t. the final hidden states without a (rows, vocab) logits tensor.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compute/Tensor.h"  // defines: DType

namespace lorascope::compute::cpu {

struct LmHeadDims {
  std::int64_t rows = 0;    // tokens
  std::int64_t hidden = 0;  // H
  std::int64_t vocab = 0;   // V
};

// Scratch reused across calls: one (rows, chunk) block of logits, the matmul's widening block,
// and the predicted rows' compact h, targets, losses and dh (Note [predicted rows only]).
struct LmHeadScratch {
  std::vector<float> logits;
  std::vector<float> widened;
  std::vector<float> rows;
  std::vector<std::int32_t> rowTargets;
  std::vector<float> rowLosses;
  std::vector<float> rowGrads;
};

// Columns per vocabulary chunk for `rows` tokens: the logits block stays ≤ kLmHeadChunkFloats.
inline constexpr std::int64_t kLmHeadChunkFloats = std::int64_t{4} << 20;  // 16 MiB of fp32
std::int64_t lmHeadChunkColumns(std::int64_t rows, std::int64_t vocab);

// h (rows, hidden) f32, weight (vocab, hidden) stored as `weightDtype`, targets (rows; −100 =
// ignore) -> losses (rows) f32; dh (rows, hidden) overwritten with the gradient of
// gradScale · Σ losses, or skipped when dh is null. With softcap > 0 the logits are capped,
// l ← softcap·tanh(l / softcap), before the softmax (Backend::lmHeadCrossEntropy). Throws
// ShapeError naming the row and target when a target is outside [0, vocab) and not −100. Only
// the rows whose target is not −100 are computed (Note [predicted rows only]).
void lmHeadCrossEntropy(const float* h, const void* weight, DType weightDtype, LmHeadDims dims,
                        std::span<const std::int32_t> targets, float gradScale, float softcap,
                        float* losses, float* dh, LmHeadScratch& scratch);

}  // namespace lorascope::compute::cpu
