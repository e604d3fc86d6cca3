// cli/cmd_bench.cpp — `lorascope-train bench`: tokens/s of one LoRA optimizer step (forward +
// backward + clip + AdamW) on the CPU backend, for the two shapes of the performance target:
//   tiny   Llama, hidden 256, 4 layers, 4 heads, 2 KV heads, intermediate 688, vocab 2000, tied,
//          batch 4 × seq 256
//   qwen   Qwen2.5-0.5B-shaped, hidden 896, 24 layers, 14 heads, 2 KV heads, intermediate 4864,
//          vocab 151936, tied, q/k/v biases, batch 1 × seq 256
// both with LoRA r8 (alpha 16) on q,k,v,o,gate,up,down, fp32, at each thread count given. The
// weights are random (std 1/√in, norms 1): speed does not depend on their values. PyTorch's side
// of the comparison is scripts/reference/bench_lora_torch.py (same shapes, same flags).
//
//   lorascope-train bench [--model tiny|qwen|all] [--threads 1,2,16] [--steps N]
//                         [--checkpointing] [--profile]
//
// Peak RSS is the process's (common::peakResidentBytes: getrusage, the peak working set on
// Windows), so it covers every model benchmarked so far: run one
// model per process for each model's own figure.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/Commands.h"
#include "common/Platform.h"  // defines: peakResidentBytes
#include "compute/Backend.h"
#include "compute/CpuControl.h"  // defines: setCpuThreads, blasDescription, simdLevelInUse, ...
#include "job/CliArgs.h"
#include "model/ReferenceShapes.h"
#include "train/TrainLoop.h"

namespace lorascope::cli {
namespace {

struct BenchShape {
  std::string name;
  model::ModelConfig config;
  std::int64_t batch = 0;
  std::int64_t seq = 0;
};

// A tied decoder with head_dim 64, as both benchmark models are.
model::ModelConfig decoder(model::Family family, std::int64_t vocab, std::int64_t hidden,
                           std::int64_t intermediate, std::int64_t layers, std::int64_t heads,
                           std::int64_t kvHeads) {
  model::ModelConfig c;
  c.family = family;
  c.modelType = model::familyName(family);
  c.vocabSize = vocab;
  c.hiddenSize = hidden;
  c.intermediateSize = intermediate;
  c.numLayers = layers;
  c.numHeads = heads;
  c.numKvHeads = kvHeads;
  c.headDim = 64;
  c.tieWordEmbeddings = true;
  return c;
}

BenchShape tinyLlama() {
  model::ModelConfig c = decoder(model::Family::Llama, 2000, 256, 688, 4, 4, 2);
  c.rmsNormEps = 1e-5;
  return {"tiny llama (H256 L4 heads4 kv2 I688 V2000 tied)", c, 4, 256};
}

BenchShape qwenHalfB() {
  return {"qwen2.5-0.5B shape (H896 L24 heads14 kv2 I4864 V151936 tied)", model::qwen25HalfBShape(),
          1, 256};
}

compute::Tensor randomTensor(compute::Backend& backend, std::mt19937& rng, std::int64_t out,
                             std::int64_t in) {
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(in)));
  std::vector<float> v(static_cast<std::size_t>(out * in));
  for (float& x : v) {
    x = normal(rng);
  }
  return in == 1 ? backend.upload(v, compute::DType::F32, {out})
                 : backend.upload(v, compute::DType::F32, {out, in});
}

model::ModelWeights randomWeights(compute::Backend& backend, const model::ModelConfig& c) {
  std::mt19937 rng(1);
  const std::vector<float> ones(static_cast<std::size_t>(c.hiddenSize), 1.0f);
  model::ModelWeights w;
  w.embed = randomTensor(backend, rng, c.vocabSize, c.hiddenSize);
  w.lmHead = w.embed;
  w.finalNorm = backend.upload(ones, compute::DType::F32, {c.hiddenSize});
  const std::int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  for (std::int64_t l = 0; l < c.numLayers; ++l) {
    model::LayerWeights layer;
    layer.inputNorm = backend.upload(ones, compute::DType::F32, {c.hiddenSize});
    layer.postNorm = backend.upload(ones, compute::DType::F32, {c.hiddenSize});
    layer.q = randomTensor(backend, rng, q, c.hiddenSize);
    layer.k = randomTensor(backend, rng, kv, c.hiddenSize);
    layer.v = randomTensor(backend, rng, kv, c.hiddenSize);
    if (c.qkvBias) {
      layer.qBias = randomTensor(backend, rng, q, 1);
      layer.kBias = randomTensor(backend, rng, kv, 1);
      layer.vBias = randomTensor(backend, rng, kv, 1);
    }
    layer.o = randomTensor(backend, rng, c.hiddenSize, q);
    layer.gate = randomTensor(backend, rng, c.intermediateSize, c.hiddenSize);
    layer.up = randomTensor(backend, rng, c.intermediateSize, c.hiddenSize);
    layer.down = randomTensor(backend, rng, c.hiddenSize, c.intermediateSize);
    w.layers.push_back(std::move(layer));
  }
  return w;
}

double peakRssMiB() {
  const std::optional<std::uint64_t> bytes = common::peakResidentBytes();
  return bytes ? static_cast<double>(*bytes) / (1024.0 * 1024.0) : 0.0;
}

long positiveNumber(const std::string& option, const std::string& text) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1) {
    throw job::UsageError(option + " expects a positive whole number, not '" + text + "'");
  }
  return value;
}

std::vector<int> threadList(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    out.push_back(static_cast<int>(positiveNumber("--threads", item)));
  }
  if (out.empty()) {
    throw job::UsageError("--threads expects a list like 1,2,16");
  }
  return out;
}

