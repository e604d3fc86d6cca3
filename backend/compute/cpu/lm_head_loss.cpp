// cpu/lm_head_loss.cpp — fused lm-head + cross-entropy in one pass over vocabulary chunks, with
// two GEMMs per chunk (the minimum: the logits, and their gradient back to h).
//
// Per chunk c: logits_c = h·W_cᵀ (one sgemm). Each row keeps a running max m and a running sum
// Σ exp(l − m) (in double); the chunk's logits are replaced in place by exp(l − m) (0 on ignored
// rows) and accumulated into dh += exp(logits_c − m)·W_c (the second sgemm). When a later chunk
// raises a row's max, that row's sum and dh are first multiplied by exp(m_old − m_new), the
// online softmax of flash attention. At the end dh_r = dh_r·gradScale/Σ_r − gradScale·W[t_r],
// i.e. Σ_v (softmax_v − onehot_v)·gradScale·W_v without a second pass over the vocabulary and
// with memory bounded by kLmHeadChunkFloats whatever its size. Soft-capped logits (Gemma 2),
// l = c·tanh(raw / c), enter the softmax capped and their weights in the dh product carry
// ∂l/∂raw = 1 − (l / c)², the target's weight too. Rows are independent: the row
// loops run in parallel (cpu/parallel.h), the GEMMs split into tiles.
//
// Note [predicted rows only]: a row whose target is ignored (−100: a prompt token under "train on
// responses", padding, a sequence's or packed document's last token) has loss 0 and gradient 0,
// whatever its logits. Training on alpaca-style records leaves half or more of the rows so, and
// the lm-head is the model's widest product (Qwen2.5-0.5B: a 151,936 × 896 weight, a fifth of the
// CPU step), so only the predicted rows enter the GEMMs: they are gathered into a compact block,
// and their losses and gradient rows scattered back. Each row's result does not depend on the
// rows beside it, so the compact product gives the rows the full one would.
#include "compute/cpu/lm_head_loss.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "compute/Backend.h"  // defines: kIgnoreTarget
#include "compute/Convert.h"  // defines: widenToFloat
#include "compute/Errors.h"
#include "compute/cpu/matmul.h"    // defines: cpu::matmul
#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges
#include "compute/cpu/simd.h"      // defines: simd (max, exp, sums)

namespace lorascope::compute::cpu {
namespace {

constexpr std::int64_t kRowsPerRange = 8;  // rows per parallel item of the softmax loops

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

// lmHeadCrossEntropy over rows that may include ignored ones (their losses and dh rows 0).
void everyRow(const float* h, const void* weight, DType weightDtype, LmHeadDims dims,
              std::span<const std::int32_t> targets, float gradScale, float softcap, float* losses,
              float* dh, LmHeadScratch& scratch) {
  // Plain copies, not structured bindings: the lambdas below capture them (clang 15 cannot).
  const std::int64_t rows = dims.rows, hidden = dims.hidden, vocab = dims.vocab;
  if (rows == 0) {
    return;
  }
  const std::int64_t chunk = lmHeadChunkColumns(rows, vocab);
  scratch.logits.resize(static_cast<std::size_t>(rows * chunk));
  const auto n = static_cast<std::size_t>(rows);
  std::vector<double> runningMax(n, -INFINITY);
  std::vector<double> runningSum(n, 0.0);
  std::vector<double> targetLogit(n, 0.0);
  if (dh != nullptr) {
    std::fill(dh, dh + rows * hidden, 0.0f);
  }
  const auto* bytes = static_cast<const unsigned char*>(weight);
  const std::size_t weightRowBytes = static_cast<std::size_t>(hidden) * dtypeBytes(weightDtype);

  for (std::int64_t c0 = 0; c0 < vocab; c0 += chunk) {
    const std::int64_t columns = std::min(chunk, vocab - c0);
    const void* w = bytes + static_cast<std::size_t>(c0) * weightRowBytes;
    // logits (rows, columns) = h · W[c0 : c0+columns]ᵀ
    matmul(h, false, w, weightDtype, true, scratch.logits.data(), {rows, columns, hidden}, 1.0f,
           0.0f, scratch.widened);
    const SimdKernels& k = simd();
    parallelRanges(rows, kRowsPerRange, [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        float* row = scratch.logits.data() + r * columns;
        if (softcap > 0.0f) {
          for (std::int64_t x = 0; x < columns; ++x) {
            row[x] = softcap * std::tanh(row[x] / softcap);
          }
        }
        const float chunkMax = k.maxOf(row, columns);
        if (chunkMax > runningMax[ri]) {
          const double rescale = std::exp(runningMax[ri] - chunkMax);
          runningSum[ri] *= rescale;
          runningMax[ri] = chunkMax;
          if (dh != nullptr) {
            for (std::int64_t x = 0; x < hidden; ++x) {
              dh[r * hidden + x] *= static_cast<float>(rescale);
            }
          }
        }
        const std::int32_t t = targets[ri];
        if (t != kIgnoreTarget && t >= c0 && t < c0 + columns) {
          targetLogit[ri] = row[t - c0];
        }
        const auto shift = static_cast<float>(runningMax[ri]);  // a logit: exact in float
        if (softcap > 0.0f && dh != nullptr && t != kIgnoreTarget) {
          // exp(l − m)·(1 − (l/c)²): the capped logit's weight, its sum kept apart (Σ exp only).
          double sum = 0.0;
          for (std::int64_t x = 0; x < columns; ++x) {
            const float l = row[x];
            const float e = std::exp(l - shift);
            sum += e;
            row[x] = e * (1.0f - (l / softcap) * (l / softcap));
          }
          runningSum[ri] += sum;
        } else {
          k.expArray(row, row, columns, 1.0f, shift);
          runningSum[ri] += k.sumAsDouble(row, columns);
        }
        if (t == kIgnoreTarget) {
          std::fill(row, row + columns, 0.0f);
        }
      }
    });
    if (dh != nullptr) {
      // dh (rows, hidden) += exp(logits − m) (rows, columns) · W[c0 : c0+columns] (columns, hidden)
      matmul(scratch.logits.data(), false, w, weightDtype, false, dh, {rows, hidden, columns}, 1.0f,
             1.0f, scratch.widened);
    }
  }
  parallelRanges(rows, kRowsPerRange, [&](std::int64_t first, std::int64_t last) {
    std::vector<float> targetRow(dh != nullptr ? static_cast<std::size_t>(hidden) : 0);
    for (std::int64_t r = first; r < last; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const std::int32_t t = targets[ri];
      const double lse = runningMax[ri] + std::log(runningSum[ri]);
      losses[r] = t == kIgnoreTarget ? 0.0f : static_cast<float>(lse - targetLogit[ri]);
      if (dh == nullptr || t == kIgnoreTarget) {
        continue;  // an ignored row's dh stayed 0
      }
      widenToFloat(weight, weightDtype, t * hidden, hidden, targetRow.data());
      const auto softmaxScale = static_cast<float>(gradScale / runningSum[ri]);
      const double capped = softcap > 0.0f ? targetLogit[ri] / softcap : 0.0;
      const auto targetScale = static_cast<float>(gradScale * (1.0 - capped * capped));
      float* dhRow = dh + r * hidden;
      for (std::int64_t x = 0; x < hidden; ++x) {
        dhRow[x] = dhRow[x] * softmaxScale - targetScale * targetRow[static_cast<std::size_t>(x)];
      }
    }
  });
}

}  // namespace

