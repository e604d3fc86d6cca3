// ModelLayout.h — the tensors a checkpoint of a supported family must hold, with the shapes its
// config.json implies (Hugging Face names), and the parameter counts that follow from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/Tensor.h"  // defines: Shape
#include "model/ModelConfig.h"

namespace lorascope::model {

struct ExpectedTensor {
  std::string name;  // e.g. "model.layers.0.self_attn.q_proj.weight"
  compute::Shape shape;
};

// Every tensor the graph reads, in graph order; lm_head.weight only when the head is not tied.
std::vector<ExpectedTensor> expectedTensors(const ModelConfig& config);

// What the graph of this config adds to Llama's, in one line for inspect-model, e.g.
// "q/k norms, GeGLU, sandwich norms, embeddings ×√H, sliding window 4096 on 13 of 26 layers,
// attention scores soft-capped at 50, logits soft-capped at 30"; "" for plain Llama.
std::string describeGraphFeatures(const ModelConfig& config);

// A one-line summary of the config values that shapes derive from, for error messages.
std::string describeShapeSource(const ModelConfig& config);

struct ParameterCounts {
  std::int64_t total = 0;      // every distinct parameter (a tied head counted once)
  std::int64_t embedding = 0;  // vocab × hidden
  std::int64_t perLayer = 0;   // one decoder layer
  std::int64_t lmHead = 0;     // 0 when tied
};
ParameterCounts countParameters(const ModelConfig& config);

}  // namespace lorascope::model
