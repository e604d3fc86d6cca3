// test_non_finite.cpp — NaN never passes silently (issue 20 item 3): options that are not finite
// are refused, a step whose loss is not finite changes nothing and says so, and enough of them in
// a row stop the run with the last finite adapter.
#include "TempDir.h"
#include "TestRunner.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "TrainExamples.h"
#include "TrainTestUtil.h"
#include "common/OsError.h"  // defines: pathText
#include "train/Merge.h"
#include "train/PeftExport.h"
#include "train/TrainLoop.h"

using namespace lorascope;
using namespace lorascope::test;
namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The small run without dropout or accumulation, at the default seed.
train::TrainConfig smallConfig() {
  train::TrainConfig c = smallTrainConfig();
  c.lora.dropout = 0.0;
  c.gradAccumulation = 1;
  c.seed = train::TrainConfig{}.seed;
  return c;
}

// A copy of the fixture `name` whose tensor `tensor` has a NaN as its first element.
fs::path fixtureWithNaN(const lstest::TempDir& dir, const std::string& name,
                        const std::string& tensor) {
  const fs::path to = fs::path(dir.path()) / name;
  fs::copy(kModelDataDir + "/" + name, to, fs::copy_options::recursive);
  std::fstream file(to / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  std::uint64_t headerBytes = 0;
  file.read(reinterpret_cast<char*>(&headerBytes), sizeof headerBytes);
  std::string header(headerBytes, '\0');
  file.read(header.data(), static_cast<std::streamsize>(headerBytes));
  const auto offset = nlohmann::json::parse(header).at(tensor).at("data_offsets").at(0).get<long>();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  file.seekp(static_cast<std::streamoff>(8 + headerBytes) + offset);
  file.write(reinterpret_cast<const char*>(&nan), sizeof nan);
  return to;
}

bool allFinite(const train::LoraAdapter& adapter) {
  for (const train::LoraWeights& w : adapter.weights) {
    for (const auto* values : {&w.a, &w.b}) {
      for (const float v : *values) {
        if (!std::isfinite(v))
          return false;
      }
    }
  }
  return true;
}

}  // namespace

TEST_CASE(weightDecayNanAndOtherNonFiniteOptionsAreRefused) {
  // `train --demo --weight-decay nan` used to finish "done" with an all-NaN adapter.
  const std::vector<std::pair<const char*, std::function<void(train::TrainConfig&)>>> cases = {
      {"weight decay", [](auto& c) { c.adamw.weightDecay = kNaN; }},
      {"learning rate", [](auto& c) { c.adamw.learningRate = kInf; }},
      {"adam beta2", [](auto& c) { c.adamw.beta2 = kNaN; }},
      {"adam epsilon", [](auto& c) { c.adamw.epsilon = -kInf; }},
      {"max grad norm", [](auto& c) { c.maxGradNorm = kNaN; }},
      {"lora alpha", [](auto& c) { c.lora.alpha = kInf; }},
      {"lora dropout", [](auto& c) { c.lora.dropout = kNaN; }},
  };
  for (const auto& [field, spoil] : cases) {
    train::TrainConfig config = smallConfig();
    spoil(config);
    VERIFY2(throwsNaming<std::invalid_argument>([&] { config.validate(); },
                                                std::string(field) + " must be a finite number"),
            field);
  }
  train::TrainConfig negative = smallConfig();
  negative.adamw.weightDecay = -0.1;
  VERIFY(throwsNaming<std::invalid_argument>([&] { negative.validate(); }, "weight decay"));
  smallConfig().validate();  // the ordinary config passes
}

