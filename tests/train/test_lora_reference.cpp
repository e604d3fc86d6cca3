// test_lora_reference.cpp — the trainer against PyTorch (scripts/reference/lora_training.py,
// outputs in data/<fixture>/): LoRA gradients of every A and B against autograd (float64), and
// the losses of the first 20 AdamW steps and the final adapter against a plain PyTorch loop
// started from the same adapter with the same data order.
//
// Tolerances (stated, fp32 against float64): gradients 1e-4 of each tensor's largest entry;
// the grad-check loss 1e-5 relative; the 20 step losses 1e-4 relative; the final adapter 1e-3 of
// each tensor's largest entry (20 Adam updates amplify fp32 rounding of near-zero gradients).
#include "TestRunner.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "TrainTestUtil.h"
#include "model/Safetensors.h"
#include "train/TrainLoop.h"

using namespace lorascope;
using namespace lorascope::test;

namespace {

const std::string kTrainDataDir = LORASCOPE_TRAIN_DATA_DIR;

nlohmann::json readReference(const std::string& fixture) {
  std::ifstream in(kTrainDataDir + "/" + fixture + "/reference.json");
  return nlohmann::json::parse(in);
}

std::vector<float> floatsOf(const model::SafetensorsFile& file, const std::string& key) {
  const model::SafetensorsEntry* entry = file.find(key);
  if (entry == nullptr)
    throw std::runtime_error(file.path() + " has no " + key);
  const compute::Tensor t = file.tensor(*entry);
  return {t.as<float>(), t.as<float>() + t.numel()};
}

train::LoraConfig referenceLora(const nlohmann::json& ref) {
  train::LoraConfig lora;
  lora.rank = ref["lora"]["r"].get<int>();
  lora.alpha = ref["lora"]["lora_alpha"].get<double>();
  lora.dropout = ref["lora"]["lora_dropout"].get<double>();
  return lora;
}

// An adapter of every projection whose A and B are the file's.
train::LoraAdapter adapterFrom(const std::string& path, const model::ModelConfig& config,
                               const train::LoraConfig& lora) {
  const model::SafetensorsFile file(path);
  train::LoraAdapter adapter = train::createLoraAdapter(lora, train::modelLoraSites(config), 0);
  for (train::LoraWeights& w : adapter.weights) {
    w.a = floatsOf(file, train::peftKey(w.site, true));
    w.b = floatsOf(file, train::peftKey(w.site, false));
  }
  return adapter;
}

}  // namespace

TEST_DATA(gradientsMatchAutograd) {
  lstest::addColumn<std::string>("fixture");
  lstest::newRow("llama") << "llama_f32_legacy_rope";
  lstest::newRow("qwen2") << "qwen2_f32_tied";
  lstest::newRow("qwen3") << "qwen3_f32";
  lstest::newRow("mistral sliding") << "mistral_f32_sliding";
  lstest::newRow("gemma2") << "gemma2_f32";
  lstest::newRow("gemma3") << "gemma3_f32";
}

