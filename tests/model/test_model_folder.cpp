// test_model_folder.cpp — model folders: the five reference folders written by
// scripts/reference/models.py load and reproduce transformers' loss and logits; broken folders
// (missing tensor, wrong shape, missing shard, config without a field) are named precisely; a
// folder under non-ASCII names opens from its UTF-8 text.
#include "TempDir.h"
#include "TestRunner.h"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ExpectError.h"
#include "SafetensorsWriter.h"
#include "TestPaths.h"
#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "compute/Backend.h"
#include "compute/Errors.h"
#include "model/Forward.h"
#include "model/ModelError.h"
#include "model/ModelFolder.h"
#include "model/ModelLayout.h"

using namespace lorascope;
using namespace lorascope::test;
using model::ModelError;
using model::ModelFolder;
using nlohmann::json;

namespace {

const std::string kDataDir = lstest::sourcePath("tests/model/data");

// A small valid Llama config: 1 layer, hidden 4, 2 heads of 2, 1 KV head, MLP 8, vocab 10.
json tinyConfig() {
  return {{"model_type", "llama"},  {"hidden_size", 4},         {"intermediate_size", 8},
          {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"num_key_value_heads", 1},
          {"vocab_size", 10},       {"rms_norm_eps", 1e-5},     {"tie_word_embeddings", false}};
}

std::vector<RawTensor> tinyTensors() {
  std::vector<RawTensor> out;
  const model::ModelConfig c = model::parseModelConfig(tinyConfig(), "config.json");
  for (const model::ExpectedTensor& t : model::expectedTensors(c)) {
    out.push_back(f32Tensor(t.name, t.shape, 0.5f));
  }
  return out;
}

}  // namespace

lstest::TempDir tmp_;

// How a message names `name` in `dir`: with the system's separator ('\\' on Windows).
std::string inFolder(const std::string& dir, const char* name) {
  return common::pathText(std::filesystem::path(dir) / name);
}

std::string makeFolder(const std::string& name, const json& config,
                       const std::vector<RawTensor>& tensors) {
  const std::string dir = tmp_.filePath(name);
  std::filesystem::create_directories(dir);
  writeFile(dir + "/config.json", config.dump());
  writeFile(dir + "/model.safetensors", safetensorsBytes(tensors));
  return dir;
}

TEST_DATA(referenceModelsMatchTransformers) {
  lstest::addColumn<std::string>("name");
  for (const char* name : {"llama_f32_legacy_rope", "llama_bf16_sharded_tied", "qwen2_f32_tied",
                           "qwen2_bf16_sharded_linear_rope", "mistral_f32", "qwen3_f32",
                           "mistral_f32_sliding", "gemma2_f32", "gemma3_f32", "gemma3_bf16"}) {
    lstest::newRow(name) << std::string(name);
  }
}

