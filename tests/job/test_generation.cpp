// test_generation.cpp — generation (model/KvCache.h, job/Generation.h) against transformers'
// greedy generate on the tiny reference models (scripts/reference/generate.py, fp32 on the CPU,
// so the CPU path must give the same ids), with and without the reference LoRA adapter; the
// cache against the uncached forward; seeded top-p sampling; where adapters are found; and
// `generate --quantize nf4`: the NF4 base, alone and with an adapter, against
// scripts/reference/qlora_curve.py's greedy decoding (float64 on the same dequantised weights).
#include <QtTest>

#include <fstream>
#include <map>

#include "ExpectError.h"
#include "GenerateReference.h"
#include "LoraReference.h"  // tests/train: the QLoRA reference and its initial adapter
#include "TestPaths.h"
#include "job/CliArgs.h"  // defines: UsageError
#include "job/Generation.h"
#include "model/Forward.h"
#include "model/ModelError.h"
#include "model/ModelFolder.h"
#include "train/PeftExport.h"  // defines: writePeftAdapter

using namespace lorascope;

namespace {

const std::string kModelDataDir = lstest::sourcePath("tests/model/data");

std::vector<std::int32_t> eosOf(const std::filesystem::path& dir) {
  const std::set<std::int32_t> ids = job::modelEosIds(dir);
  return {ids.begin(), ids.end()};
}

std::vector<std::int32_t> idsOf(const nlohmann::json& j) {
  return j["ids"].get<std::vector<std::int32_t>>();
}

}  // namespace

class TestGeneration : public QObject {
  Q_OBJECT

 private slots:
  void greedyIdsEqualTransformers();
  void adapterIdsEqualTransformersMerged();
  void cachedStepsEqualTheUncachedForward_data();
  void cachedStepsEqualTheUncachedForward();
  void cacheRefusesToOverflow();
  void samplingIsSeededAndStaysInTheNucleus();
  void adaptersAreFoundInRunsAndFolders();
  void nf4BaseFollowsQloraReference();
};

void TestGeneration::greedyIdsEqualTransformers() {
  const auto cases = test::loadGenerateCases(kModelDataDir);
  QCOMPARE(cases.size(), std::size_t{5});
  auto cpu = compute::createCpuBackend();
  for (const test::GenerateCase& c : cases) {
    const model::ModelFolder folder = model::ModelFolder::open(c.dir.string());
    model::CachedDecoder decoder(*cpu, folder.config(), folder.weights(),
                                 static_cast<std::int64_t>(c.prompt.size() + c.ids.size()));
    std::vector<float> first;
    const auto ids = test::greedyIds(decoder, c.prompt, c.ids.size(), eosOf(c.dir), &first);
    if (ids != c.ids)
      qWarning("%s: ids differ from transformers'", c.name.c_str());
    QVERIFY(ids == c.ids);
    double worst = 0.0;
    for (std::size_t i = 0; i < first.size(); ++i)
      worst = std::max(worst, std::fabs(double{first[i]} - c.firstLogits[i]));
    QVERIFY2(worst < 1e-4, (c.name + ": first-step logits " + std::to_string(worst)).c_str());
  }
}

void TestGeneration::adapterIdsEqualTransformersMerged() {
  int adapters = 0;
  for (const test::GenerateCase& c : test::loadGenerateCases(kModelDataDir)) {
    if (c.adapter.empty())
      continue;
    ++adapters;
    job::TextGenerator generator(c.dir.string(), (c.dir / c.adapter).string(), "cpu",
                                 [](const std::string&) {});
    job::SamplingOptions greedy;
    greedy.maxNewTokens = static_cast<std::int64_t>(c.adapterIds.size());
    std::vector<std::int32_t> streamed;
    const job::GenerationResult result = generator.generate(c.prompt, greedy, {}, [&](auto id) {
      streamed.push_back(id);
      return true;
    });
    QVERIFY(result.ids == c.adapterIds);
    QVERIFY(streamed == result.ids);
    QVERIFY(result.ids != c.ids);  // the adapter changes the answer
    // The base alone, through the same generator path, gives the base reference.
    job::TextGenerator base(c.dir.string(), "", "cpu", [](const std::string&) {});
    QVERIFY(base.generate(c.prompt, greedy).ids == c.ids);
  }
  QCOMPARE(adapters, 1);
}

