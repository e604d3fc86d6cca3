// hip/HipBackendOpsAttention.cpp — launchers of causal GQA attention (forward/backward) and the
// fused lm-head + cross-entropy. Scratch comes from the backend's allocator and is returned to it
// when the launcher returns; the allocator reuses blocks in stream order, so the kernels queued
// here still own the memory until they have run.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compute/Errors.h"
#include "compute/hip/HipBackend.h"
#include "compute/hip/HipCheck.h"          // defines: LORASCOPE_HIP_CHECK
#include "compute/hip/attention.h"         // defines: attentionForward, attentionBackward
#include "compute/hip/attention_cached.h"  // defines: attentionCached
#include "compute/hip/lm_head_loss.h"      // defines: lmHeadChunk, lmHeadGatherRows, ...
#include "runtime/OpTiming.h"              // defines: OpTimingScope

namespace lorascope::compute::hip {
namespace {

// The kernels hold a row's head dim in registers; larger heads than they are built for are
// rejected here rather than computed wrongly.
AttentionShape attentionShape(const char* op, const Tensor& q, const Tensor& k,
                              const AttentionOptions& options) {
  const AttentionShape shape{q.dim(0), q.dim(1),       q.dim(2),       k.dim(2),
                             q.dim(3), options.window, options.softcap};
  if (shape.headDim < 1 || shape.headDim > kMaxAttentionHeadDim) {
    throw ShapeError(std::string(op) + ": head_dim " + std::to_string(shape.headDim) +
                     " is not supported by the GPU kernels (1 to " +
                     std::to_string(kMaxAttentionHeadDim) + "); run attention on the CPU backend");
  }
  return shape;
}

// The document starts of `options` on the device (checked against q first), or an undefined
// tensor when the rows hold one document each. Uploaded with the launch, as RoPE's positions.
Tensor deviceDocumentStarts(HipBackend& backend, const char* op, const AttentionOptions& options,
                            const Tensor& q) {
  if (options.documentStarts.empty()) {
    return {};
  }
  checkDocumentStarts(op, options.documentStarts, q.dim(0), q.dim(1));
  return uploadIndices(backend, options.documentStarts);
}

// A (rows, cols) tensor over `bytesOffset` bytes into t's storage. It does not own the memory
// (the matmul calls below see only a slice of a weight or a scratch block): valid while t lives.
Tensor sliceView(const Tensor& t, std::size_t bytesOffset, DType dtype, std::int64_t rows,
                 std::int64_t cols) {
  auto* base = static_cast<unsigned char*>(const_cast<void*>(t.data()));
  return Tensor(std::shared_ptr<void>(std::shared_ptr<void>(), base + bytesOffset), dtype,
                {rows, cols}, Device::Gpu);
}

// Zeroes rows first.. of a (rows, cols) tensor: the padding rows of Note [lm-head row buckets].
void zeroRowsFrom(Tensor& t, std::int64_t first, std::int64_t cols, hipStream_t stream) {
  const std::int64_t rows = t.dim(0) - first;
  if (rows > 0) {
    const auto rowBytes = static_cast<std::size_t>(cols) * dtypeBytes(t.dtype());
    LORASCOPE_HIP_CHECK(hipMemsetAsync(
        static_cast<unsigned char*>(t.data()) + static_cast<std::size_t>(first) * rowBytes, 0,
        static_cast<std::size_t>(rows) * rowBytes, stream));
  }
}

}  // namespace

void HipBackend::attentionForward(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOptions& options, Tensor& out, Tensor& logsumexp) {
  checkAttentionArgs(caps_, q, k, v, out, logsumexp);
  AttentionShape shape = attentionShape("attention_forward", q, k, options);
  const Tensor starts = deviceDocumentStarts(*this, "attention_forward", options, q);
  shape.documentStarts = starts.defined() ? starts.as<std::int32_t>() : nullptr;
  hip::attentionForward(q.as<std::uint16_t>(), k.as<std::uint16_t>(), v.as<std::uint16_t>(), shape,
                        options.scale, out.as<std::uint16_t>(), logsumexp.as<float>(), stream_);
}

void HipBackend::attentionCached(const Tensor& q, const Tensor& k, const Tensor& v,
                                 const AttentionOptions& options, Tensor& out) {
  checkAttentionCachedArgs(caps_, q, k, v, out);
  if (q.dim(2) > kMaxCachedAttentionHeadDim) {
    throw ShapeError("attention_cached: head_dim " + std::to_string(q.dim(2)) +
                     " is not supported by the GPU kernel (at most " +
                     std::to_string(kMaxCachedAttentionHeadDim) + "); generate on the CPU");
  }
  hip::attentionCached(q.as<std::uint16_t>(), k.as<std::uint16_t>(), v.as<std::uint16_t>(),
                       q.dim(0), k.dim(0), q.dim(1), k.dim(1), q.dim(2), options.scale,
                       options.window, options.softcap, out.as<std::uint16_t>(), stream_);
}

void HipBackend::attentionBackward(const Tensor& dout, const Tensor& q, const Tensor& k,
                                   const Tensor& v, const Tensor& out, const Tensor& logsumexp,
                                   const AttentionOptions& options, Tensor& dq, Tensor& dk,
                                   Tensor& dv) {
  checkAttentionBackwardArgs(caps_, dout, q, k, v, out, logsumexp, dq, dk, dv);
  AttentionShape shape = attentionShape("attention_backward", q, k, options);
  const Tensor starts = deviceDocumentStarts(*this, "attention_backward", options, q);
  shape.documentStarts = starts.defined() ? starts.as<std::int32_t>() : nullptr;
  const float scale = options.scale;
  // Per-query-head dk/dv partials, summed over each KV group by the last kernel (no atomics).
  const memory::OwnerScope owner(memory::Owner::Workspace);
  Tensor rowDot = empty(DType::F32, logsumexp.shape());
  Tensor dkPartial = empty(DType::F32, q.shape());
  Tensor dvPartial = empty(DType::F32, q.shape());
  hip::attentionBackward(
      dout.as<std::uint16_t>(), q.as<std::uint16_t>(), k.as<std::uint16_t>(), v.as<std::uint16_t>(),
      out.as<std::uint16_t>(), logsumexp.as<float>(), shape, scale,
      {rowDot.as<float>(), dkPartial.as<float>(), dvPartial.as<float>()}, dq.as<std::uint16_t>(),
      dk.as<std::uint16_t>(), dv.as<std::uint16_t>(), stream_);
}

void HipBackend::lmHeadCrossEntropy(const Tensor& h, const Tensor& weight,
                                    std::span<const std::int32_t> targets, float gradScale,
                                    Tensor& losses, Tensor& dh, float logitSoftcap) {
  lmHeadLoss(h, weight, targets, {}, gradScale, nullptr, losses, dh, logitSoftcap);
}

void HipBackend::lmHeadCrossEntropyAt(const Tensor& h, const Tensor& weight,
                                      std::span<const std::int32_t> targets, LmHeadRows passRows,
                                      const Tensor& scalars, Tensor& losses, Tensor& dh,
                                      float logitSoftcap) {
  checkStepScalarsArgs("lm_head_cross_entropy", caps_, scalars);
  checkLmHeadRows("lm_head_cross_entropy", passRows, targets);
  lmHeadLoss(h, weight, targets, passRows, 0.0f,
             &static_cast<const StepScalars*>(scalars.data())->gradScale, losses, dh, logitSoftcap);
}

void HipBackend::lmHeadLoss(const Tensor& h, const Tensor& weight,
                            std::span<const std::int32_t> targets, const LmHeadRows& passRows,
                            float gradScale, const float* gradScaleOnDevice, Tensor& losses,
                            Tensor& dh, float logitSoftcap) {
  constexpr const char* op = "lm_head_cross_entropy";
  checkLmHeadCrossEntropyArgs(caps_, h, weight, targets.size(), losses, dh);
  const bool weightIsBf16 = isBf16Weight(op, weight);
  const std::int64_t rows = h.dim(0);
  const std::int64_t hidden = h.dim(1);
  const std::int64_t vocab = weight.dim(0);
  checkTargetIds(op, targets, vocab);
  if (rows == 0) {
    return;
  }
  // Per-op timing files the chunks' GEMMs under this op ("lm_head_cross_entropy/matmul").
  const runtime::gpu::OpTimingScope timingScope(op);
  const bool withGradient = dh.defined();
  // Note [predicted rows only] (cpu/lm_head_loss.cpp): a row without a target (a masked prompt,
  // padding, a document's last token) needs no logits. The pass runs over the predicted rows
  // alone, gathered into a block, and writes their losses and dh rows back in place; the others
  // are 0. A captured step's shapes are fixed, so there the caller names the rows (passRows: the
  // predicted ones, padded to a count of its step's shape with rows it zeroes as it writes them);
  // without them a capture computes every row.
  const bool given = !passRows.rows.empty();
  std::vector<std::int32_t> chosenTargets;
  std::vector<std::int32_t> chosenRows;
  if (!given && !capturing()) {
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (targets[i] != kIgnoreTarget) {
        chosenTargets.push_back(targets[i]);
        chosenRows.push_back(static_cast<std::int32_t>(i));
      }
    }
  }
  const std::span<const std::int32_t> gatherTargets = given ? passRows.targets : chosenTargets;
  const std::span<const std::int32_t> gatherRows = given ? passRows.rows : chosenRows;
  const bool gathered = (given || !capturing()) && std::cmp_less(gatherRows.size(), rows);
  if (gathered) {
    LORASCOPE_HIP_CHECK(hipMemsetAsync(losses.data(), 0, losses.bytes(), stream_));
    if (withGradient) {
      LORASCOPE_HIP_CHECK(hipMemsetAsync(dh.data(), 0, dh.bytes(), stream_));
    }
    if (gatherRows.empty()) {
      return;
    }
  }
  const std::int64_t passCount = gathered ? static_cast<std::int64_t>(gatherRows.size()) : rows;
  // Note [lm-head row buckets]: the GEMMs run over gemmRows ≥ passCount, the extra rows zero
  // (given rows already have a count that recurs).
  std::int64_t gemmRows = passCount;
  if (gathered && !given) {
    gemmRows =
        std::min(rows, (passCount + kLmHeadRowBucket - 1) / kLmHeadRowBucket * kLmHeadRowBucket);
  }
  const Tensor deviceTargets = uploadIndices(*this, gathered ? gatherTargets : targets);
  const Tensor deviceRows = gathered ? uploadIndices(*this, gatherRows) : Tensor();
  const auto* targetIds = deviceTargets.as<std::int32_t>();
  const auto* outRows = gathered ? deviceRows.as<std::int32_t>() : nullptr;
  const memory::OwnerScope owner(memory::Owner::Workspace);
  Tensor passInput = gathered ? empty(h.dtype(), {gemmRows, hidden}) : Tensor();
  if (gathered) {
    lmHeadGatherRows(h.as<std::uint16_t>(), outRows, passCount, hidden,
                     passInput.as<std::uint16_t>(), stream_);
    zeroRowsFrom(passInput, passCount, hidden, stream_);
  }
  const Tensor& input = gathered ? passInput : h;
  const std::int64_t chunk = lmHeadChunkColumns(gemmRows, vocab);
  Tensor stateRows = empty(DType::F32, {4, passCount});
  float* stateData = stateRows.as<float>();
  const LmHeadRowState state{stateData, stateData + passCount, stateData + 2 * passCount,
                             stateData + 3 * passCount};
  // Scratch: ≤ kLmHeadChunkFloats f32 logits, half as many bytes of bf16 weights, and the f32
  // (rows, hidden) gradient accumulator.
  Tensor logits = empty(DType::F32, {gemmRows, chunk});
  Tensor weights = withGradient ? empty(DType::BF16, {gemmRows, chunk}) : Tensor();
  Tensor dhSum = withGradient ? empty(DType::F32, {gemmRows, hidden}) : Tensor();
  const std::size_t weightRowBytes = static_cast<std::size_t>(hidden) * dtypeBytes(weight.dtype());

