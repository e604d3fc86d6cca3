// test_peft_export.cpp — PEFT adapter folders (keys, shapes, dtype, metadata and
// adapter_config.json fields as PEFT writes them; exact read-back; refusal of what this trainer
// cannot represent) and merged model folders (W + scale·B·A in the stored dtype, sharding and
// side files kept; the merged model's loss equals the base-plus-adapter loss). When the device
// machine's reference (scripts/reference/peft_check.py) is committed, our forward of the merged
// folder is compared with PEFT's logits of base + our adapter.
#include "TempDir.h"
#include "TestRunner.h"

#include <algorithm>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "TrainTestUtil.h"
#include "compute/Bf16.h"
#include "model/Forward.h"
#include "model/Safetensors.h"
#include "train/CheckpointError.h"
#include "train/DemoModel.h"
#include "train/Merge.h"
#include "train/PeftExport.h"
#include "train/SafetensorsWriter.h"
#include "train/TrainGraph.h"

using namespace lorascope;
using namespace lorascope::test;
using nlohmann::json;
using train::CheckpointError;
namespace fs = std::filesystem;

namespace {

const std::string kPeftReferenceDir = lstest::sourcePath("tests/train/peft_reference");
const std::string kPeftFixtureDir = lstest::buildPath("tests/train/peft_fixture");

json readJson(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return json::parse(in);
}

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// The safetensors header of a file as JSON (what PEFT's loader sees).
json headerOf(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char length[8];
  in.read(reinterpret_cast<char*>(length), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | length[i];
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  return json::parse(text);
}

struct FixtureSpec {
  const char* name;    // tests/model/data folder
  const char* config;  // LoRA config words: rank, alpha, rslora, targets, layers
  int rank;
  double alpha;
  bool rslora;
  const char* targets;
  std::optional<std::set<int>> layers;
};

// The adapters scripts/reference/peft_check.py checks: every projection of a f32 Llama; q,k,v,o
// with rsLoRA on layer 1 only of a bf16, sharded, biased Qwen2.
const FixtureSpec kFixtures[] = {
    {"llama_f32_legacy_rope", "r4 a8 all", 4, 8.0, false, "all", std::nullopt},
    {"qwen2_bf16_sharded_linear_rope", "r2 a6 rslora qkvo layer1", 2, 6.0, true, "q,k,v,o",
     std::set<int>{1}},
};

train::LoraAdapter fixtureAdapter(const model::ModelConfig& config, const FixtureSpec& spec) {
  train::LoraConfig lora;
  lora.rank = spec.rank;
  lora.alpha = spec.alpha;
  lora.useRslora = spec.rslora;
  lora.targets = train::parseLoraTargets(spec.targets);
  lora.layers = spec.layers;
  return adapterWithNonZeroB(config, lora, 31);
}

// Two sequences of 9 ids drawn below the vocabulary size.
std::vector<std::int32_t> fixtureIds(std::int64_t vocab) {
  std::vector<std::int32_t> ids;
  std::uint64_t index = 0;
  for (int i = 0; i < 18; ++i)
    ids.push_back(static_cast<std::int32_t>(train::uniformBelow(8, 1, index, vocab)));
  return ids;
}

std::vector<float> forwardLogits(const fs::path& modelDir, const std::vector<std::int32_t>& ids) {
  const model::ModelFolder folder = model::ModelFolder::open(modelDir.string());
  auto backend = compute::createCpuBackend();
  const model::ForwardResult r =
      model::forward(*backend, folder.config(), folder.weights(), {2, 9, ids, {}});
  const float* p = r.logits.as<float>();
  return std::vector<float>(p, p + r.logits.numel());
}

}  // namespace

lstest::TempDir tmp_;
fs::path path(const std::string& name) {
  return fs::path(tmp_.path()) / name;
}

TEST_CASE(writesPeftKeysShapesAndMetadata) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const train::LoraAdapter adapter = fixtureAdapter(folder.config(), kFixtures[0]);
  train::writePeftAdapter(path("adapter"), adapter, "tiny/llama");
  const json header = headerOf(path("adapter") / "adapter_model.safetensors");
  COMPARE(header.at("__metadata__"), (json{{"format", "pt"}}));
  COMPARE(header.size(), 1 + 2 * adapter.weights.size());  // 2 layers × 7 projections × A, B
  const json& qA = header.at("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
  COMPARE(qA.at("dtype"), json("F32"));
  COMPARE(qA.at("shape"), (json{4, 32}));  // [r, in]
  const json& downB = header.at("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight");
  COMPARE(downB.at("shape"), (json{32, 4}));  // [out, r]
  const json& kB = header.at("base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight");
  COMPARE(kB.at("shape"), (json{16, 4}));  // GQA: 2 KV heads × head_dim 8
  VERIFY(header.contains("base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight"));
  VERIFY(header.contains("base_model.model.model.layers.1.mlp.up_proj.lora_B.weight"));
}

TEST_CASE(adapterConfigHasPeftsFields) {
  train::LoraConfig lora;
  lora.rank = 16;
  lora.alpha = 32;
  lora.dropout = 0.05;
  lora.targets = train::parseLoraTargets("v,q,down");
  const json doc = json::parse(train::peftAdapterConfig(lora, "Qwen/Qwen2.5-0.5B").dump());
  COMPARE(doc.at("peft_type"), json("LORA"));
  COMPARE(doc.at("task_type"), json("CAUSAL_LM"));
  COMPARE(doc.at("r"), json(16));
  VERIFY(doc.at("lora_alpha").is_number_integer());
  COMPARE(doc.at("lora_alpha"), json(32));
  COMPARE(doc.at("lora_dropout"), json(0.05));
  COMPARE(doc.at("target_modules"), (json{"q_proj", "v_proj", "down_proj"}));
  COMPARE(doc.at("bias"), json("none"));
  COMPARE(doc.at("fan_in_fan_out"), json(false));
  COMPARE(doc.at("use_rslora"), json(false));
  COMPARE(doc.at("use_dora"), json(false));
  COMPARE(doc.at("inference_mode"), json(true));
  COMPARE(doc.at("init_lora_weights"), json(true));
  VERIFY(doc.at("layers_to_transform").is_null());
  COMPARE(doc.at("base_model_name_or_path"), json("Qwen/Qwen2.5-0.5B"));
  lora.alpha = 12.5;
  lora.useRslora = true;
  lora.layers = std::set<int>{3, 1};
  const json other = json::parse(train::peftAdapterConfig(lora, "m").dump());
  COMPARE(other.at("lora_alpha"), json(12.5));
  COMPARE(other.at("use_rslora"), json(true));
  COMPARE(other.at("layers_to_transform"), (json{1, 3}));
  // Written as PEFT's json.dumps(indent=2, sort_keys=True) writes it.
  train::writePeftAdapter(
      path("sorted"), fixtureAdapter(openFixture("llama_f32_legacy_rope").config(), kFixtures[0]),
      "m");
  std::ifstream in(path("sorted") / "adapter_config.json");
  const std::string text(std::istreambuf_iterator<char>(in), {});
  VERIFY(text.rfind("{\n  \"alora_invocation_tokens\": null,\n  \"alpha_pattern\": {},", 0) == 0);
  VERIFY(text.find("\"use_rslora\": false,\n  \"velora_config\": null\n}") != std::string::npos);
}

TEST_CASE(readBackIsExact) {
  const model::ModelFolder folder = openFixture("qwen2_bf16_sharded_linear_rope");
  const train::LoraAdapter adapter = fixtureAdapter(folder.config(), kFixtures[1]);
  train::writePeftAdapter(path("qwen"), adapter, "base");
  const train::PeftAdapterFiles read = train::readPeftAdapter(path("qwen"));
  COMPARE(read.baseModelNameOrPath, std::string("base"));
  COMPARE(read.adapter.config.rank, 2);
  COMPARE(read.adapter.config.alpha, 6.0);
  VERIFY(read.adapter.config.useRslora);
  COMPARE(read.adapter.config.targets, adapter.config.targets);
  COMPARE(read.adapter.config.layers, adapter.config.layers);
  COMPARE(read.adapter.weights.size(), std::size_t{4});
  for (std::size_t i = 0; i < adapter.weights.size(); ++i) {
    COMPARE(read.adapter.weights[i].site.layer, 1);
    COMPARE(read.adapter.weights[i].site.module, adapter.weights[i].site.module);
    VERIFY(bitIdentical(read.adapter.weights[i].a, adapter.weights[i].a));
    VERIFY(bitIdentical(read.adapter.weights[i].b, adapter.weights[i].b));
  }
  train::checkAdapterFitsModel(read.adapter, folder.config(), "qwen");
}

TEST_CASE(readRefusesWhatItCannotRepresent) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const train::LoraAdapter adapter = fixtureAdapter(folder.config(), kFixtures[0]);
  train::writePeftAdapter(path("refuse"), adapter, "m");
  const fs::path configPath = path("refuse") / "adapter_config.json";
  const json good = readJson(configPath);
  const auto refusedWith = [&](const json& edited, const std::string& fragment) {
    writeText(configPath, edited.dump());
    const bool ok =
        throwsNaming<CheckpointError>([&] { train::readPeftAdapter(path("refuse")); }, fragment);
    writeText(configPath, good.dump());
    return ok;
  };
  json edited = good;
  edited["use_dora"] = true;
  VERIFY(refusedWith(edited, "DoRA"));
  edited = good;
  edited["target_modules"] = ".*proj";
  VERIFY(refusedWith(edited, "regex"));
  edited = good;
  edited["rank_pattern"] = {{"q_proj", 8}};
  VERIFY(refusedWith(edited, "rank_pattern"));
  edited = good;
  edited["r"] = 8;  // the tensors hold r = 4
  VERIFY(refusedWith(edited, "with r = 8"));
  edited = good;
  edited.erase("lora_alpha");
  VERIFY(refusedWith(edited, "'lora_alpha' is missing"));
  // Issue 31 item 8: read whole, not cut to 32 bits (2^32 + 8 was read as 8, 2^31 as -2^31).
  edited = good;
  edited["r"] = (std::uint64_t{1} << 32) + 4;
  VERIFY(refusedWith(edited, "r must be a whole number from 1 to 4096, got 4294967300"));
  edited["r"] = std::uint64_t{1} << 31;
  VERIFY(refusedWith(edited, "got 2147483648"));
  edited["r"] = std::numeric_limits<std::uint64_t>::max();
  VERIFY(refusedWith(edited, "got 18446744073709551615"));
  edited = good;
  edited["layers_to_transform"] = json::array({0, (std::uint64_t{1} << 32)});
  VERIFY(refusedWith(edited, "layers_to_transform[1] must be a whole number from 0 to"));
  edited["layers_to_transform"] = json::array({"0"});
  VERIFY(refusedWith(edited, "layers_to_transform[0] must be a whole number"));
  edited["layers_to_transform"] = -1;
  VERIFY(refusedWith(edited, "layers_to_transform must be a whole number from 0 to"));