TEST_CASE(nanBaseWeightSkipsUpdatesThenStopsWithTheLastFiniteAdapter) {
  // One NaN weight in the base model used to give a "done" run with an all-NaN adapter.
  const lstest::TempDir dir;
  const model::ModelFolder folder = model::ModelFolder::open(
      common::pathText(fixtureWithNaN(dir, "llama_f32_legacy_rope", "model.norm.weight")));
  auto backend = compute::createCpuBackend();
  train::TrainConfig config = smallConfig();
  config.nonFiniteStepLimit = 3;
  train::TrainLoop loop(*backend, folder.config(), folder.weights(), syntheticExamples(8, 3),
                        config);
  const train::LoraAdapter before = loop.state().adapter;
  for (int i = 1; i <= 2; ++i) {
    const train::StepMetrics m = loop.step();
    VERIFY(std::isnan(m.loss));
    VERIFY2(m.nonFinite.find("not finite") != std::string::npos, m.nonFinite.c_str());
    VERIFY2(
        m.nonFinite.find("update was skipped (" + std::to_string(i) + " of 3") != std::string::npos,
        m.nonFinite.c_str());
  }
  VERIFY(throwsNaming<train::NonFiniteTraining>([&] { loop.step(); },
                                                "3 steps in a row were not finite"));
  COMPARE(loop.state().step, std::int64_t{2});  // the third step did not complete
  VERIFY(allFinite(loop.state().adapter));
  for (std::size_t i = 0; i < before.weights.size(); ++i) {
    VERIFY(bitIdentical(loop.state().adapter.weights[i].a, before.weights[i].a));
    VERIFY(bitIdentical(loop.state().adapter.weights[i].b, before.weights[i].b));
  }
  // A limit of 1 stops at the first such step.
  config.nonFiniteStepLimit = 1;
  train::TrainLoop strict(*backend, folder.config(), folder.weights(), syntheticExamples(8, 3),
                          config);
  VERIFY(throwsNaming<train::NonFiniteTraining>([&] { strict.step(); }, "1 steps in a row"));
  COMPARE(strict.state().step, std::int64_t{0});
}

TEST_CASE(exportAndMergeRefuseANanAdapter) {
  // `export --merge` used to write a model that was 98% NaN from an all-NaN adapter.
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  train::LoraConfig lora;
  lora.rank = 4;
  train::LoraAdapter adapter =
      train::createLoraAdapter(lora, train::modelLoraSites(folder.config()), 7);
  adapter.weights[3].b[5] = std::numeric_limits<float>::quiet_NaN();
  const lstest::TempDir dir;
  const fs::path out = fs::path(dir.path()) / "adapter";
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] { train::writePeftAdapter(out, adapter, folder.dir()); },
      train::peftKey(adapter.weights[3].site, false) + " element 5 is nan (not finite)"));
  VERIFY(!fs::exists(out));
  const fs::path merged = fs::path(dir.path()) / "merged";
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] { train::mergeAdapterIntoModel(folder.dir(), adapter, merged); }, "not finite"));
  VERIFY(!fs::exists(merged));
  adapter.weights[3].b[5] = 0.0f;
  train::writePeftAdapter(out, adapter, folder.dir());  // a finite one is written
  VERIFY(fs::exists(out / train::kAdapterWeightsFile));
}

TEST_CASE(inspectModelCheckFindsTheNanWeight) {
  const lstest::TempDir dir;
  const model::ModelFolder bad = model::ModelFolder::open(
      common::pathText(fixtureWithNaN(dir, "llama_f32_legacy_rope", "model.norm.weight")));
  const auto found = bad.findNonFiniteWeights();
  COMPARE(found.size(), std::size_t{1});
  COMPARE(found[0].name, std::string("model.norm.weight"));
  COMPARE(found[0].count, std::int64_t{1});
  COMPARE(found[0].firstIndex, std::int64_t{0});
  // bf16 weights are checked as stored too.
  const model::ModelFolder bf16 = openFixture("llama_bf16_sharded_tied");
  VERIFY(bf16.findNonFiniteWeights().empty());
  VERIFY(openFixture("llama_f32_legacy_rope").findNonFiniteWeights().empty());
}

TEST_CASE(configWithFewerLayersThanTheWeightsIsRefused) {
  // Issue 20 item 9: the tensors of layers past num_hidden_layers used to be ignored silently.
  const lstest::TempDir dir;
  const fs::path to = fs::path(dir.path()) / "fewer_layers";
  fs::copy(kModelDataDir + "/llama_f32_legacy_rope", to, fs::copy_options::recursive);
  nlohmann::json config;
  std::ifstream(to / "config.json") >> config;
  const int layers = config.at("num_hidden_layers").get<int>();
  VERIFY(layers >= 2);
  config["num_hidden_layers"] = layers - 1;
  std::ofstream(to / "config.json") << config.dump();
  VERIFY(throwsNaming<std::exception>([&] { model::ModelFolder::open(to.string()); },
                                      "of layer " + std::to_string(layers - 1) +
                                          ", but config.json has " + std::to_string(layers - 1) +
                                          " layers"));
}