// Loss within 1e-4 relative (fp32 weights) / 2e-3 (bf16 weights); each logit within the same
// tolerance relative to the largest logit of its row (logits near zero have no relative error).
TEST_CASE(referenceModelsMatchTransformers) {
  FETCH(std::string, name);
  const std::string dir = kDataDir + "/" + name;
  std::ifstream in(dir + "/expected.json");
  VERIFY2(in.good(), "reference fixture missing: run scripts/reference/models.py");
  const json expected = json::parse(in);
  const ModelFolder folder = ModelFolder::open(dir);
  const bool bf16 = expected.at("stored_dtype") == "bfloat16";
  COMPARE(folder.tensors().front().dtype, bf16 ? compute::DType::BF16 : compute::DType::F32);
  const double tolerance = bf16 ? 2e-3 : 1e-4;

  std::vector<std::int32_t> ids, labels;
  for (const json& row : expected.at("input_ids")) {
    for (const json& v : row)
      ids.push_back(v.get<std::int32_t>());
  }
  for (const json& row : expected.at("labels")) {
    for (const json& v : row)
      labels.push_back(v.get<std::int32_t>());
  }
  const auto batch = static_cast<std::int64_t>(expected.at("input_ids").size());
  const auto seq = static_cast<std::int64_t>(ids.size()) / batch;

  auto cpu = compute::createCpuBackend();
  const model::ForwardResult result =
      model::forward(*cpu, folder.config(), folder.weights(), {batch, seq, ids, labels});
  const double wantLoss = expected.at("loss").get<double>();
  VERIFY(result.loss.has_value());
  VERIFY2(std::fabs(*result.loss - wantLoss) <= tolerance * std::fabs(wantLoss),
          lstest::format("loss %g, transformers %g", *result.loss, wantLoss));

  const std::vector<float> logits = cpu->download(result.logits);
  const std::int64_t vocab = folder.config().vocabSize;
  const json& positions = expected.at("logits_positions");
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < positions.size(); ++i) {
      const json& row = expected.at("logits")[static_cast<std::size_t>(b)][i];
      double rowMax = 0;
      for (const json& v : row)
        rowMax = std::max(rowMax, std::fabs(v.get<double>()));
      const std::int64_t t = b * seq + positions[i].get<std::int64_t>();
      for (std::int64_t v = 0; v < vocab; ++v) {
        const double want = row[static_cast<std::size_t>(v)].get<double>();
        const double got = logits[static_cast<std::size_t>(t * vocab + v)];
        VERIFY2(
            std::fabs(got - want) <= tolerance * rowMax,
            lstest::format("batch %lld position %d vocab %lld: %g vs %g", static_cast<long long>(b),
                           positions[i].get<int>(), static_cast<long long>(v), got, want));
      }
    }
  }
}

TEST_CASE(tiedHeadSharesTheEmbeddingStorage) {
  const ModelFolder folder = ModelFolder::open(kDataDir + "/qwen2_f32_tied");
  VERIFY(folder.config().tieWordEmbeddings);
  COMPARE(folder.weights().lmHead.data(), folder.weights().embed.data());
  COMPARE(folder.files().size(), std::size_t{1});
  const ModelFolder sharded = ModelFolder::open(kDataDir + "/llama_bf16_sharded_tied");
  COMPARE(sharded.files().size(), std::size_t{4});
}

TEST_CASE(tinySyntheticFolderLoads) {
  const std::string dir = makeFolder("ok", tinyConfig(), tinyTensors());
  const ModelFolder folder = ModelFolder::open(dir);
  COMPARE(folder.weights().layers.size(), std::size_t{1});
  COMPARE(folder.weights().layers[0].k.shape(), (compute::Shape{2, 4}));
}

// "Łukasz/日本", given as UTF-8 text as the command line and a run's config.json give it: no code
// page on the way to its files (on Windows a std::string path would be read as ANSI).
TEST_CASE(folderUnderNonAsciiNamesOpensFromUtf8Text) {
  const std::filesystem::path dir = tmp_.path() / common::pathFromUtf8("\xc5\x81ukasz") /
                                    common::pathFromUtf8("\xe6\x97\xa5\xe6\x9c\xac");
  std::filesystem::create_directories(dir);
  writeFile(dir / "config.json", tinyConfig().dump());
  writeFile(dir / "model.safetensors", safetensorsBytes(tinyTensors()));
  const std::string text = common::pathText(dir);
  {
    const ModelFolder folder = ModelFolder::open(text);
    COMPARE(folder.dir(), text);
    COMPARE(folder.weights().layers.size(), std::size_t{1});
  }  // closed: Windows deletes a mapped file only once its mapping is gone
  std::filesystem::remove(dir / "model.safetensors");
  VERIFY(throwsWith<ModelError>([&] { ModelFolder::open(text); },
                                {text, "neither model.safetensors nor"}));
}

TEST_CASE(missingTensorIsNamedWithItsShape) {
  std::vector<RawTensor> tensors = tinyTensors();
  std::erase_if(tensors, [](const RawTensor& t) { return t.name == "model.norm.weight"; });
  const std::string dir = makeFolder("missing", tinyConfig(), tensors);
  VERIFY(throwsWith<ModelError>(
      [&] { ModelFolder::open(dir); },
      {inFolder(dir, "model.safetensors"), "tensor 'model.norm.weight'", "[4]", "is missing"}));
}