TEST_CASE(gradientsMatchAutograd) {
  FETCH(std::string, fixture);
  const std::string name = fixture;
  const nlohmann::json ref = readReference(name);
  const model::ModelFolder folder = openFixture(name);
  const train::LoraAdapter adapter = adapterFrom(
      kTrainDataDir + "/" + name + "/lora_init.safetensors", folder.config(), referenceLora(ref));
  auto backend = compute::createCpuBackend();
  train::TrainGraph graph(*backend, folder.config(), folder.weights(), adapter);
  std::vector<std::int32_t> ids, labels;
  for (const auto& row : ref["grad_check"]["input_ids"])
    for (int v : row)
      ids.push_back(v);
  for (const auto& row : ref["grad_check"]["labels"])
    for (int v : row)
      labels.push_back(v);
  const auto batch = static_cast<std::int64_t>(ref["grad_check"]["input_ids"].size());
  const std::int64_t tokens = ref["grad_check"]["predicted_tokens"].get<std::int64_t>();
  const train::LossSum loss = graph.forwardBackward(
      {batch, static_cast<std::int64_t>(ids.size()) / batch, ids, labels}, 1.0f / tokens, {});
  COMPARE(loss.predictedTokens, tokens);
  const double wantLoss = ref["grad_check"]["loss"].get<double>();
  VERIFY2(std::fabs(loss.sum / tokens - wantLoss) < 1e-5 * wantLoss,
          lstest::format("loss %g vs %g", loss.sum / tokens, wantLoss));
  const model::SafetensorsFile grads(kTrainDataDir + "/" + name + "/lora_grads.safetensors");
  const std::vector<train::LoraGradient> ours = graph.gradients();
  double worst = 0;  // max over tensors of max |ours − torch| / max |torch|
  for (std::size_t i = 0; i < ours.size(); ++i) {
    for (bool isA : {true, false}) {
      const std::string key = train::peftKey(adapter.weights[i].site, isA);
      const std::vector<float> want = floatsOf(grads, key);
      const std::vector<float>& got = isA ? ours[i].a : ours[i].b;
      VERIFY(closeRelativeToMax(got, want, 1e-4, key));
      double diff = 0, scale = 0;
      for (std::size_t j = 0; j < want.size(); ++j) {
        diff = std::max(diff, std::fabs(double{got[j]} - want[j]));
        scale = std::max(scale, std::fabs(double{want[j]}));
      }
      worst = std::max(worst, diff / scale);
    }
  }
  lstest::info(
      "%s: %zu gradient tensors, worst difference to autograd %.2e of the tensor's largest",
      name.c_str(), 2 * ours.size(), worst);
}

TEST_DATA(twentyStepsMatchPyTorchLoop) {
  gradientsMatchAutograd_data();
}

TEST_CASE(twentyStepsMatchPyTorchLoop) {
  FETCH(std::string, fixture);
  const std::string name = fixture;
  const nlohmann::json ref = readReference(name);
  const nlohmann::json& t = ref["training"];
  const model::ModelFolder folder = openFixture(name);
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
  std::vector<train::TokenizedExample> examples;
  for (const auto& e : t["examples"]) {
    examples.push_back(
        {e["ids"].get<std::vector<std::int32_t>>(), e["labels"].get<std::vector<std::int32_t>>()});
  }
  train::TrainerState start;  // step 0 from the script's adapter (no moments: AdamW from zero)
  start.seed = config.seed;
  start.adapter = adapterFrom(kTrainDataDir + "/" + name + "/lora_init.safetensors",
                              folder.config(), config.lora);
  auto backend = compute::createCpuBackend();
  train::TrainLoop loop(*backend, folder.config(), folder.weights(), examples, config, start);
  std::vector<double> losses;
  loop.run([&](const train::StepMetrics& m) { losses.push_back(m.loss); });
  const auto want = ref["losses_float64"].get<std::vector<double>>();
  COMPARE(losses.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(losses[i] - want[i]) / want[i]);
  }
  lstest::info("%s: 20 step losses %.5f -> %.5f, worst relative difference to PyTorch %.2e",
               name.c_str(), losses.front(), losses.back(), worst);
  VERIFY(worst < 1e-4);
  const train::LoraAdapter finalAdapter = adapterFrom(
      kTrainDataDir + "/" + name + "/lora_final.safetensors", folder.config(), config.lora);
  for (std::size_t i = 0; i < finalAdapter.weights.size(); ++i) {
    const std::string key = train::peftKey(finalAdapter.weights[i].site, true);
    VERIFY(closeRelativeToMax(loop.state().adapter.weights[i].a, finalAdapter.weights[i].a, 1e-3,
                              key));
    VERIFY(closeRelativeToMax(loop.state().adapter.weights[i].b, finalAdapter.weights[i].b, 1e-3,
                              train::peftKey(finalAdapter.weights[i].site, false)));
  }
}