  // A B without its A, and a tensor that is no LoRA weight.
  std::vector<float> b(32 * 4, 0.5f);
  train::writeSafetensors(
      path("refuse") / "adapter_model.safetensors",
      std::vector{train::f32TensorToWrite(
          "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight", {32, 4}, b)},
      {{"format", "pt"}});
  VERIFY(throwsNaming<CheckpointError>([&] { train::readPeftAdapter(path("refuse")); },
                                       "down_proj.lora_A.weight' is missing"));
  train::writeSafetensors(
      path("refuse") / "adapter_model.safetensors",
      std::vector{train::f32TensorToWrite("base_model.model.lm_head.weight", {32, 4}, b)},
      {{"format", "pt"}});
  VERIFY(throwsNaming<CheckpointError>([&] { train::readPeftAdapter(path("refuse")); },
                                       "'base_model.model.lm_head.weight' is not a LoRA"));
  fs::remove(path("refuse") / "adapter_model.safetensors");
  VERIFY(throwsNaming<CheckpointError>([&] { train::readPeftAdapter(path("refuse")); },
                                       "adapter_model.safetensors: is missing"));
}

TEST_CASE(refusesAnAdapterOfAnotherModel) {
  const model::ModelFolder llama = openFixture("llama_f32_legacy_rope");
  const model::ModelFolder qwen = openFixture("qwen2_bf16_sharded_linear_rope");  // 1 KV head
  const train::LoraAdapter adapter = fixtureAdapter(llama.config(), kFixtures[0]);
  VERIFY(throwsNaming<CheckpointError>(
      [&] { train::checkAdapterFitsModel(adapter, qwen.config(), "adapter"); },
      "layer 0 self_attn.k_proj: adapter is 32 → 16 features but the model's projection is 32 → "
      "8"));
  VERIFY(throwsNaming<CheckpointError>(
      [&] { train::mergeAdapterIntoModel(qwen.dir(), adapter, path("wrong")); },
      "trained for another model?"));
  VERIFY(!fs::exists(path("wrong")));
}

