// MemoryEstimate.cpp — LoRA training memory, term by term.
//
// Activations saved for the backward pass, per token and layer, in bf16 (GPU activation dtype):
//   4·H       layer input, its RMSNorm output, the residual after attention, its RMSNorm output
//   2·q + 2·kv  q and the attention output (heads·hd each), k and v (kv·hd each)
//   3·I       gate, up and silu(gate)⊙up
//   7·r       the LoRA intermediates x·Aᵀ of the seven adapted projections
//   + 4 bytes per head for the attention log-sum-exp (f32)
// Not counted: transient workspaces of single ops (they are freed before the next op) and the
// allocator's rounding; the estimate is a floor, and auto batch sizing keeps headroom above it.
#include "model/MemoryEstimate.h"

namespace lorascope::model {

namespace {
constexpr std::uint64_t kActivationBytes = 2;  // bf16
constexpr std::uint64_t kFp32Bytes = 4;
}  // namespace

MemoryEstimate estimateLoraTrainingMemory(const ModelConfig& c, std::uint64_t weightsBytes,
                                          const LoraTrainingPlan& plan) {
  MemoryEstimate e;
  e.weightsBytes = weightsBytes;
  const std::int64_t qDim = c.numHeads * c.headDim;
  const std::int64_t kvDim = c.numKvHeads * c.headDim;
  const std::int64_t h = c.hiddenSize;
  const std::int64_t inter = c.intermediateSize;
  // (in + out) of q, k, v, o, gate, up, down
  const std::int64_t inPlusOut =
      (h + qDim) + 2 * (h + kvDim) + (qDim + h) + 2 * (h + inter) + (inter + h);
  e.loraParameters = plan.rank * inPlusOut * c.numLayers;
  const auto loraParams = static_cast<std::uint64_t>(e.loraParameters);
  e.loraBytes = loraParams * kFp32Bytes;
  e.loraGradBytes = loraParams * kFp32Bytes;
  e.optimizerBytes = 2 * loraParams * kFp32Bytes;

  const auto tokens = static_cast<std::uint64_t>(plan.batch * plan.seq);
  const auto perTokenLayerElements =
      static_cast<std::uint64_t>(4 * h + 2 * qDim + 2 * kvDim + 3 * inter + 7 * plan.rank);
  const auto perTokenLayerBytes = perTokenLayerElements * kActivationBytes +
                                  static_cast<std::uint64_t>(c.numHeads) * kFp32Bytes;
  e.activationBytes = tokens * static_cast<std::uint64_t>(c.numLayers) * perTokenLayerBytes +
                      tokens * static_cast<std::uint64_t>(h) * kActivationBytes;  // final norm
  e.logitsBytes = tokens * static_cast<std::uint64_t>(c.vocabSize) * kFp32Bytes;
  e.totalBytes = e.weightsBytes + e.loraBytes + e.loraGradBytes + e.optimizerBytes +
                 e.activationBytes + e.logitsBytes;
  return e;
}

}  // namespace lorascope::model