// Every family's graph through the cache: Qwen3's and Gemma 3's q/k norms and local rope, and
// past the 5-token sliding window of Mistral, Gemma 2 (with its attention and final soft-caps)
// and Gemma 3, so that the cached attention masks and caps as the training forward does.
void TestGeneration::cachedStepsEqualTheUncachedForward_data() {
  QTest::addColumn<QString>("name");
  for (const char* name : {"qwen2_bf16_sharded_linear_rope", "qwen3_f32", "mistral_f32_sliding",
                           "gemma2_f32", "gemma3_f32"}) {
    QTest::newRow(name) << QString(name);
  }
}

void TestGeneration::cachedStepsEqualTheUncachedForward() {
  QFETCH(QString, name);
  const model::ModelFolder folder =
      model::ModelFolder::open(kModelDataDir + "/" + name.toStdString());
  auto cpu = compute::createCpuBackend();
  const std::vector<std::int32_t> ids = {3, 141, 59, 26, 5, 35, 89, 79, 32, 38};
  model::CachedDecoder decoder(*cpu, folder.config(), folder.weights(), 16);
  // The prompt in two pieces, then one token at a time: every step's logits are the uncached
  // forward's at that position.
  std::vector<std::vector<float>> cached;
  cached.push_back(decoder.feed(std::span(ids).subspan(0, 4)));
  cached.push_back(decoder.feed(std::span(ids).subspan(4, 3)));
  for (std::size_t t = 7; t < ids.size(); ++t)
    cached.push_back(decoder.feed(std::span(ids).subspan(t, 1)));
  const auto full = model::forward(*cpu, folder.config(), folder.weights(),
                                   {1, static_cast<std::int64_t>(ids.size()), ids, {}});
  const std::vector<float> logits = cpu->download(full.logits);
  const auto vocab = static_cast<std::size_t>(folder.config().vocabSize);
  const std::vector<std::size_t> positions = {3, 6, 7, 8, 9};
  for (std::size_t i = 0; i < positions.size(); ++i) {
    for (std::size_t v = 0; v < vocab; ++v)
      QVERIFY(std::fabs(cached[i][v] - logits[positions[i] * vocab + v]) < 1e-4f);
  }
  QCOMPARE(decoder.length(), static_cast<std::int64_t>(ids.size()));
}

void TestGeneration::cacheRefusesToOverflow() {
  const model::ModelFolder folder = model::ModelFolder::open(kModelDataDir + "/mistral_f32");
  auto cpu = compute::createCpuBackend();
  model::CachedDecoder decoder(*cpu, folder.config(), folder.weights(), 4);
  decoder.feed(std::vector<std::int32_t>{1, 2, 3});
  QVERIFY(test::throwsWith<model::UnsupportedModelError>(
      [&] {
        decoder.feed(std::vector<std::int32_t>{4, 5});
      },
      {"the KV cache holds 4"}));
  QCOMPARE(decoder.length(), std::int64_t{3});  // the refused feed changed nothing
}

void TestGeneration::samplingIsSeededAndStaysInTheNucleus() {
  // Probabilities ∝ e^logit: 0.64, 0.24, 0.09, 0.03 (and a tail far below).
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f, -1.0f, -20.0f};
  job::SamplingOptions sampling;
  sampling.temperature = 1.0;
  sampling.topP = 0.8;  // the nucleus is tokens 0 and 1 (0.64 + 0.24 ≥ 0.8)
  sampling.seed = 5;
  std::map<std::int32_t, int> counts;
  for (std::uint64_t step = 0; step < 2000; ++step) {
    const std::int32_t id = job::pickToken(logits, sampling, step);
    QCOMPARE(job::pickToken(logits, sampling, step), id);  // a pure function of (seed, step)
    ++counts[id];
  }
  QCOMPARE(counts.size(), std::size_t{2});
  const double share = counts[0] / 2000.0;  // 0.64 / 0.88 ≈ 0.727 within the nucleus
  QVERIFY2(std::fabs(share - 0.727) < 0.04, std::to_string(share).c_str());
  sampling.seed = 6;
  int differs = 0;
  for (std::uint64_t step = 0; step < 50; ++step) {
    job::SamplingOptions five = sampling;
    five.seed = 5;
    differs += job::pickToken(logits, sampling, step) != job::pickToken(logits, five, step);
  }
  QVERIFY(differs > 0);
  sampling.topP = 1e-6;  // only the most likely token is left
  QCOMPARE(job::pickToken(logits, sampling, 7), 0);
  job::SamplingOptions greedy;
  QCOMPARE(job::pickToken(std::vector<float>{1.0f, 3.0f, 3.0f}, greedy, 0), 1);  // first maximum
  greedy.temperature = -1;
  QVERIFY(test::throwsWith<std::invalid_argument>([&] { job::pickToken(logits, greedy, 0); },
                                                  {"temperature"}));
}

