// ModelConfig.h — the parts of a Hugging Face config.json that the Llama/Qwen2/Mistral graph
// needs, read from either config form in the wild: transformers ≤4.x (top-level rope_theta +
// rope_scaling) and transformers 5 (rope_parameters).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lorascope::model {

enum class Family { Llama, Qwen2, Mistral };
const char* familyName(Family family);  // the config's model_type: "llama", "qwen2", "mistral"

enum class RopeScalingType { None, Linear, Llama3 };

struct RopeConfig {
  double theta = 10000.0;
  RopeScalingType scaling = RopeScalingType::None;
  double factor = 1.0;                             // linear and llama3
  double lowFreqFactor = 1.0;                      // llama3
  double highFreqFactor = 4.0;                     // llama3
  std::int64_t originalMaxPositionEmbeddings = 0;  // llama3
};

struct ModelConfig {
  Family family = Family::Llama;
  std::string modelType;  // as written in the file
  std::int64_t vocabSize = 0;
  std::int64_t hiddenSize = 0;        // H
  std::int64_t intermediateSize = 0;  // I (MLP)
  std::int64_t numLayers = 0;
  std::int64_t numHeads = 0;
  std::int64_t numKvHeads = 0;  // GQA; equals numHeads when absent
  std::int64_t headDim = 0;     // explicit head_dim or hiddenSize / numHeads
  double rmsNormEps = 1e-6;
  RopeConfig rope;
  bool tieWordEmbeddings = false;
  bool qkvBias = false;                    // Qwen2 always; Llama with attention_bias
  bool oBias = false;                      // Llama with attention_bias
  bool mlpBias = false;                    // Llama with mlp_bias
  std::int64_t maxPositionEmbeddings = 0;  // 0 when absent
  std::int64_t slidingWindow = 0;          // tokens; 0 = full causal attention
  std::string storedDtype;  // "bfloat16", ... from dtype / torch_dtype ("" if absent)
};

// Parses a config.json document. `file` names it in errors. Throws ModelError naming the field
// when a required one is missing or ill-typed, UnsupportedModelError for other model types,
// activations or rope scaling types.
ModelConfig parseModelConfig(const nlohmann::json& doc, const std::string& file);
ModelConfig parseModelConfigText(std::string_view text, const std::string& file);
ModelConfig loadModelConfig(const std::string& path);

// Rotary inverse frequencies (headDim/2), scaling folded in as transformers computes them.
std::vector<float> ropeInverseFrequencies(const ModelConfig& config);

}  // namespace lorascope::model
