// make_demo_base.cpp — lorascope-make-demo-base: trains the demo base's pretraining adapter
// (train/DemoModel.h) and writes its tensors to the file scripts/make-demo-base.sh commits,
// backend/train/demo_base/pretraining_adapter.safetensors. It trains a LoRA of rank
// kDemoBaseRank on every projection of the pretraining start, on the pretraining tasks of
// train/DemoDataset.h (copying a word, writing it in lower case), on the CPU, then says how many
// of those tasks' prompts the base with it merged answers right.
//
//   lorascope-make-demo-base OUT.safetensors [--steps N] [--lr RATE] [--batch-size N]
//
// A maintainer's tool, run when the demo's model or tasks change (then bump kDemoModelName).
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>

#include "common/DurableFile.h"
#include "common/OsError.h"  // defines: pathText
#include "compute/Backend.h"
#include "job/Generation.h"
#include "model/ModelFolder.h"
#include "train/DemoDataset.h"
#include "train/DemoModel.h"
#include "train/Merge.h"
#include "train/PeftExport.h"
#include "train/TrainLoop.h"
#include "train/TrainingData.h"

namespace fs = std::filesystem;
using namespace lorascope;

namespace {

struct Options {
  fs::path out;
  std::int64_t steps = 500;
  double learningRate = 3e-3;
  std::int64_t batchSize = 16;
};

Options parse(int argc, char** argv) {
  Options o;
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0) {
      if (i + 1 >= argc)
        throw std::invalid_argument(arg + " needs a value");
      values[arg] = argv[++i];
    } else if (o.out.empty()) {
      o.out = common::pathFromUtf8(arg);
    } else {
      throw std::invalid_argument("one output file only, got " + arg);
    }
  }
  if (o.out.empty())
    throw std::invalid_argument(
        "usage: lorascope-make-demo-base OUT.safetensors [--steps N] "
        "[--lr RATE] [--batch-size N]");
  for (const auto& [name, value] : values) {
    if (name == "--steps")
      o.steps = std::stoll(value);
    else if (name == "--lr")
      o.learningRate = std::stod(value);
    else if (name == "--batch-size")
      o.batchSize = std::stoll(value);
    else
      throw std::invalid_argument("unknown option " + name);
  }
  return o;
}

// How many of the pretraining tasks' prompts the base with the adapter merged answers right
// (greedy, the reply beginning with the answer), and the first wrong replies.
void reportPretraining(const fs::path& baseDir) {
  job::TextGenerator generator(common::pathText(baseDir), "", "cpu", [](const std::string&) {});
  job::SamplingOptions greedy;
  greedy.maxNewTokens = 16;
  int right = 0;
  int shown = 0;
  const std::vector<train::DemoExample> examples = train::demoPretrainingExamples(100);
  for (const train::DemoExample& e : examples) {
    const std::string reply =
        generator.generate(generator.promptIds(e.prompt, "", true), greedy).text;
    if (reply.rfind(e.answer, 0) == 0) {
      ++right;
    } else if (shown++ < 5) {
      std::printf("  wrong: %s -> %s\n", e.prompt.c_str(), reply.c_str());
    }
  }
  std::printf("make-demo-base: the base answers %d of %zu pretraining prompts right\n", right,
              examples.size());
}

int run(const Options& o) {
  const auto started = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  const fs::path work = o.out.parent_path() / (".make-demo-base" + common::tempSuffix());
  fs::remove_all(work);
  const fs::path start = work / "start";
  train::writeDemoPretrainingStart(start);
  const fs::path data = work / "pretraining.jsonl";
  common::writeFileDurably(
      data,
      train::demoJsonl(train::demoPretrainingExamples(static_cast<int>(o.steps * o.batchSize))));
  constexpr std::int64_t kMaxSeqLen = 96;
  train::TrainingData examples = train::loadTrainingData(data, start, kMaxSeqLen);
  const model::ModelFolder folder = model::ModelFolder::open(common::pathText(start));
  auto backend = compute::createCpuBackend();
  train::TrainConfig config;
  config.lora = train::demoBaseLoraConfig();
  config.adamw.learningRate = o.learningRate;
  config.schedule = train::ScheduleKind::Cosine;
  config.warmupSteps = 20;
  config.maxSteps = o.steps;
  config.microBatchSize = o.batchSize;
  config.maxSeqLen = kMaxSeqLen;
  config.shuffle = false;  // the examples are drawn at random already
  train::TrainLoop loop(*backend, folder.config(), folder.weights(), std::move(examples.examples),
                        config);
  double recent = 0.0;
  loop.run([&](const train::StepMetrics& m) {
    recent += m.loss;
    if (m.step % 50 == 0 || m.step == o.steps) {
      std::printf("step %lld/%lld: loss %.4f (mean of the last 50 steps), %.0f s\n",
                  static_cast<long long>(m.step), static_cast<long long>(o.steps),
                  recent / (m.step % 50 == 0 ? 50 : static_cast<double>(m.step % 50)), seconds());
      std::fflush(stdout);
      recent = 0.0;
    }
  });
  train::writePeftAdapter(work / "adapter", loop.state().adapter, train::kDemoModelName);
  train::mergeAdapterIntoModel(start, loop.state().adapter, work / "base");
  reportPretraining(work / "base");
  fs::create_directories(o.out.parent_path());
  fs::copy_file(work / "adapter" / train::kAdapterWeightsFile, o.out,
                fs::copy_options::overwrite_existing);
  fs::remove_all(work);
  std::printf("make-demo-base: %s written (%llu bytes) in %.0f s\n",
              common::pathText(o.out).c_str(),
              static_cast<unsigned long long>(fs::file_size(o.out)), seconds());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make-demo-base: %s\n", e.what());
    return 1;
  }
}
