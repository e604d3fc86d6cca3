// ReferenceShapes.h — the configs of real models whose shapes the benchmarks and the memory
// planner's tests use, so that every program means the same shape by the same name. Only the
// config.json values of the graph (no weights): a caller fills the model with random values.
#pragma once

#include <optional>
#include <string_view>

#include "model/ModelConfig.h"

namespace lorascope::model {

// Qwen2.5-0.5B: hidden 896, 24 layers, 14 heads, 2 KV heads, head_dim 64, intermediate 4864,
// vocab 151936, tied, q/k/v biases, rope_theta 1e6.
ModelConfig qwen25HalfBShape();
// Llama-3.2-1B: hidden 2048, 16 layers, 32 heads, 8 KV heads, head_dim 64, intermediate 8192,
// vocab 128256, tied, rope_theta 5e5 with llama3 scaling (factor 32, original context 8192).
ModelConfig llama32OneBShape();
// By name: "qwen2.5-0.5b" or "llama-3.2-1b"; nullopt for any other.
std::optional<ModelConfig> referenceShape(std::string_view name);

}  // namespace lorascope::model