void TestGeneration::adaptersAreFoundInRunsAndFolders() {
  QTemporaryDir tmp;
  const std::filesystem::path root = tmp.path().toStdString();
  std::filesystem::create_directories(root / "run" / "adapter");
  std::ofstream(root / "run" / "adapter" / "adapter_config.json") << "{}";
  QCOMPARE(job::resolveAdapterDir(root / "run"), root / "run" / "adapter");
  QCOMPARE(job::resolveAdapterDir(root / "run" / "adapter"), root / "run" / "adapter");
  QVERIFY(test::throwsWith<job::UsageError>([&] { job::resolveAdapterDir(root); },
                                            {"not an adapter (no adapter_config.json)"}));
}

// The NF4 base's greedy ids (first-step logits within 1e-4, as the fp32 CPU path against
// transformers above: both sides compute on the same dequantised weights), the same with the
// reference's initial adapter as a PEFT folder, and without --quantize the stored base's ids,
// which differ: the option is what moves the answer.
void TestGeneration::nf4BaseFollowsQloraReference() {
  const nlohmann::json ref = test::readReference("qlora_llama_f32");
  const nlohmann::json& g = ref["generate"];
  const std::string fixture = ref["fixture"].get<std::string>();
  const std::string modelDir = kModelDataDir + "/" + fixture;
  const auto prompt = g["prompt_ids"].get<std::vector<std::int32_t>>();
  job::SamplingOptions greedy;
  greedy.maxNewTokens = static_cast<std::int64_t>(idsOf(g["base"]).size());
  const auto quiet = [](const std::string&) {};
  job::TextGenerator base(modelDir, "", "cpu", quiet, model::WeightQuantization::Nf4);
  QVERIFY(base.describe().find(", base weights nf4") != std::string::npos);
  QVERIFY(base.generate(prompt, greedy).ids == idsOf(g["base"]));

  const model::ModelFolder folder = model::ModelFolder::open(modelDir);
  auto cpu = compute::createCpuBackend();
  const model::ModelWeights placed =
      model::placeWeights(*cpu, folder.weights(), {}, model::WeightQuantization::Nf4);
  model::CachedDecoder decoder(*cpu, folder.config(), placed,
                               static_cast<std::int64_t>(prompt.size()));
  const std::vector<float> first = decoder.feed(prompt);
  const auto want = g["base"]["first_logits"].get<std::vector<double>>();
  QCOMPARE(first.size(), want.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < first.size(); ++i)
    worst = std::max(worst, std::fabs(first[i] - want[i]));
  QVERIFY2(worst < 1e-4, ("nf4 first-step logits " + std::to_string(worst)).c_str());

  QTemporaryDir tmp;
  const std::filesystem::path adapterDir = std::filesystem::path(tmp.path().toStdString()) / "a";
  train::writePeftAdapter(
      adapterDir,
      test::adapterFrom(test::kTrainDataDir + "/" + fixture + "/lora_init.safetensors",
                        folder.config(), test::referenceLora(ref)),
      modelDir);
  job::TextGenerator tuned(modelDir, adapterDir.string(), "cpu", quiet,
                           model::WeightQuantization::Nf4);
  QVERIFY(tuned.generate(prompt, greedy).ids == idsOf(g["adapter"]));

  job::TextGenerator stored(modelDir, "", "cpu", quiet);
  QVERIFY(stored.describe().find("nf4") == std::string::npos);
  QVERIFY(stored.generate(prompt, greedy).ids == idsOf(g["unquantized_base"]));
  QVERIFY(idsOf(g["unquantized_base"]) != idsOf(g["base"]));
}

QTEST_APPLESS_MAIN(TestGeneration)
#include "test_generation.moc"
