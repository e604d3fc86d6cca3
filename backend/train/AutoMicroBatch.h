// train/AutoMicroBatch.h — `--batch-size auto`: this trainer's memory model for the micro-batch
// planner (memory/MicroBatchPlanner.h).
//
// model/MemoryEstimate.h answers "how much does LoRA training of this model need" in general (it
// counts a full fp32 logits tensor, as most trainers hold one). This trainer never holds one: the
// fused lm-head loss works in vocabulary chunks. So the planned peak here is
//   fixed     = weights as held on the training device + LoRA A/B, grads, AdamW moments (fp32)
//   per token = saved activations (every layer, or with activation checkpointing only each
//               layer's input plus one layer recomputed) in the device's activation dtype
//               + the loss's chunk scratch (one fp32 logits row of `lossChunkColumns`)
#pragma once

#include <cstdint>

#include "memory/MicroBatchPlanner.h"
#include "model/ModelConfig.h"

namespace lorascope::train {

struct TrainerMemoryShape {
  std::uint64_t weightsBytes = 0;          // frozen weights as the training device holds them
  std::int64_t loraRank = 8;               // on all seven projections of every layer
  std::uint64_t activationDTypeBytes = 2;  // 2 (bf16, GPU) or 4 (f32, CPU)
  bool activationCheckpointing = false;
  std::int64_t lossChunkColumns = 8192;  // vocabulary columns of the loss's scratch per token
};

memory::MemoryModel trainerMemoryModel(const model::ModelConfig& config,
                                       const TrainerMemoryShape& shape);

}  // namespace lorascope::train
