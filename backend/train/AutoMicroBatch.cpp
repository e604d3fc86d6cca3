// train/AutoMicroBatch.cpp — the terms of the planned peak, from model/MemoryEstimate's counts.
#include "train/AutoMicroBatch.h"

#include <algorithm>

#include "model/MemoryEstimate.h"

namespace lorascope::train {

memory::MemoryModel trainerMemoryModel(const model::ModelConfig& config,
                                       const TrainerMemoryShape& shape) {
  // One token of one sequence: the estimate's per-token terms, in bf16.
  const model::MemoryEstimate perToken = model::estimateLoraTrainingMemory(
      config, shape.weightsBytes, {.batch = 1, .seq = 1, .rank = shape.loraRank});
  const std::uint64_t layers =
      static_cast<std::uint64_t>(std::max<std::int64_t>(config.numLayers, 1));
  const std::uint64_t hidden = static_cast<std::uint64_t>(config.hiddenSize);
  const std::uint64_t finalNormBf16 = hidden * 2;
  const std::uint64_t perLayerBf16 = (perToken.activationBytes - finalNormBf16) / layers;
  // MemoryEstimate counts activations in bf16; the CPU keeps them in f32. (The per-head f32
  // log-sum-exp is scaled too: a few bytes per token, on the safe side.)
  const auto scaled = [&](std::uint64_t bf16Bytes) {
    return bf16Bytes / 2 * shape.activationDTypeBytes;
  };
  std::uint64_t activations = 0;
  if (shape.activationCheckpointing) {
    // Each layer's input is kept; one layer is recomputed in full just before its backward.
    activations = layers * hidden * shape.activationDTypeBytes + scaled(perLayerBf16);
  } else {
    activations = layers * scaled(perLayerBf16);
  }
  activations += scaled(finalNormBf16);
  const std::uint64_t lossScratch =
      static_cast<std::uint64_t>(std::max<std::int64_t>(shape.lossChunkColumns, 0)) * 4;

  memory::MemoryModel model;
  model.fixedBytes =
      shape.weightsBytes + perToken.loraBytes + perToken.loraGradBytes + perToken.optimizerBytes;
  model.activationBytesPerToken = activations + lossScratch;
  return model;
}

}  // namespace lorascope::train
