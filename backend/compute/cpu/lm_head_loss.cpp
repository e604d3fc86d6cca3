// cpu/lm_head_loss.cpp — fused lm-head + cross-entropy in two passes over vocabulary chunks.
//
// Pass 1 computes each chunk's logits (one sgemm) and folds them into a running max-shifted
// log-sum-exp per row, in double; it also picks out the target's logit. Pass 2 recomputes each
// chunk's logits, turns them into (softmax − onehot)·gradScale in place and accumulates
// dh += dlogits_c · W_c. The logits are thus computed twice (3 lm-head GEMMs instead of 2) in
// exchange for memory bounded by kLmHeadChunkFloats whatever the vocabulary.
#include "compute/cpu/lm_head_loss.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "compute/Backend.h"  // defines: kIgnoreTarget
#include "compute/Errors.h"
#include "compute/cpu/matmul.h"  // defines: cpu::matmul

namespace lorascope::compute::cpu {
namespace {

void checkTargets(std::span<const std::int32_t> targets, std::int64_t vocab) {
  for (std::size_t r = 0; r < targets.size(); ++r) {
    const std::int32_t t = targets[r];
    if (t != kIgnoreTarget && (t < 0 || t >= vocab)) {
      throw ShapeError("lm_head_cross_entropy: target " + std::to_string(t) + " of row " +
                       std::to_string(r) + " is outside the vocabulary [0, " +
                       std::to_string(vocab) + ") and is not the ignore id -100");
    }
  }
}

// logits (rows, columns) = h · W[c0 : c0+columns]ᵀ
void chunkLogits(const float* h, const void* weight, DType weightDtype, LmHeadDims dims,
                 std::int64_t c0, std::int64_t columns, LmHeadScratch& scratch) {
  const auto* bytes = static_cast<const unsigned char*>(weight);
  const void* rows = bytes + static_cast<std::size_t>(c0 * dims.hidden) * dtypeBytes(weightDtype);
  matmul(h, false, rows, weightDtype, true, scratch.logits.data(),
         {dims.rows, columns, dims.hidden}, 1.0f, 0.0f, scratch.widened);
}

}  // namespace

std::int64_t lmHeadChunkColumns(std::int64_t rows, std::int64_t vocab) {
  return std::clamp<std::int64_t>(kLmHeadChunkFloats / std::max<std::int64_t>(rows, 1), 1, vocab);
}

void lmHeadCrossEntropy(const float* h, const void* weight, DType weightDtype, LmHeadDims dims,
                        std::span<const std::int32_t> targets, float gradScale, float* losses,
                        float* dh, LmHeadScratch& scratch) {
  const auto [rows, hidden, vocab] = dims;
  checkTargets(targets, vocab);
  if (rows == 0) {
    return;
  }
  const std::int64_t chunk = lmHeadChunkColumns(rows, vocab);
  scratch.logits.resize(static_cast<std::size_t>(rows * chunk));
  const auto n = static_cast<std::size_t>(rows);
  std::vector<double> runningMax(n, -INFINITY);
  std::vector<double> runningSum(n, 0.0);
  std::vector<double> targetLogit(n, 0.0);

  for (std::int64_t c0 = 0; c0 < vocab; c0 += chunk) {
    const std::int64_t columns = std::min(chunk, vocab - c0);
    chunkLogits(h, weight, weightDtype, dims, c0, columns, scratch);
    for (std::size_t r = 0; r < n; ++r) {
      const float* row = scratch.logits.data() + r * static_cast<std::size_t>(columns);
      const double chunkMax = *std::max_element(row, row + columns);
      if (chunkMax > runningMax[r]) {
        runningSum[r] *= std::exp(runningMax[r] - chunkMax);
        runningMax[r] = chunkMax;
      }
      for (std::int64_t i = 0; i < columns; ++i) {
        runningSum[r] += std::exp(static_cast<double>(row[i]) - runningMax[r]);
      }
      const std::int32_t t = targets[r];
      if (t != kIgnoreTarget && t >= c0 && t < c0 + columns) {
        targetLogit[r] = row[t - c0];
      }
    }
  }
  std::vector<double> lse(n);
  for (std::size_t r = 0; r < n; ++r) {
    lse[r] = runningMax[r] + std::log(runningSum[r]);
    losses[r] = targets[r] == kIgnoreTarget ? 0.0f : static_cast<float>(lse[r] - targetLogit[r]);
  }
  if (dh == nullptr) {
    return;
  }

  const auto* bytes = static_cast<const unsigned char*>(weight);
  for (std::int64_t c0 = 0; c0 < vocab; c0 += chunk) {
    const std::int64_t columns = std::min(chunk, vocab - c0);
    chunkLogits(h, weight, weightDtype, dims, c0, columns, scratch);
    for (std::size_t r = 0; r < n; ++r) {
      float* row = scratch.logits.data() + r * static_cast<std::size_t>(columns);
      const std::int32_t t = targets[r];
      if (t == kIgnoreTarget) {
        std::fill(row, row + columns, 0.0f);
        continue;
      }
      for (std::int64_t i = 0; i < columns; ++i) {
        row[i] = static_cast<float>(std::exp(static_cast<double>(row[i]) - lse[r]) * gradScale);
      }
      if (t >= c0 && t < c0 + columns) {
        row[t - c0] -= gradScale;
      }
    }
    // dh (rows, hidden) += dlogits (rows, columns) · W[c0 : c0+columns] (columns, hidden)
    const void* w = bytes + static_cast<std::size_t>(c0 * hidden) * dtypeBytes(weightDtype);
    matmul(scratch.logits.data(), false, w, weightDtype, false, dh, {rows, hidden, columns}, 1.0f,
           c0 == 0 ? 0.0f : 1.0f, scratch.widened);
  }
}

}  // namespace lorascope::compute::cpu
