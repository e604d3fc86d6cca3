// test_model_config.cpp — config.json of the Llama, Qwen2, Qwen3, Mistral, Gemma 2 and Gemma 3
// families in both forms in the wild, the rope frequencies that follow, and errors that name the
// file and the field; a config.json that is no regular file or is over its cap.
#include "TempDir.h"
#include "TestRunner.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ExpectError.h"
#include "common/Platform.h"  // defines: kOsFamily
#include "model/JsonFile.h"   // defines: kMaxModelJsonBytes
#include "model/ModelConfig.h"
#include "model/ModelError.h"

using namespace lorascope::model;
using lorascope::test::throwsWith;
using nlohmann::json;

namespace {

// Llama-3.2-1B's config.json as transformers 4.x wrote it (fields the graph reads).
json llama32Legacy() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
    "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 128256,
    "attention_bias": false, "mlp_bias": false})");
}

// The same model as transformers 5 writes it: rope_parameters instead of rope_theta/rope_scaling.
json llama32V5() {
  json c = llama32Legacy();
  c.erase("rope_theta");
  c.erase("rope_scaling");
  c.erase("torch_dtype");
  c["dtype"] = "bfloat16";
  c["rope_parameters"] = {{"rope_type", "llama3"},  {"rope_theta", 500000.0},
                          {"factor", 32.0},         {"high_freq_factor", 4.0},
                          {"low_freq_factor", 1.0}, {"original_max_position_embeddings", 8192}};
  return c;
}

json qwen25() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
    "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
    "num_attention_heads": 14, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "rope_scaling": null, "sliding_window": 32768,
    "use_sliding_window": false, "tie_word_embeddings": true, "vocab_size": 151936})");
}

}  // namespace

TEST_CASE(readsLlama32InTheTransformers4Form) {
  const ModelConfig c = parseModelConfig(llama32Legacy(), "config.json");
  COMPARE(c.family, Family::Llama);
  COMPARE(c.hiddenSize, std::int64_t{2048});
  COMPARE(c.numKvHeads, std::int64_t{8});
  COMPARE(c.headDim, std::int64_t{64});
  COMPARE(c.rope.scaling, RopeScalingType::Llama3);
  COMPARE(c.rope.factor, 32.0);
  COMPARE(c.rope.originalMaxPositionEmbeddings, std::int64_t{8192});
  COMPARE(c.rope.theta, 500000.0);
  VERIFY(c.tieWordEmbeddings);
  VERIFY(!c.qkvBias && !c.mlpBias);
  COMPARE(c.storedDtype, std::string("bfloat16"));
}

TEST_CASE(bothConfigFormsGiveTheSameRopeFrequencies) {
  const ModelConfig legacy = parseModelConfig(llama32Legacy(), "a/config.json");
  const ModelConfig v5 = parseModelConfig(llama32V5(), "b/config.json");
  COMPARE(ropeInverseFrequencies(legacy), ropeInverseFrequencies(v5));
  COMPARE(v5.storedDtype, std::string("bfloat16"));
}

TEST_CASE(llama3ScalingKeepsHighAndSlowsLowFrequencies) {
  const ModelConfig c = parseModelConfig(llama32Legacy(), "config.json");
  const std::vector<float> inv = ropeInverseFrequencies(c);
  COMPARE(inv.size(), std::size_t{32});
  COMPARE(inv[0], 1.0f);  // wavelength 2π < 8192/4: kept
  const double unscaledLast = 1.0 / std::pow(500000.0, 62.0 / 64.0);
  // wavelength far above 8192: divided by the factor 32
  VERIFY(std::fabs(inv[31] - unscaledLast / 32.0) < 1e-6 * unscaledLast);
}

TEST_CASE(linearScalingDividesEveryFrequency) {
  json j = qwen25();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  const ModelConfig c = parseModelConfig(j, "config.json");
  COMPARE(c.rope.scaling, RopeScalingType::Linear);
  COMPARE(ropeInverseFrequencies(c)[0], 0.25f);
}