TEST_CASE(mergeAddsScaledProductInTheStoredDtype) {
  const std::string base = kModelDataDir + "/qwen2_bf16_sharded_linear_rope";
  const model::ModelFolder folder = model::ModelFolder::open(base);
  const train::LoraAdapter adapter = fixtureAdapter(folder.config(), kFixtures[1]);
  const train::MergeReport report =
      train::mergeAdapterIntoModel(base, adapter, path("merged-bf16"));
  COMPARE(report.mergedTensors, std::int64_t{4});
  VERIFY(fs::exists(path("merged-bf16") / "model.safetensors.index.json"));
  VERIFY(fs::exists(path("merged-bf16") / "config.json"));
  const model::ModelFolder merged = model::ModelFolder::open(path("merged-bf16").string());
  COMPARE(merged.files().size(), folder.files().size());
  COMPARE(report.mergedTensors + report.copiedTensors,
          static_cast<std::int64_t>(folder.tensors().size()));
  const double scale = adapter.config.scale();  // rsLoRA: 6 / √2
  VERIFY(std::fabs(scale - 6.0 / std::sqrt(2.0)) < 1e-12);
  const train::LoraWeights& v = *adapter.find(1, train::LoraModule::V);
  const compute::Tensor before = folder.weights().layers[1].v;
  const compute::Tensor after = merged.weights().layers[1].v;
  COMPARE(after.dtype(), compute::DType::BF16);
  const std::int64_t out = v.site.outFeatures, in = v.site.inFeatures;
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t i = 0; i < in; ++i) {
      double delta = 0;
      for (int k = 0; k < 2; ++k)
        delta += double{v.b[static_cast<std::size_t>(o * 2 + k)]} *
                 v.a[static_cast<std::size_t>(k * in + i)];
      const float want = compute::bf16ToFloat(before.as<std::uint16_t>()[o * in + i]) +
                         static_cast<float>(scale * delta);
      const float got = compute::bf16ToFloat(after.as<std::uint16_t>()[o * in + i]);
      VERIFY2(std::fabs(got - want) <= std::fabs(want) / 128.0f + 1e-6f,
              lstest::format("v[%lld, %lld]: %g vs %g", static_cast<long long>(o),
                             static_cast<long long>(i), got, want));
    }
  }
  // Projections and layers outside the adapter are copied bit for bit.
  const compute::Tensor gateBefore = folder.weights().layers[0].q;
  VERIFY(std::memcmp(gateBefore.data(), merged.weights().layers[0].q.data(), gateBefore.bytes()) ==
         0);
  VERIFY(std::memcmp(folder.weights().embed.data(), merged.weights().embed.data(),
                     folder.weights().embed.bytes()) == 0);
}