TEST_CASE(wrongShapeNamesExpectedAndFound) {
  std::vector<RawTensor> tensors = tinyTensors();
  for (RawTensor& t : tensors) {
    if (t.name == "model.layers.0.self_attn.k_proj.weight") {
      t = f32Tensor(t.name, {4, 4}, 0.5f);  // as if num_key_value_heads were 2
    }
  }
  const std::string dir = makeFolder("shape", tinyConfig(), tensors);
  VERIFY(throwsWith<ModelError>(
      [&] { ModelFolder::open(dir); },
      {"model.layers.0.self_attn.k_proj.weight", "has shape [4, 4]", "expected [2, 4]"}));
}

TEST_CASE(shardedIndexPointingToMissingFile) {
  const std::string dir = makeFolder("sharded", tinyConfig(), {});
  std::filesystem::remove(dir + "/model.safetensors");
  json weightMap;
  for (const RawTensor& t : tinyTensors()) {
    weightMap[t.name] = "model-00001-of-00002.safetensors";
  }
  weightMap["lm_head.weight"] = "model-00002-of-00002.safetensors";
  std::vector<RawTensor> first = tinyTensors();
  std::erase_if(first, [](const RawTensor& t) { return t.name == "lm_head.weight"; });
  writeFile(dir + "/model-00001-of-00002.safetensors", safetensorsBytes(first));
  writeFile(dir + "/model.safetensors.index.json", json{{"weight_map", weightMap}}.dump());
  VERIFY(
      throwsWith<ModelError>([&] { ModelFolder::open(dir); },
                             {"model.safetensors.index.json",
                              "lists shard 'model-00002-of-00002.safetensors'", "does not exist"}));
}

TEST_CASE(shardNamesMustStayInTheFolder) {
  const std::string dir = makeFolder("escape", tinyConfig(), {});
  std::filesystem::remove(dir + "/model.safetensors");
  writeFile(dir + "/model.safetensors.index.json",
            json{{"weight_map", {{"model.norm.weight", "../elsewhere.safetensors"}}}}.dump());
  VERIFY(throwsWith<ModelError>([&] { ModelFolder::open(dir); }, {"not a plain file name"}));
}

TEST_CASE(configMissingAFieldIsNamed) {
  json config = tinyConfig();
  config.erase("vocab_size");
  const std::string dir = makeFolder("nofield", config, tinyTensors());
  VERIFY(throwsWith<ModelError>([&] { ModelFolder::open(dir); },
                                {inFolder(dir, "config.json"), "field 'vocab_size' is missing"}));
}

TEST_CASE(folderWithoutWeightsOrConfig) {
  const std::string dir = makeFolder("noweights", tinyConfig(), {});
  std::filesystem::remove(dir + "/model.safetensors");
  VERIFY(
      throwsWith<ModelError>([&] { ModelFolder::open(dir); }, {"neither model.safetensors nor"}));
  std::filesystem::remove(dir + "/config.json");
  VERIFY(throwsWith<ModelError>([&] { ModelFolder::open(dir); },
                                {inFolder(dir, "config.json"), "cannot open"}));
}

TEST_CASE(forwardRejectsIdsOutsideTheVocabulary) {
  const ModelFolder folder = ModelFolder::open(makeFolder("ids", tinyConfig(), tinyTensors()));
  auto cpu = compute::createCpuBackend();
  const std::vector<std::int32_t> ids{1, 2, 10};
  VERIFY(throwsWith<compute::ShapeError>(
      [&] {
        model::forward(*cpu, folder.config(), folder.weights(), {1, 3, ids, {}});
      },
      {"token id 10 at position 2", "[0, 10)"}));
}

TEST_CASE(singleTokenHasNoLoss) {
  const ModelFolder folder = ModelFolder::open(makeFolder("one", tinyConfig(), tinyTensors()));
  auto cpu = compute::createCpuBackend();
  const std::vector<std::int32_t> ids{3};
  const model::ForwardResult r =
      model::forward(*cpu, folder.config(), folder.weights(), {1, 1, ids, ids});
  VERIFY(!r.loss.has_value());
  COMPARE(r.predictedTokens, std::int64_t{0});
  COMPARE(r.logits.shape(), (compute::Shape{1, 10}));
}