TEST_CASE(qwen2HasQkvBiasAndDerivedHeadDim) {
  const ModelConfig c = parseModelConfig(qwen25(), "config.json");
  COMPARE(c.family, Family::Qwen2);
  VERIFY(c.qkvBias);
  VERIFY(!c.oBias);
  COMPARE(c.headDim, std::int64_t{64});       // 896 / 14
  COMPARE(c.slidingWindow, std::int64_t{0});  // use_sliding_window false
  COMPARE(c.rope.scaling, RopeScalingType::None);
}

TEST_CASE(mistralReadsItsSlidingWindow) {
  json j = qwen25();
  j["model_type"] = "mistral";
  j["sliding_window"] = 4096;
  j["head_dim"] = 128;
  const ModelConfig c = parseModelConfig(j, "config.json");
  COMPARE(c.family, Family::Mistral);
  COMPARE(c.slidingWindow, std::int64_t{4096});
  COMPARE(c.headDim, std::int64_t{128});
  j["sliding_window"] = nullptr;
  COMPARE(parseModelConfig(j, "config.json").slidingWindow, std::int64_t{0});
}

TEST_CASE(llamaAttentionAndMlpBias) {
  json j = llama32Legacy();
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  const ModelConfig c = parseModelConfig(j, "config.json");
  VERIFY(c.qkvBias && c.oBias && c.mlpBias);
}

// Gemma 2 (transformers 4.x form, no layer_types): its defaults and the alternating pattern.
TEST_CASE(gemma2DefaultsAndAlternatingSlidingLayers) {
  const json j = json::parse(R"({
    "model_type": "gemma2", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304,
    "intermediate_size": 9216, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000,
    "query_pre_attn_scalar": 256, "rope_theta": 10000.0})");
  const ModelConfig c = parseModelConfig(j, "config.json");
  COMPARE(c.family, Family::Gemma2);
  VERIFY(c.tieWordEmbeddings && c.sandwichNorms && c.normWeightPlusOne && !c.qkNorm);
  VERIFY(c.mlpActivation == MlpActivation::GeluTanh);
  COMPARE(c.attentionLogitSoftcap, 50.0);
  COMPARE(c.finalLogitSoftcap, 30.0);
  COMPARE(c.slidingWindow, std::int64_t{4096});
  VERIFY(c.slidingLayers == (std::vector<bool>{true, false, true, false}));
  COMPARE(c.embeddingScale, std::sqrt(2304.0));
  COMPARE(c.attentionScale, 1.0 / 16.0);
}

// Gemma 3 text, transformers 4.x form: every 6th layer global, local rope 10000.
TEST_CASE(gemma3PatternAndLocalRope) {
  const json j = json::parse(R"({
    "model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912,
    "num_hidden_layers": 7, "num_attention_heads": 4, "num_key_value_heads": 1,
    "head_dim": 256, "vocab_size": 262144, "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0, "sliding_window": 512, "sliding_window_pattern": 6,
    "final_logit_softcapping": null, "attn_logit_softcapping": null})");
  const ModelConfig c = parseModelConfig(j, "config.json");
  COMPARE(c.family, Family::Gemma3);
  VERIFY(c.qkNorm && c.attentionLogitSoftcap == 0.0 && c.finalLogitSoftcap == 0.0);
  VERIFY(c.slidingLayers == (std::vector<bool>{true, true, true, true, true, false, true}));
  VERIFY(c.localRope.has_value());
  COMPARE(c.ropeOfLayer(0).theta, 10000.0);
  COMPARE(c.ropeOfLayer(5).theta, 1000000.0);
}

TEST_CASE(qwen3HasQkNormsAndItsHeadDim) {
  json j = qwen25();
  j["model_type"] = "qwen3";
  j["head_dim"] = 128;
  const ModelConfig c = parseModelConfig(j, "config.json");
  COMPARE(c.family, Family::Qwen3);
  VERIFY(c.qkNorm && !c.qkvBias && !c.sandwichNorms);
  COMPARE(c.headDim, std::int64_t{128});
}

