// ModelConfig.h — the parts of a Hugging Face config.json that the decoder graph needs (Llama,
// Qwen2, Qwen3, Mistral, Gemma 2, Gemma 3), read from either config form in the wild:
// transformers ≤4.x (top-level rope_theta + rope_scaling, Gemma 3's rope_local_base_freq) and
// transformers 5 (rope_parameters, per layer type for Gemma 3).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lorascope::model {

enum class Family { Llama, Qwen2, Qwen3, Mistral, Gemma2, Gemma3 };
// The config's model_type: "llama", "qwen2", "qwen3", "mistral", "gemma2", "gemma3_text".
const char* familyName(Family family);
// The families this build runs, for messages: "llama, qwen2, qwen3, mistral, gemma2, gemma3_text".
std::string supportedFamilies();

// The MLP's gate activation: SwiGLU (silu) or Gemma's GeGLU (gelu_pytorch_tanh).
enum class MlpActivation { Silu, GeluTanh };

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
  // Sliding-window attention: query i sees keys j with i − window < j ≤ i on the layers marked
  // sliding (transformers' layer_types, or the family's pattern); 0 = full causal attention.
  std::int64_t slidingWindow = 0;
  // (numLayers) from the parser; a config built in code may leave it empty: every layer slides.
  std::vector<bool> slidingLayers;
  std::string storedDtype;  // "bfloat16", ... from dtype / torch_dtype ("" if absent)

  // --- Qwen3 and Gemma ------------------------------------------------------------------------
  bool qkNorm = false;  // RMSNorm over head_dim of each q and k head before RoPE (q_norm, k_norm)
  // Gemma's RMSNorm scales by (1 + weight); the loader stores 1 + weight (f32), so the graph's
  // RMSNorm is the same op for every family.
  bool normWeightPlusOne = false;
  // Gemma's "sandwich" norms: post_attention_layernorm normalises the attention output before
  // the residual add, pre_feedforward_layernorm is the MLP's input norm and
  // post_feedforward_layernorm normalises the MLP output before its residual add. Otherwise
  // post_attention_layernorm is the MLP's input norm (Llama).
  bool sandwichNorms = false;
  MlpActivation mlpActivation = MlpActivation::Silu;
  double embeddingScale = 1.0;          // Gemma: √hidden_size, times the embedding rows
  double attentionScale = 0.0;          // query_pre_attn_scalar^−½ (Gemma); 0: head_dim^−½
  double attentionLogitSoftcap = 0.0;   // scores ← cap·tanh(scores / cap) (Gemma 2); 0 = off
  double finalLogitSoftcap = 0.0;       // logits ← cap·tanh(logits / cap) (Gemma 2); 0 = off
  std::optional<RopeConfig> localRope;  // Gemma 3: the sliding layers' RoPE (else `rope`)

  bool isSlidingLayer(std::int64_t layer) const {
    return slidingWindow > 0 &&
           (slidingLayers.empty() || slidingLayers.at(static_cast<std::size_t>(layer)));
  }
  double scoreScale() const {
    return attentionScale > 0.0 ? attentionScale : 1.0 / std::sqrt(static_cast<double>(headDim));
  }
  const RopeConfig& ropeOfLayer(std::int64_t layer) const {
    return localRope && isSlidingLayer(layer) ? *localRope : rope;
  }
};

// Parses a config.json document. `file` names it in errors. Throws ModelError naming the field
// when a required one is missing or ill-typed, UnsupportedModelError for other model types,
// activations or rope scaling types.
ModelConfig parseModelConfig(const nlohmann::json& doc, const std::string& file);
ModelConfig parseModelConfigText(std::string_view text, const std::string& file);
ModelConfig loadModelConfig(const std::string& path);

// Rotary inverse frequencies (headDim/2), scaling folded in as transformers computes them.
std::vector<float> ropeInverseFrequencies(const ModelConfig& config);
std::vector<float> ropeInverseFrequencies(const RopeConfig& rope, std::int64_t headDim);

}  // namespace lorascope::model
