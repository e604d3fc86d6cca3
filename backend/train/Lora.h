// train/Lora.h — LoRA adapters: which projections get one, their shapes, scaling and PEFT-style
// initialisation. A and B (and later their AdamW moments) are fp32 host arrays.
//
// For a frozen projection W (out, in): y = x·Wᵀ + scale · dropout(x)·Aᵀ·Bᵀ,
//   A (r, in) Kaiming-uniform with a = √5, i.e. uniform(−1/√in, 1/√in), as PEFT initialises it;
//   B (out, r) zero, so a fresh adapter leaves the model unchanged;
//   scale = alpha / r, or alpha / √r with rsLoRA.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/Projections.h"

namespace lorascope::train {

// The seven projections of a Llama/Qwen2 decoder layer: the model's Projection, named in
// model/Projections.h.
using LoraModule = model::Projection;
inline constexpr const auto& kAllLoraModules = model::kAllProjections;

const char* shortName(LoraModule module);   // "q", ..., "down" (the CLI's --targets)
const char* moduleName(LoraModule module);  // "q_proj", ..., "down_proj" (PEFT target_modules)
const char* modulePath(LoraModule module);  // "self_attn.q_proj", ..., "mlp.down_proj"
// Accepts "q", "q_proj", "self_attn.q_proj"; throws std::invalid_argument naming the word.
LoraModule parseLoraModule(const std::string& word);
// "q,k,v,o" → set; "all" or "" → all seven.
std::set<LoraModule> parseLoraTargets(const std::string& list);

inline constexpr int kMaxLoraRank = 4096;  // LoraConfig::validate's bound

struct LoraConfig {
  int rank = 8;
  double alpha = 16.0;
  double dropout = 0.0;
  bool useRslora = false;
  std::set<LoraModule> targets{std::begin(kAllLoraModules), std::end(kAllLoraModules)};
  std::optional<std::set<int>> layers;  // only these decoder layers; all when unset

  double scale() const;
  // Throws std::invalid_argument naming the field when a value is out of range.
  void validate() const;
};

// The shape of one adapted projection.
struct LoraSite {
  int layer = 0;
  LoraModule module = LoraModule::Q;
  std::int64_t inFeatures = 0;
  std::int64_t outFeatures = 0;
};

struct LoraWeights {
  LoraSite site;
  std::vector<float> a;  // (r, in)
  std::vector<float> b;  // (out, r)
};

struct LoraAdapter {
  LoraConfig config;
  std::vector<LoraWeights> weights;  // in layer order, modules in kAllLoraModules order

  std::int64_t parameterCount() const;
  const LoraWeights* find(int layer, LoraModule module) const;
};

// Adapters for every site the config selects, A drawn from Philox stream (layer·16 + module) of
// `seed`, so each A depends only on the seed and where it sits.
LoraAdapter createLoraAdapter(const LoraConfig& config, const std::vector<LoraSite>& sites,
                              std::uint64_t seed);

// PEFT's state-dict key, e.g. "base_model.model.model.layers.3.mlp.up_proj.lora_B.weight".
std::string peftKey(const LoraSite& site, bool isA);
// Throws std::invalid_argument naming the first tensor (its PEFT key) and element that is NaN
// or infinite: such an adapter is never exported or merged. `what` says whose adapter it is.
void requireFiniteAdapter(const LoraAdapter& adapter, const std::string& what);

}  // namespace lorascope::train
