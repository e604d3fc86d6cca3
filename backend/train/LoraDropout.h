// train/LoraDropout.h — the LoRA dropout mask, a pure function of where it is used.
//
// The mask of projection `module` in `layer`, for micro-batch `microBatch` of optimizer step
// `step`, is drawn from Philox stream dropoutStream(step, microBatch, layer, module) of the run's
// seed. Nothing is stored: the backward pass (and the recomputation of a checkpointed layer)
// regenerates the same mask, and a resumed run draws what the uninterrupted run drew.
#pragma once

#include <cstdint>
#include <vector>

#include "train/Lora.h"  // defines: LoraModule

namespace lorascope::train {

// Identifies the forward pass a mask belongs to.
struct DropoutKey {
  std::uint64_t seed = 0;
  std::int64_t step = 0;        // optimizer step, 0-based
  std::int64_t microBatch = 0;  // index within the step
};

// Stream layout (bit 63 set, so it never meets the small LoRA-init streams layer·16 + module):
//   bits 62..32 step, 31..20 micro-batch, 19..4 layer, 3..0 module.
std::uint64_t dropoutStream(const DropoutKey& key, int layer, LoraModule module);
// Its two halves: the high 32 bits (the tag and the step) and the low 32 (micro-batch, layer,
// module). Graph mode keeps the high half in device memory (compute/StepScalars.h).
std::uint32_t dropoutStreamHigh(std::int64_t step);
std::uint32_t dropoutStreamLow(const DropoutKey& key, int layer, LoraModule module);

// Inverted dropout mask of `count` elements: 0 with probability p, else 1/(1 − p), element i
// being uniformFloat(seed, dropoutStream(...), i) < p. On the host; a backend makes the same mask
// in its own memory with Backend::dropoutMask(mask, key.seed, dropoutStream(...), p).
std::vector<float> dropoutMask(const DropoutKey& key, int layer, LoraModule module, double p,
                               std::int64_t count);

}  // namespace lorascope::train