TEST_CASE(mergedLossEqualsAdapterLoss) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const train::LoraAdapter adapter = fixtureAdapter(folder.config(), kFixtures[0]);
  train::mergeAdapterIntoModel(folder.dir(), adapter, path("merged-f32"));
  const model::ModelFolder merged = model::ModelFolder::open(path("merged-f32").string());
  const std::vector<std::int32_t> ids = fixtureIds(folder.config().vocabSize);
  const std::vector<std::int32_t>& labels = ids;
  auto backend = compute::createCpuBackend();
  train::TrainGraph graph(*backend, folder.config(), folder.weights(), adapter);
  const train::LossSum withAdapter = graph.forwardLoss({2, 9, ids, labels});
  const model::ForwardResult plain =
      model::forward(*backend, merged.config(), merged.weights(), {2, 9, ids, labels});
  const double adapterLoss = withAdapter.sum / static_cast<double>(withAdapter.predictedTokens);
  VERIFY2(std::fabs(adapterLoss - *plain.loss) < 1e-5,
          lstest::format("adapter %g vs merged %g", adapterLoss, *plain.loss));
  const model::ForwardResult baseOnly =
      model::forward(*backend, folder.config(), folder.weights(), {2, 9, ids, labels});
  VERIFY(std::fabs(*baseOnly.loss - *plain.loss) > 1e-3);  // the adapter does change the model
}

