// gpu_generate.cpp — generation with the KV cache on the GPU backend against transformers'
// greedy generate (scripts/reference/generate.py, fp32 on the CPU). Qt-free, label gpu:
//   gpu_generate reference  every reference model: the GPU decoder's greedy ids follow
//                           transformers' at every step whose top-1/top-2 margin is at least
//                           kDecidedMargin (bf16 activations may swap a near tie), its first-step
//                           logits are within bf16 rounding of transformers', and the cached
//                           prompt pass gives the logits of the uncached forward on the GPU
//   gpu_generate adapter    job::TextGenerator on the GPU with the reference PEFT adapter: the
//                           same rule against transformers with the adapter merged
//   gpu_generate nf4        `generate --quantize nf4` on the GPU: the tiny Llama's NF4 base, alone
//                           and with the QLoRA reference's initial adapter, against
//                           scripts/reference/qlora_curve.py's greedy ids (the same rule) and
//                           first-step logits (within bf16 rounding)
// Exit: 0 all checks passed, 1 a check failed, 77 no GPU (SKIP with the reason).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <unistd.h>

#include "GenerateReference.h"
#include "GpuOrSkip.h"
#include "LoraReference.h"  // tests/train: the QLoRA reference and its initial adapter
#include "TestPaths.h"
#include "job/Generation.h"
#include "model/DeviceWeights.h"
#include "model/Forward.h"
#include "model/ModelFolder.h"
#include "train/PeftExport.h"  // defines: writePeftAdapter

using namespace lorascope;

namespace {

const std::string kModelDataDir = lstest::sourcePath("tests/model/data");
// A step whose reference logits have the best token this far (in logits) ahead of the second
// must pick the same token in bf16: rounding moves logits of these models by a few hundredths.
constexpr double kDecidedMargin = 0.25;
// bf16 activations over two layers: logits within this fraction of the largest |logit|.
constexpr double kLogitTolerance = 3e-2;

struct Checks {
  int failed = 0;
  void expect(bool ok, const std::string& what) {
    std::printf("%-4s %s\n", ok ? "ok" : "FAIL", what.c_str());
    std::fflush(stdout);
    failed += ok ? 0 : 1;
  }
};

double maxAbs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v)
    m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

double maxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double m = a.size() == b.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

void caseReference(Checks& checks) {
  auto gpu = test::requireGpu();
  for (const test::GenerateCase& c : test::loadGenerateCases(kModelDataDir)) {
    const model::ModelFolder folder = model::ModelFolder::open(c.dir.string());
    const model::ModelWeights weights = model::placeWeights(*gpu, folder.weights());
    const std::set<std::int32_t> eosIds = job::modelEosIds(c.dir);
    const std::vector<std::int32_t> eos(eosIds.begin(), eosIds.end());
    model::CachedDecoder decoder(*gpu, folder.config(), weights,
                                 static_cast<std::int64_t>(c.prompt.size() + c.ids.size()));
    std::vector<float> first;
    const std::vector<std::int32_t> ids =
        test::greedyIds(decoder, c.prompt, c.ids.size(), eos, &first);
    const int mismatch = test::firstDecidedMismatch(ids, c.ids, c.margins, kDecidedMargin);
    checks.expect(mismatch < 0, c.name + ": greedy ids follow transformers' (first decided " +
                                    "mismatch at step " + std::to_string(mismatch) + ")");
    const double scale = maxAbs(c.firstLogits);
    const double diff = maxDifference(first, c.firstLogits);
    checks.expect(diff <= kLogitTolerance * scale,
                  c.name + ": first-step logits within bf16 rounding (max |diff| " +
                      std::to_string(diff) + " of max |logit| " + std::to_string(scale) + ")");
    // The cache's prompt pass against the uncached forward, both on the GPU.
    const model::ForwardResult full =
        model::forward(*gpu, folder.config(), weights,
                       {1, static_cast<std::int64_t>(c.prompt.size()), c.prompt, {}});
    const std::vector<float> all = gpu->download(full.logits);
    const std::vector<float> last(all.end() - folder.config().vocabSize, all.end());
    const double cacheDiff = maxDifference(first, last);
    checks.expect(cacheDiff <= 1e-2 * scale,
                  c.name + ": cached prompt pass = uncached forward (max |diff| " +
                      std::to_string(cacheDiff) + ")");
  }
}