void printProfile(double stepSeconds) {
  const compute::cpu::CpuOpTotals totals = compute::cpu::takeOpTimes();
  double opSeconds = 0.0;
  for (double s : totals.seconds) {
    opSeconds += s;
  }
  for (std::size_t i = 0; i < compute::cpu::kCpuOpCount; ++i) {
    std::printf("    %-14s %8.1f ms %5.1f%%  (%lld calls)\n",
                compute::cpu::cpuOpName(static_cast<compute::cpu::CpuOp>(i)),
                totals.seconds[i] * 1e3, 100.0 * totals.seconds[i] / stepSeconds,
                static_cast<long long>(totals.calls[i]));
  }
  std::printf("    %-14s %8.1f ms %5.1f%%  (LoRA bookkeeping, clip, AdamW, allocation)\n", "other",
              (stepSeconds - opSeconds) * 1e3, 100.0 * (stepSeconds - opSeconds) / stepSeconds);
}

void benchShape(const BenchShape& shape, const std::vector<int>& threads, long steps,
                bool checkpointing, bool profile) {
  auto backend = compute::createCpuBackend();
  const model::ModelWeights weights = randomWeights(*backend, shape.config);
  std::mt19937 rng(2);
  std::uniform_int_distribution<std::int32_t> token(
      0, static_cast<std::int32_t>(shape.config.vocabSize - 1));
  std::vector<train::TokenizedExample> data(static_cast<std::size_t>(shape.batch * 4));
  for (auto& e : data) {
    for (std::int64_t t = 0; t < shape.seq; ++t) {
      e.ids.push_back(token(rng));
    }
    e.labels = e.ids;
  }
  train::TrainConfig tc;
  tc.lora.rank = 8;
  tc.lora.alpha = 16;
  tc.microBatchSize = shape.batch;
  tc.maxSeqLen = shape.seq;
  tc.maxSteps = 1000;
  tc.activationCheckpointing = checkpointing;
  std::printf("%s, B%lld x S%lld, LoRA r8 x 7, fp32, cpu, checkpointing %s\n", shape.name.c_str(),
              static_cast<long long>(shape.batch), static_cast<long long>(shape.seq),
              checkpointing ? "on" : "off");
  std::printf("%8s %12s %12s %14s\n", "threads", "tokens/s", "s/step", "peak RSS MiB");
  for (int n : threads) {
    compute::cpu::setCpuThreads(n);
    train::TrainLoop loop(*backend, shape.config, weights, data, tc);
    loop.step();  // warm-up: first-touch allocations, thread start
    compute::cpu::takeOpTimes();
    compute::cpu::setOpTimesEnabled(profile);
    double seconds = 0;
    std::int64_t tokens = 0;
    for (long i = 0; i < steps; ++i) {
      const train::StepMetrics m = loop.step();
      seconds += m.seconds;
      tokens += m.tokens;
    }
    compute::cpu::setOpTimesEnabled(false);
    std::printf("%8d %12.0f %12.3f %14.0f\n", n, static_cast<double>(tokens) / seconds,
                seconds / static_cast<double>(steps), peakRssMiB());
    if (profile) {
      printProfile(seconds);
    }
    std::fflush(stdout);
  }
}

}  // namespace

const job::CommandSpec& benchCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "bench",
      .operands = "",
      .summary =
          "CPU LoRA optimizer-step throughput (tokens/s) and peak RSS on the performance target's "
          "shapes, "
          "at each thread count.",
      .options =
          {
              {.name = "model",
               .type = OptionType::Choice,
               .help = "The shape to run.",
               .defaultText = "all",
               .choices = {"tiny", "qwen", "all"}},
              {.name = "threads",
               .type = OptionType::Text,
               .help = "Comma-separated thread counts.",
               .defaultText = "1,<cores>",
               .valueName = "1,2,16"},
              {.name = "steps",
               .type = OptionType::Integer,
               .help = "Timed optimizer steps per thread count.",
               .defaultText = "3",
               .min = 1,
               .max = 1e6},
              {.name = "checkpointing",
               .type = OptionType::Bool,
               .help = "Activation checkpointing.",
               .defaultText = "false"},
              {.name = "profile",
               .type = OptionType::Bool,
               .help = "Print the time per op.",
               .defaultText = "false"},
          },
  };
  return command;
}

int runBench(const Args& args) {
  const job::CliArgs cli(args, benchCommand());
  if (!cli.positional().empty()) {
    throw job::UsageError("unexpected argument '" + cli.positional().front() + "'");
  }
  const std::string model = cli.value("model").value_or("all");
  if (model != "tiny" && model != "qwen" && model != "all") {
    throw job::UsageError("--model expects tiny, qwen or all, not '" + model + "'");
  }
  const std::vector<int> threads = threadList(cli.value("threads").value_or(
      "1," + std::to_string(std::max(1u, std::thread::hardware_concurrency()))));
  const long steps = positiveNumber("--steps", cli.value("steps").value_or("3"));
  std::printf("OpenBLAS: %s (held at 1 thread; the backend's pool splits the work)\n",
              compute::cpu::blasDescription().c_str());
  std::printf("vector kernels: %s (LORASCOPE_CPU_SIMD=generic|avx2|avx512 caps them)\n",
              compute::cpu::simdLevelInUse());
  for (const BenchShape& shape : {tinyLlama(), qwenHalfB()}) {
    if (model == "all" || shape.name.rfind(model, 0) == 0) {
      benchShape(shape, threads, steps, cli.has("checkpointing"), cli.has("profile"));
    }
  }
  return 0;
}

}  // namespace lorascope::cli
