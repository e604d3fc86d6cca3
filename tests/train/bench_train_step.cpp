// bench_train_step.cpp — a benchmark program (not a test): tokens/s of one LoRA optimizer step
// (forward + backward + clip + AdamW) on the CPU backend, for the tiny Llama shape
// (hidden 256, 4 layers, 4 heads, 2 KV heads, intermediate 688, vocab 2000, tied) at batch 4 ×
// seq 256, LoRA r8 on all seven projections, fp32. Runs with 1 OpenBLAS thread and with every
// core (or the thread counts given), activation checkpointing off and on, and prints peak RSS.
//
//   bench_train_step [timed steps per setting, default 3] [thread count ...]
//
// The weights are random (std 1/√in, norms 1): speed does not depend on their values.
#include <sys/resource.h>

#include <cblas.h>  // defines: openblas_set_num_threads

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "compute/Backend.h"
#include "train/TrainLoop.h"

using namespace lorascope;

namespace {

model::ModelConfig tinyLlama() {
  model::ModelConfig c;
  c.family = model::Family::Llama;
  c.modelType = "llama";
  c.vocabSize = 2000;
  c.hiddenSize = 256;
  c.intermediateSize = 688;
  c.numLayers = 4;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.headDim = 64;
  c.rmsNormEps = 1e-5;
  c.tieWordEmbeddings = true;
  return c;
}

compute::Tensor randomWeight(compute::Backend& backend, std::mt19937& rng, std::int64_t out,
                             std::int64_t in) {
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(in)));
  std::vector<float> v(static_cast<std::size_t>(out * in));
  for (float& x : v)
    x = normal(rng);
  return backend.upload(v, compute::DType::F32, {out, in});
}

model::ModelWeights randomWeights(compute::Backend& backend, const model::ModelConfig& c) {
  std::mt19937 rng(1);
  const std::vector<float> ones(static_cast<std::size_t>(c.hiddenSize), 1.0f);
  model::ModelWeights w;
  w.embed = randomWeight(backend, rng, c.vocabSize, c.hiddenSize);
  w.lmHead = w.embed;
  w.finalNorm = backend.upload(ones, compute::DType::F32, {c.hiddenSize});
  const std::int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
  for (std::int64_t l = 0; l < c.numLayers; ++l) {
    model::LayerWeights layer;
    layer.inputNorm = backend.upload(ones, compute::DType::F32, {c.hiddenSize});
    layer.postNorm = backend.upload(ones, compute::DType::F32, {c.hiddenSize});
    layer.q = randomWeight(backend, rng, q, c.hiddenSize);
    layer.k = randomWeight(backend, rng, kv, c.hiddenSize);
    layer.v = randomWeight(backend, rng, kv, c.hiddenSize);
    layer.o = randomWeight(backend, rng, c.hiddenSize, q);
    layer.gate = randomWeight(backend, rng, c.intermediateSize, c.hiddenSize);
    layer.up = randomWeight(backend, rng, c.intermediateSize, c.hiddenSize);
    layer.down = randomWeight(backend, rng, c.hiddenSize, c.intermediateSize);
    w.layers.push_back(std::move(layer));
  }
  return w;
}

double peakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::stoi(argv[1]) : 3;
  const model::ModelConfig config = tinyLlama();
  auto backend = compute::createCpuBackend();
  const model::ModelWeights weights = randomWeights(*backend, config);
  std::mt19937 rng(2);
  std::uniform_int_distribution<std::int32_t> token(
      0, static_cast<std::int32_t>(config.vocabSize - 1));
  std::vector<train::TokenizedExample> data(64);
  for (auto& e : data) {
    for (int t = 0; t < 256; ++t)
      e.ids.push_back(token(rng));
    e.labels = e.ids;
  }
  train::TrainConfig tc;
  tc.lora.rank = 8;
  tc.lora.alpha = 16;
  tc.microBatchSize = 4;
  tc.gradAccumulation = 1;
  tc.maxSeqLen = 256;
  tc.maxSteps = 1000;
  std::vector<unsigned> threadCounts;
  for (int i = 2; i < argc; ++i)
    threadCounts.push_back(static_cast<unsigned>(std::stoi(argv[i])));
  if (threadCounts.empty())
    threadCounts = {1u, std::max(1u, std::thread::hardware_concurrency())};
  std::printf(
      "tiny llama (H256 L4 heads4 kv2 I688 V2000 tied), B4 x S256, LoRA r8 x 7, fp32, cpu\n");
  std::printf("%8s %14s %12s %12s\n", "threads", "checkpointing", "tokens/s", "s/step");
  for (unsigned threads : threadCounts) {
    openblas_set_num_threads(static_cast<int>(threads));
    for (bool checkpointing : {false, true}) {
      tc.activationCheckpointing = checkpointing;
      train::TrainLoop loop(*backend, config, weights, data, tc);
      loop.step();  // warm-up: first-touch allocations, OpenBLAS thread start
      double seconds = 0;
      std::int64_t tokens = 0;
      for (int i = 0; i < steps; ++i) {
        const train::StepMetrics m = loop.step();
        seconds += m.seconds;
        tokens += m.tokens;
      }
      std::printf("%8u %14s %12.0f %12.3f\n", threads, checkpointing ? "on" : "off",
                  static_cast<double>(tokens) / seconds, seconds / steps);
      std::fflush(stdout);
    }
  }
  std::printf("peak RSS %.0f MiB\n", peakRssMiB());
  return 0;
}