TEST_CASE(multimodalGemma3IsNamedAndRefused) {
  json j = qwen25();
  j["model_type"] = "gemma3";
  VERIFY(throwsWith<UnsupportedModelError>(
      [&] { parseModelConfig(j, "m/config.json"); },
      {"m/config.json", "model_type 'gemma3' is the multimodal Gemma 3", "gemma3_text"}));
}

TEST_CASE(unknownArchitectureIsNotSupported) {
  json j = qwen25();
  j["model_type"] = "gpt2";
  VERIFY(throwsWith<UnsupportedModelError>([&] { parseModelConfig(j, "m/config.json"); },
                                           {"m/config.json", "not supported: model_type 'gpt2'"}));
}

TEST_CASE(missingFieldIsNamed) {
  json j = qwen25();
  j.erase("hidden_size");
  VERIFY(throwsWith<ModelError>([&] { parseModelConfig(j, "m/config.json"); },
                                {"m/config.json", "field 'hidden_size' is missing"}));
}

TEST_CASE(illTypedFieldIsNamedWithItsValue) {
  json j = qwen25();
  j["num_attention_heads"] = "14";
  VERIFY(
      throwsWith<ModelError>([&] { parseModelConfig(j, "m/config.json"); },
                             {"field 'num_attention_heads' must be a positive integer", "\"14\""}));
  json k = llama32V5();
  k["rope_parameters"].erase("factor");
  VERIFY(throwsWith<ModelError>([&] { parseModelConfig(k, "m/config.json"); },
                                {"field 'rope_parameters.factor' is missing"}));
}

TEST_CASE(unsupportedRopeScalingAndActivation) {
  json j = qwen25();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  VERIFY(throwsWith<UnsupportedModelError>([&] { parseModelConfig(j, "config.json"); },
                                           {"not supported: rope scaling type 'yarn'"}));
  json k = qwen25();
  k["hidden_act"] = "gelu";
  VERIFY(throwsWith<UnsupportedModelError>([&] { parseModelConfig(k, "config.json"); },
                                           {"hidden_act 'gelu'"}));
}

TEST_CASE(headsMustGroupEvenly) {
  json j = qwen25();
  j["num_key_value_heads"] = 3;
  VERIFY(throwsWith<ModelError>([&] { parseModelConfig(j, "config.json"); },
                                {"14 is not a multiple of num_key_value_heads 3"}));
}

TEST_CASE(malformedJsonTextIsReported) {
  VERIFY(throwsWith<ModelError>([] { parseModelConfigText("{\"model_type\": ", "x/config.json"); },
                                {"x/config.json", "not well-formed JSON"}));
  VERIFY(throwsWith<ModelError>([] { parseModelConfigText("[1, 2]", "x/config.json"); },
                                {"expected a JSON object"}));
}

TEST_CASE(configJsonIsARegularFileUnderACap) {
  // Issue 31 item 7: a config.json linked to /dev/zero grew until memory ran out; a FIFO hung.
  lstest::TempDir tmp;
  const std::filesystem::path big = tmp.path() / "config.json";
  std::ofstream(big) << "{}";
  std::filesystem::resize_file(big, kMaxModelJsonBytes + 1);  // sparse: nothing is written
  VERIFY(throwsWith<ModelError>(
      [&] { loadModelConfig(lstest::utf8Text(big)); },
      {lstest::utf8Text(big) + ": is 64.00 MiB, more than the 64.00 MiB limit of a model's "
                               "JSON file"}));
  if (lorascope::common::kOsFamily == lorascope::common::OsFamily::Posix) {
    const std::filesystem::path zero = tmp.path() / "zero" / "config.json";
    std::filesystem::create_directories(zero.parent_path());
    std::filesystem::create_symlink("/dev/zero", zero);
    VERIFY(throwsWith<ModelError>([&] { loadModelConfig(lstest::utf8Text(zero)); },
                                  {"config.json: cannot read: not a regular file"}));
  }
}