  for (std::int64_t c0 = 0; c0 < vocab; c0 += chunk) {
    const std::int64_t columns = std::min(chunk, vocab - c0);
    const Tensor weightChunk = sliceView(weight, static_cast<std::size_t>(c0) * weightRowBytes,
                                         weight.dtype(), columns, hidden);
    Tensor chunkLogits = sliceView(logits, 0, DType::F32, gemmRows, columns);
    matmul(input, false, weightChunk, true, chunkLogits, 1.0f, 0.0f);  // h · W_cᵀ
    Tensor chunkWeights =
        withGradient ? sliceView(weights, 0, DType::BF16, gemmRows, columns) : Tensor();
    lmHeadChunk(logits.as<float>(), passCount, columns, c0, c0 == 0, targetIds, kIgnoreTarget,
                logitSoftcap, state, withGradient ? chunkWeights.as<std::uint16_t>() : nullptr,
                stream_);
    if (withGradient) {
      zeroRowsFrom(chunkWeights, passCount, columns, stream_);
      if (c0 > 0) {
        lmHeadRescaleRows(dhSum.as<float>(), passCount, hidden, state, stream_);
      }
      matmul(chunkWeights, false, weightChunk, false, dhSum, 1.0f, c0 == 0 ? 0.0f : 1.0f);
    }
  }
  lmHeadLosses(state, passCount, targetIds, kIgnoreTarget, outRows, losses.as<float>(), stream_);
  if (withGradient) {
    lmHeadFinishGradient(dhSum.as<float>(), passCount, hidden, weight.data(), weightIsBf16,
                         targetIds, kIgnoreTarget, logitSoftcap, state, gradScale,
                         gradScaleOnDevice, outRows, dh.as<std::uint16_t>(), stream_);
  }
}

}  // namespace lorascope::compute::hip
