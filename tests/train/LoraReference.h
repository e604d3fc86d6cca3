// LoraReference.h — the PyTorch training references of tests/train/data as a TrainLoop's inputs:
// the reference.json of scripts/reference/lora_training.py (and of qlora_curve.py, which copies
// its "lora" and "training" blocks), the adapters it wrote, and the loss-curve comparison.
// Qt-free, so the QtTest files and the GPU tests (built without Qt on the device machine) share
// it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "model/ModelConfig.h"
#include "model/Safetensors.h"
#include "train/Batching.h"  // defines: TokenizedExample
#include "train/Lora.h"
#include "train/TrainGraph.h"  // defines: modelLoraSites
#include "train/TrainLoop.h"

namespace lorascope::test {

inline const std::string kTrainDataDir = lstest::sourcePath("tests/train/data");

// data/<name>/reference.json; throws naming the file when it is missing or not JSON.
inline nlohmann::json readReference(const std::string& name) {
  const std::string path = kTrainDataDir + "/" + name + "/reference.json";
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error(path + ": cannot open");
  }
  return nlohmann::json::parse(in);
}

inline std::vector<float> floatsOf(const model::SafetensorsFile& file, const std::string& key) {
  const model::SafetensorsEntry* entry = file.find(key);
  if (entry == nullptr) {
    throw std::runtime_error(file.path() + " has no " + key);
  }
  const compute::Tensor t = file.tensor(*entry);
  return {t.as<float>(), t.as<float>() + t.numel()};
}

inline train::LoraConfig referenceLora(const nlohmann::json& ref) {
  train::LoraConfig lora;
  lora.rank = ref["lora"]["r"].get<int>();
  lora.alpha = ref["lora"]["lora_alpha"].get<double>();
  lora.dropout = ref["lora"]["lora_dropout"].get<double>();
  return lora;
}

// An adapter of every projection whose A and B are the file's (PEFT keys).
inline train::LoraAdapter adapterFrom(const std::string& path, const model::ModelConfig& config,
                                      const train::LoraConfig& lora) {
  const model::SafetensorsFile file(path);
  train::LoraAdapter adapter = train::createLoraAdapter(lora, train::modelLoraSites(config), 0);
  for (train::LoraWeights& w : adapter.weights) {
    w.a = floatsOf(file, train::peftKey(w.site, true));
    w.b = floatsOf(file, train::peftKey(w.site, false));
  }
  return adapter;
}

// The script's loop as a TrainConfig: its optimizer, schedule and clipping, its examples per
// step as 2 micro-batches of 2, no shuffle.
inline train::TrainConfig referenceTrainConfig(const nlohmann::json& ref) {
  const nlohmann::json& t = ref["training"];
  train::TrainConfig config;
  config.lora = referenceLora(ref);
  config.adamw.learningRate = t["lr"].get<double>();
  config.adamw.weightDecay = t["weight_decay"].get<double>();
  config.adamw.beta1 = t["betas"][0].get<double>();
  config.adamw.beta2 = t["betas"][1].get<double>();
  config.adamw.epsilon = t["eps"].get<double>();
  config.maxGradNorm = t["max_grad_norm"].get<double>();
  config.schedule = train::parseScheduleKind(t["schedule"].get<std::string>());
  config.warmupSteps = t["warmup_steps"].get<std::int64_t>();
  config.shuffle = t["shuffle"].get<bool>();
  config.microBatchSize = 2;
  config.gradAccumulation = t["examples_per_step"].get<std::int64_t>() / 2;
  config.maxSteps = t["steps"].get<std::int64_t>();
  config.maxSeqLen = 64;
  config.seed = 0;
  return config;
}

inline std::vector<train::TokenizedExample> referenceExamples(const nlohmann::json& ref) {
  std::vector<train::TokenizedExample> examples;
  for (const auto& e : ref["training"]["examples"]) {
    examples.push_back(
        {e["ids"].get<std::vector<std::int32_t>>(), e["labels"].get<std::vector<std::int32_t>>()});
  }
  return examples;
}

// Step 0 from the script's initial adapter `adapterPath` (no moments: AdamW from zero).
inline train::TrainerState referenceStart(const std::string& adapterPath,
                                          const model::ModelConfig& model,
                                          const train::TrainConfig& config) {
  train::TrainerState start;
  start.seed = config.seed;
  start.adapter = adapterFrom(adapterPath, model, config.lora);
  return start;
}

// max over steps of |got − want| / |want| (infinite when the lengths differ).
inline double maxRelativeDeviation(const std::vector<double>& got,
                                   const std::vector<double>& want) {
  if (got.size() != want.size()) {
    return INFINITY;
  }
  double worst = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]) / std::fabs(want[i]));
  }
  return worst;
}

}  // namespace lorascope::test
