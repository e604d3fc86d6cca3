// Forward.h — the forward pass of the Llama/Qwen2/Mistral graph on any Backend, giving logits and
// the shifted next-token cross-entropy loss as transformers computes it (labels −100 ignored).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "compute/Backend.h"
#include "model/ModelConfig.h"
#include "model/ModelFolder.h"

namespace lorascope::model {

struct ForwardInput {
  std::int64_t batch = 1;
  std::int64_t seq = 0;
  std::span<const std::int32_t> ids;     // (batch, seq) row-major
  std::span<const std::int32_t> labels;  // (batch, seq) or empty for no loss; −100 = ignore
};

struct ForwardResult {
  compute::Tensor logits;      // (batch·seq, vocab), activation dtype, on the backend
  std::optional<double> loss;  // mean over predicted tokens; absent with no labels or none valid
  std::int64_t predictedTokens = 0;  // label positions t+1 that were not −100
};

// Runs the whole model. Weights must live where the backend computes (the CPU backend reads the
// mapped weights directly). Throws ModelError / compute::ShapeError naming the bad input (an id
// outside the vocabulary, mismatched lengths), UnsupportedModelError when seq exceeds a sliding
// attention window.
ForwardResult forward(compute::Backend& backend, const ModelConfig& config,
                      const ModelWeights& weights, const ForwardInput& input);

}  // namespace lorascope::model