std::int64_t lmHeadChunkColumns(std::int64_t rows, std::int64_t vocab) {
  return std::clamp<std::int64_t>(kLmHeadChunkFloats / std::max<std::int64_t>(rows, 1), 1, vocab);
}

void lmHeadCrossEntropy(const float* h, const void* weight, DType weightDtype, LmHeadDims dims,
                        std::span<const std::int32_t> targets, float gradScale, float softcap,
                        float* losses, float* dh, LmHeadScratch& scratch) {
  const OpTimer timer(CpuOp::LmHeadLoss);
  checkTargets(targets, dims.vocab);
  const auto predicted = static_cast<std::int64_t>(std::count_if(
      targets.begin(), targets.end(), [](std::int32_t t) { return t != kIgnoreTarget; }));
  if (predicted == dims.rows) {
    everyRow(h, weight, weightDtype, dims, targets, gradScale, softcap, losses, dh, scratch);
    return;
  }
  // Note [predicted rows only]: gather, compute, scatter.
  const std::int64_t hidden = dims.hidden;
  const auto rowFloats = static_cast<std::size_t>(predicted * hidden);
  scratch.rows.resize(rowFloats);
  scratch.rowTargets.resize(static_cast<std::size_t>(predicted));
  scratch.rowLosses.resize(static_cast<std::size_t>(predicted));
  scratch.rowGrads.resize(dh != nullptr ? rowFloats : 0);
  std::int64_t next = 0;
  for (std::int64_t r = 0; r < dims.rows; ++r) {
    if (targets[static_cast<std::size_t>(r)] != kIgnoreTarget) {
      std::copy_n(h + r * hidden, hidden, scratch.rows.data() + next * hidden);
      scratch.rowTargets[static_cast<std::size_t>(next++)] = targets[static_cast<std::size_t>(r)];
    }
  }
  everyRow(scratch.rows.data(), weight, weightDtype, {predicted, hidden, dims.vocab},
           scratch.rowTargets, gradScale, softcap, scratch.rowLosses.data(),
           dh != nullptr ? scratch.rowGrads.data() : nullptr, scratch);
  std::fill(losses, losses + dims.rows, 0.0f);
  if (dh != nullptr) {
    std::fill(dh, dh + dims.rows * hidden, 0.0f);
  }
  next = 0;
  for (std::int64_t r = 0; r < dims.rows; ++r) {
    if (targets[static_cast<std::size_t>(r)] != kIgnoreTarget) {
      losses[r] = scratch.rowLosses[static_cast<std::size_t>(next)];
      if (dh != nullptr) {
        std::copy_n(scratch.rowGrads.data() + next * hidden, hidden, dh + r * hidden);
      }
      ++next;
    }
  }
}

}  // namespace lorascope::compute::cpu
