// test_lora_reference.cpp — the trainer against PyTorch (scripts/reference/lora_training.py,
// outputs in data/<fixture>/): LoRA gradients of every A and B against autograd (float64), and
// the losses of the first 20 AdamW steps and the final adapter against a plain PyTorch loop
// started from the same adapter with the same data order.
//
// Tolerances (stated, fp32 against float64): gradients 1e-4 of each tensor's largest entry;
// the grad-check loss 1e-5 relative; the 20 step losses 1e-4 relative; the final adapter 1e-3 of
// each tensor's largest entry (20 Adam updates amplify fp32 rounding of near-zero gradients).
//
// QLoRA (--quantize nf4) against scripts/reference/qlora_curve.py (data/qlora_llama_f32): the
// same 20-step loop on the tiny Llama with its seven projections quantised to NF4 at placement.
// Both sides dequantise to the same f32 weights (checked: Σw² of every projection within 1e-6 —
// one NF4 code apart would move it by ~1e-3), so what is left is fp32 against float64 arithmetic,
// the 1e-4 of the unquantised curves above. The NF4 curve is 5e-2 away from the unquantised one;
// the run must stay 100 tolerances away from it (it really computed on NF4 weights).
#include "TestRunner.h"

#include "LoraReference.h"
#include "TrainTestUtil.h"
#include "model/DeviceWeights.h"  // defines: placeWeights, WeightQuantization
#include "train/TrainLoop.h"

using namespace lorascope;
using namespace lorascope::test;

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
  const model::ModelFolder folder = openFixture(name);
  const train::TrainConfig config = referenceTrainConfig(ref);
  const std::vector<train::TokenizedExample> examples = referenceExamples(ref);
  const train::TrainerState start = referenceStart(
      kTrainDataDir + "/" + name + "/lora_init.safetensors", folder.config(), config);
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

TEST_CASE(nf4CurveFollowsQloraReference) {
  const nlohmann::json ref = readReference("qlora_llama_f32");
  const nlohmann::json lora = readReference(ref["fixture"].get<std::string>());
  const model::ModelFolder folder = openFixture(ref["fixture"].get<std::string>());
  auto backend = compute::createCpuBackend();
  const model::ModelWeights placed =
      model::placeWeights(*backend, folder.weights(), {}, model::WeightQuantization::Nf4);
  int checked = 0;
  for (std::size_t layer = 0; layer < placed.layers.size(); ++layer) {
    const model::LayerWeights& l = placed.layers[layer];
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    for (const auto& [key, t] :
         std::vector<std::pair<std::string, const compute::Tensor*>>{{"self_attn.q_proj", &l.q},
                                                                     {"self_attn.k_proj", &l.k},
                                                                     {"self_attn.v_proj", &l.v},
                                                                     {"self_attn.o_proj", &l.o},
                                                                     {"mlp.gate_proj", &l.gate},
                                                                     {"mlp.up_proj", &l.up},
                                                                     {"mlp.down_proj", &l.down}}) {
      VERIFY(t->dtype() == compute::DType::NF4);
      double sum = 0;
      for (const float w : backend->download(*t)) {
        sum += double{w} * w;
      }
      const double want = ref["dequantized_sum_of_squares"][p + key + ".weight"].get<double>();
      VERIFY2(std::fabs(sum - want) <= 1e-6 * want,
              lstest::format("%s: sum of squares %.9g vs %.9g", key.c_str(), sum, want));
      ++checked;
    }
  }
  COMPARE(checked, 7 * static_cast<int>(placed.layers.size()));
  VERIFY(ref["training"] == lora["training"]);  // the same data and loop as the bf16 reference
  train::TrainConfig config = referenceTrainConfig(ref);
  config.quantization = model::WeightQuantization::Nf4;
  const train::TrainerState start = referenceStart(
      kTrainDataDir + "/" + ref["fixture"].get<std::string>() + "/lora_init.safetensors",
      folder.config(), config);
  train::TrainLoop loop(*backend, folder.config(), placed, referenceExamples(ref), config, start);
  std::vector<double> losses;
  loop.run([&](const train::StepMetrics& m) { losses.push_back(m.loss); });
  const auto want = ref["losses_nf4_float64"].get<std::vector<double>>();
  const auto unquantized = ref["losses_unquantized_float64"].get<std::vector<double>>();
  const double deviation = maxRelativeDeviation(losses, want);
  const double fromUnquantized = maxRelativeDeviation(losses, unquantized);
  lstest::info(
      "nf4: %zu step losses %.5f -> %.5f, max relative deviation from the NF4 "
      "reference %.2e (tolerance 1e-4), from the unquantised curve %.2e",
      losses.size(), losses.front(), losses.back(), deviation, fromUnquantized);
  COMPARE(losses.size(), std::size_t{20});
  VERIFY(deviation < 1e-4);
  VERIFY(fromUnquantized > 1e-2);
}
