// MemoryEstimate.h — how much memory LoRA training of a model needs at a given batch × seq and
// rank: the basis of automatic batch sizing. Each term is reported apart, in bytes.
#pragma once

#include <cstdint>

#include "model/ModelConfig.h"

namespace lorascope::model {

struct LoraTrainingPlan {
  std::int64_t batch = 1;
  std::int64_t seq = 512;  // tokens per sequence
  std::int64_t rank = 16;  // LoRA rank r, on all seven projections of every layer
};

struct MemoryEstimate {
  std::uint64_t weightsBytes = 0;     // frozen weights as stored (bf16/f16/f32)
  std::int64_t loraParameters = 0;    // Σ r·(in + out) over q,k,v,o,gate,up,down of every layer
  std::uint64_t loraBytes = 0;        // LoRA A and B, fp32
  std::uint64_t loraGradBytes = 0;    // their gradients, fp32
  std::uint64_t optimizerBytes = 0;   // AdamW first and second moments, fp32
  std::uint64_t activationBytes = 0;  // saved for the backward pass, bf16 (see MemoryEstimate.cpp)
  std::uint64_t logitsBytes = 0;      // fp32 logits of every position (the loss and its gradient)
  std::uint64_t totalBytes = 0;       // the sum of the above
};

// `weightsBytes` is what the model folder stores (ModelFolder::weightBytes()).
MemoryEstimate estimateLoraTrainingMemory(const ModelConfig& config, std::uint64_t weightsBytes,
                                          const LoraTrainingPlan& plan);

}  // namespace lorascope::model