TEST_CASE(aKilledMergesFolderIsRemovedByTheNextMerge) {
  // Issue 31 item 8: a killed `export --merge` left its staging folder (318 MB) behind.
  const fs::path parent = path("merges");
  const fs::path killed = parent / "merged.tmp-999999999";  // no process has that id
  fs::create_directories(killed);
  writeText(killed / ".lorascope-merge-staging", "");
  writeText(killed / "model.safetensors", "half written");
  const fs::path foreign = parent / "notes.tmp-999999999";  // not a merge's: kept
  fs::create_directories(foreign);
  writeText(foreign / "mine.txt", "the user's");
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  train::mergeAdapterIntoModel(folder.dir(), fixtureAdapter(folder.config(), kFixtures[0]),
                               parent / "merged");
  VERIFY(!fs::exists(killed));
  VERIFY(fs::exists(foreign / "mine.txt"));
  VERIFY(fs::exists(parent / "merged" / "config.json"));
  VERIFY(!fs::exists(parent / "merged" / ".lorascope-merge-staging"));
}

TEST_CASE(mergeRefusesAnExistingFolder) {
  fs::create_directories(path("exists"));
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  VERIFY(throwsNaming<CheckpointError>(
      [&] {
        train::mergeAdapterIntoModel(folder.dir(), fixtureAdapter(folder.config(), kFixtures[0]),
                                     path("exists"));
      },
      "already exists"));
}

// The folders the device machine's check reads: the base model, our adapter, our merge and the
// ids of each case, and the built-in demo model. Written into the build tree (carried there).
TEST_CASE(writesTheDeviceCheckFixtures) {
  json index = json::array();
  for (const FixtureSpec& spec : kFixtures) {
    const fs::path root = fs::path(kPeftFixtureDir) / spec.name;
    fs::remove_all(root);
    fs::create_directories(root);
    const fs::path base = fs::path(kModelDataDir) / spec.name;
    const model::ModelFolder folder = model::ModelFolder::open(base.string());
    const train::LoraAdapter adapter = fixtureAdapter(folder.config(), spec);
    train::writePeftAdapter(root / "adapter", adapter, spec.name);
    train::mergeAdapterIntoModel(base, adapter, root / "merged");
    fs::copy(base, root / "base");
    const std::vector<std::int32_t> ids = fixtureIds(folder.config().vocabSize);
    index.push_back({{"name", spec.name}, {"lora", spec.config}, {"ids", ids}});
  }
  writeText(fs::path(kPeftFixtureDir) / "fixtures.json", index.dump(2));
  fs::remove_all(fs::path(kPeftFixtureDir) / "demo");
  train::writeUntrainedDemoModel(fs::path(kPeftFixtureDir) / "demo");  // checked by test_demo
  VERIFY(fs::exists(fs::path(kPeftFixtureDir) / kFixtures[1].name / "merged" / "config.json"));
}