void caseAdapter(Checks& checks) {
  test::requireGpu();
  for (const test::GenerateCase& c : test::loadGenerateCases(kModelDataDir)) {
    if (c.adapter.empty())
      continue;
    job::TextGenerator generator(c.dir.string(), (c.dir / c.adapter).string(), "gpu",
                                 [](const std::string&) {});
    job::SamplingOptions greedy;
    greedy.maxNewTokens = static_cast<std::int64_t>(c.adapterIds.size());
    const job::GenerationResult result = generator.generate(c.prompt, greedy);
    const int mismatch =
        test::firstDecidedMismatch(result.ids, c.adapterIds, c.adapterMargins, kDecidedMargin);
    checks.expect(mismatch < 0, c.name + " + adapter on " + generator.describe() +
                                    ": greedy ids follow transformers' with the adapter merged "
                                    "(first decided mismatch at step " +
                                    std::to_string(mismatch) + ")");
  }
}

void caseNf4(Checks& checks) {
  auto gpu = test::requireGpu();
  const nlohmann::json ref = test::readReference("qlora_llama_f32");
  const nlohmann::json& g = ref["generate"];
  const std::string fixture = ref["fixture"].get<std::string>();
  const std::string modelDir = kModelDataDir + "/" + fixture;
  const model::ModelFolder folder = model::ModelFolder::open(modelDir);
  const auto prompt = g["prompt_ids"].get<std::vector<std::int32_t>>();
  const model::ModelWeights placed =
      model::placeWeights(*gpu, folder.weights(), {}, model::WeightQuantization::Nf4);
  model::CachedDecoder decoder(*gpu, folder.config(), placed,
                               static_cast<std::int64_t>(prompt.size()));
  const std::vector<float> first = decoder.feed(prompt);
  const auto want = g["base"]["first_logits"].get<std::vector<float>>();
  const double scale = maxAbs(want);
  const double diff = maxDifference(first, want);
  checks.expect(diff <= kLogitTolerance * scale,
                "nf4 base: first-step logits within bf16 rounding (max |diff| " +
                    std::to_string(diff) + " of max |logit| " + std::to_string(scale) + ")");
  const std::filesystem::path adapterDir =
      std::filesystem::temp_directory_path() /
      ("lorascope-gpu_generate-nf4-" + std::to_string(::getpid()));
  train::writePeftAdapter(
      adapterDir,
      test::adapterFrom(test::kTrainDataDir + "/" + fixture + "/lora_init.safetensors",
                        folder.config(), test::referenceLora(ref)),
      modelDir);
  for (const char* which : {"base", "adapter"}) {
    const bool adapter = std::string(which) == "adapter";
    job::TextGenerator generator(
        modelDir, adapter ? adapterDir.string() : "", "gpu", [](const std::string&) {},
        model::WeightQuantization::Nf4);
    const auto ids = g[which]["ids"].get<std::vector<std::int32_t>>();
    job::SamplingOptions greedy;
    greedy.maxNewTokens = static_cast<std::int64_t>(ids.size());
    const int mismatch = test::firstDecidedMismatch(
        generator.generate(prompt, greedy).ids, ids,
        g[which]["top2_margins"].get<std::vector<double>>(), kDecidedMargin);
    checks.expect(mismatch < 0, generator.describe() +
                                    ": greedy ids follow qlora_curve.py's (first decided "
                                    "mismatch at step " +
                                    std::to_string(mismatch) + ")");
  }
  std::filesystem::remove_all(adapterDir);
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<void(Checks&)>> cases = {
      {"reference", caseReference}, {"adapter", caseAdapter}, {"nf4", caseNf4}};
  const auto it = argc == 2 ? cases.find(argv[1]) : cases.end();
  if (it == cases.end()) {
    std::fprintf(stderr, "usage: gpu_generate reference|adapter|nf4\n");
    return 2;
  }
  Checks checks;
  try {
    it->second(checks);
  } catch (const test::NoGpu& none) {
    return test::skipWithoutGpu(std::string("gpu_generate ") + argv[1], none.reason);
  } catch (const std::exception& e) {
    checks.expect(false, std::string("gpu_generate ") + argv[1] + " threw: " + e.what());
  }
  if (test::loadGenerateCases(kModelDataDir).empty()) {
    checks.expect(false, "no generate.json under " + kModelDataDir +
                             " (scripts/reference/generate.py writes them)");
  }
  return checks.failed == 0 ? 0 : 1;
}
