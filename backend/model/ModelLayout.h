// ModelLayout.h — the tensors a Llama/Qwen2/Mistral checkpoint must hold, with the shapes its
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