TEST_CASE(mergedLogitsMatchPeftReference) {
  const fs::path reference = fs::path(kPeftReferenceDir) / "peft_check.json";
  if (!fs::exists(reference))
    SKIP("no committed reference (run scripts/reference/peft_check.py on the device machine)");
  const json doc = readJson(reference);
  for (const FixtureSpec& spec : kFixtures) {
    const json& result = doc.at("fixtures").at(spec.name);
    const fs::path base = fs::path(kModelDataDir) / spec.name;
    const model::ModelFolder folder = model::ModelFolder::open(base.string());
    const train::LoraAdapter adapter = fixtureAdapter(folder.config(), spec);
    const fs::path mergedDir = path(std::string("ref-") + spec.name);
    train::mergeAdapterIntoModel(base, adapter, mergedDir);
    const std::vector<std::int32_t> ids = fixtureIds(folder.config().vocabSize);
    COMPARE(result.at("ids").get<std::vector<std::int32_t>>(), ids);
    const std::vector<float> ours = forwardLogits(mergedDir, ids);
    const std::vector<float> peft = result.at("peft_logits").get<std::vector<float>>();
    const double tolerance = result.at("tolerance").get<double>();
    VERIFY(closeRelativeToMax(ours, peft, tolerance, std::string(spec.name) + " merged vs PEFT"));
  }
}

// PEFT's save_pretrained of the adapter it loaded from our files (recorded by peft_check.py):
// the same tensor keys and shapes, the same metadata, the same adapter_config.json fields and
// values (target_modules is a set in PEFT, so its order is free; peft_version names PEFT's own
// release and is not written by us).
TEST_CASE(filesMatchWhatPeftSaves) {
  const fs::path reference = fs::path(kPeftReferenceDir) / "peft_check.json";
  if (!fs::exists(reference))
    SKIP("no committed reference (run scripts/reference/peft_check.py on the device machine)");
  const json doc = readJson(reference);
  for (const FixtureSpec& spec : kFixtures) {
    const json& saved = doc.at("fixtures").at(spec.name).at("peft_saved");
    const model::ModelFolder folder = openFixture(spec.name);
    const fs::path dir = path(std::string("saved-") + spec.name);
    train::writePeftAdapter(dir, fixtureAdapter(folder.config(), spec), spec.name);
    json header = headerOf(dir / "adapter_model.safetensors");
    COMPARE(header.at("__metadata__"), saved.at("metadata"));
    header.erase("__metadata__");
    COMPARE(header.size(), saved.at("tensors").size());
    for (const auto& [key, shape] : saved.at("tensors").items()) {
      VERIFY2(header.contains(key), key.c_str());
      COMPARE(header.at(key).at("shape"), shape);
    }
    json ours = readJson(dir / "adapter_config.json");
    json theirs = saved.at("adapter_config");
    theirs.erase("peft_version");
    auto sorted = [](json list) {
      std::sort(list.begin(), list.end());
      return list;
    };
    COMPARE(sorted(ours.at("target_modules")), sorted(theirs.at("target_modules")));
    ours.erase("target_modules");
    theirs.erase("target_modules");
    for (const auto& [key, value] : theirs.items()) {
      VERIFY2(ours.contains(key), key.c_str());
      VERIFY2(ours.at(key) == value,
              key + ": ours " + ours.at(key).dump() + ", PEFT " + value.dump());
    }
    COMPARE(ours.size(), theirs.size());
  }
}
