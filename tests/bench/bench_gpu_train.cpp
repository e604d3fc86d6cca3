// bench_gpu_train.cpp — a benchmark program (not a test): tokens/s, device memory and the device
// time per op class of LoRA optimizer steps through the real TrainLoop/TrainGraph, on a random
// model of a real model's shape built directly on the backend (no files). The PyTorch side of
// the comparison is scripts/reference/bench_lora_gpu_torch.py; scripts/gpu-check.sh bench runs
// both in one device call.
//
//   bench_gpu_train --shape qwen2.5-0.5b|llama-3.2-1b|tiny [--gemm vendor|built-in]
//                   [--warmup N] [--steps N] [--profile-steps N] [--batch B] [--seq S]
//                   [--checkpointing] [--device gpu|cpu] [--json FILE] [--label NAME]
//                   [--mirror N] [--graph] [--prompt-percent P]
//   bench_gpu_train --model DIR [--quantize none|nf4] [the options above but --shape]
//
// --model reads a Hugging Face model folder instead (safetensors through model::ModelFolder) and
// places it as a run does (model::placeWeights: bf16, or the projections quantised to NF4 at
// load with --quantize nf4); the report then adds the memory model's estimate for that placement
// (model/MemoryEstimate.h). scripts/gpu-check.sh qlora runs it on a Llama-3.1-8B-shaped random
// model made by scripts/reference/random_model.py.
//
// --prompt-percent P: the first P% of each sequence's positions have no target, as a masked prompt
// (tokens/s still counts every position): the lm-head's and the loss's cost when a run trains on
// responses alone.
//
// A step: B × S random tokens (every position predicted), LoRA r8 alpha 16 without dropout on
// q,k,v,o,gate,up,down of every layer, AdamW lr 2e-4, global-norm clipping at 1.0; bf16 frozen
// weights, uniform with std 1/√in (norms 1, biases ±0.02). Speed does not depend on the values.
//
// Phases: warm-up steps (timed apart), timed steps with op timing off, then profiled steps with
// op timing on (runtime/OpTiming.h): the device time of every op name, summed into classes, and
// its launches. The profiled steps' wall-clock time minus the bracketed time is "outside ops":
// host work the device waited for, transfers and syncs. Each timed step runs between two device
// syncs and is timed alone; tokens/s is B × S over the median step (the mean and the slowest step
// are reported beside it), as the PyTorch twin does.
//
// The physical limit (the "limit" and "share" columns of scripts/reference/bench_gpu_summary.py):
//   FLOPs per token F = 4·P + 4·H·V + Σ_layers 14·heads·hd·S̄ + Σ_sites 6·r·(in + out)
// with P the frozen projections' weights per token pass (Σ_layers H·(q + 2·kv) + q·H + 3·H·I:
// forward x·Wᵀ and the input gradient dy·W, 2 FLOPs per weight each; frozen weights get no
// weight gradient), the fused lm-head's logits and its dh (2·H·V each), attention's forward
// (q·kᵀ and p·v, 4·heads·hd·S̄) and backward (2.5× that: the scores recomputed, dv, dp, dq, dk)
// over S̄ = (S + 1)/2 keys per query on average (causal; min(S̄, window) on sliding layers), and
// the LoRA products (forward 2·r·(in + out), backward dB, g, dA and dx: twice that). For the Qwen
// shape F ≈ 2.08 GFLOP (26% of it the 151936-wide lm-head), for the Llama shape ≈ 5.2 GFLOP.
// The ceiling is the vendor GEMM's own rate on this card: the best of bf16 products of the
// step's big shapes (B·S tokens × the MLP's, the attention projections' and an lm-head chunk's
// widths), each timed over 20 runs after 3 warm-ups (--gemm vendor on a GPU only).
// limit tokens/s = ceiling / F; a configuration's share = its tokens/s / limit.
//
// --graph: whole-step graph mode (train/StepGraphs.h): the first warm-up step runs eagerly, the
// second is captured, every later step is one replayed graph.
//
// --mirror N: the state mirror's cost at N step boundaries each way, after the profiled steps
// (Note [asynchronous state mirror] in job/StepCommit.h): what the engine thread spent between
// steps before (TrainLoop::state()'s synchronous download, then the encoding) and now
// (TrainLoop::snapshotState: the device copy and the side stream's download queued), the
// writer's wait and encoding now (PendingTrainerState::waitEncoded, into a buffer it reuses) and
// its write of the mirror file (engine/StateMirror.h, in the temp folder), and a step timed while
// they run beside it against the same number of steps with none; medians, in the report and the
// JSON line. The engine does not wait for a writer that outlasts the step: the next write covers
// the steps completed meanwhile (Note [asynchronous state mirror] in job/StepCommit.h).
//
// Memory: the caching allocator's peak reserved and peak allocated bytes over the whole run
// (PyTorch's max_memory_reserved / max_memory_allocated), and the driver's reading of the whole
// device (total − free: context, BLAS workspaces and all), its maximum over the step boundaries.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "RandomModel.h"  // defines: randomWeights, randomData
#include "compute/Backend.h"
#include "compute/Errors.h"
#include "engine/StateMirror.h"
#include "memory/DeviceAllocator.h"
#include "model/DeviceWeights.h"   // defines: placeWeights, placedWeightBytes
#include "model/MemoryEstimate.h"  // defines: estimateTrainingMemory
#include "model/ModelFolder.h"
#include "model/ReferenceShapes.h"
#include "runtime/OpTiming.h"  // defines: setOpTiming, takeOpTimes
#include "train/StateCodec.h"
#include "train/TrainLoop.h"

using namespace lorascope;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Options {
  std::string shape = "qwen2.5-0.5b";
  model::ModelConfig config;  // of `shape`
  compute::GemmImplementation gemm = compute::GemmImplementation::Vendor;
  int warmup = 3;
  int steps = 20;
  int profileSteps = 3;
  int mirror = 0;         // --mirror: step boundaries at which the state mirror's cost is timed
  int promptPercent = 0;  // --prompt-percent: the share of each sequence without a target
  std::int64_t batch = 8;
  std::int64_t seq = 512;
  bool checkpointing = false;
  bool graph = false;  // --graph: whole-step graph mode
  bool cpu = false;
  std::string json;
  std::string label;     // --label: the "impl" of the JSON line (default lorascope-GEMM)
  std::string modelDir;  // --model: a model folder instead of a random model of --shape
  model::WeightQuantization quantization = model::WeightQuantization::None;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "bench_gpu_train: %s\n"
               "usage: bench_gpu_train --shape qwen2.5-0.5b|llama-3.2-1b|tiny "
               "[--gemm vendor|built-in] [--warmup N] [--steps N] [--profile-steps N] "
               "[--batch B] [--seq S] [--checkpointing] [--device gpu|cpu] [--json FILE] "
               "[--label NAME] [--mirror N] [--graph] [--prompt-percent P]\n"
               "       bench_gpu_train --model DIR [--quantize none|nf4] [the same options]\n",
               problem.c_str());
  std::exit(2);
}

int positive(const std::string& flag, const std::string& text, int minimum) {
  try {
    std::size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value >= minimum) {
      return value;
    }
  } catch (const std::exception&) {
  }
  usage(flag + " needs an integer ≥ " + std::to_string(minimum) + ", got '" + text + "'");
}

// The two real models' shapes, and a tiny one for trying the program on the CPU.
model::ModelConfig shapeConfig(const std::string& shape) {
  if (const auto config = model::referenceShape(shape)) {
    return *config;
  }
  if (shape != "tiny") {
    usage("unknown --shape '" + shape + "' (qwen2.5-0.5b, llama-3.2-1b or tiny)");
  }
  model::ModelConfig c;
  c.family = model::Family::Llama;
  c.modelType = "llama";
  c.vocabSize = 2000;
  c.hiddenSize = 256;
  c.intermediateSize = 688;
  c.numLayers = 2;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.headDim = 64;
  c.rmsNormEps = 1e-5;
  c.tieWordEmbeddings = true;
  c.maxPositionEmbeddings = 2048;
  return c;
}

Options parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--checkpointing") {
      o.checkpointing = true;
      continue;
    }
    if (flag == "--graph") {
      o.graph = true;
      continue;
    }
    if (i + 1 >= argc) {
      usage("unknown option or missing value: " + flag);
    }
    const std::string value = argv[++i];
    if (flag == "--shape") {
      o.shape = value;
    } else if (flag == "--gemm") {
      if (value != "vendor" && value != "built-in") {
        usage("--gemm is vendor or built-in, got '" + value + "'");
      }
      o.gemm = value == "vendor" ? compute::GemmImplementation::Vendor
                                 : compute::GemmImplementation::BuiltIn;
    } else if (flag == "--warmup") {
      o.warmup = positive(flag, value, 1);
    } else if (flag == "--steps") {
      o.steps = positive(flag, value, 1);
    } else if (flag == "--profile-steps") {
      o.profileSteps = positive(flag, value, 0);
    } else if (flag == "--mirror") {
      o.mirror = positive(flag, value, 0);
    } else if (flag == "--prompt-percent") {
      o.promptPercent = positive(flag, value, 0);
      if (o.promptPercent > 99) {
        usage("--prompt-percent is 0 to 99, got " + value);
      }
    } else if (flag == "--batch") {
      o.batch = positive(flag, value, 1);
    } else if (flag == "--seq") {
      o.seq = positive(flag, value, 2);
    } else if (flag == "--device") {
      if (value != "gpu" && value != "cpu") {
        usage("--device is gpu or cpu, got '" + value + "'");
      }
      o.cpu = value == "cpu";
    } else if (flag == "--json") {
      o.json = value;
    } else if (flag == "--label") {
      o.label = value;
    } else if (flag == "--model") {
      o.modelDir = value;
    } else if (flag == "--quantize") {
      const auto quantization = model::parseQuantization(value);
      if (!quantization) {
        usage("--quantize is none or nf4, got '" + value + "'");
      }
      o.quantization = *quantization;
    } else {
      usage("unknown option: " + flag);
    }
  }
  if (o.modelDir.empty()) {
    if (o.quantization != model::WeightQuantization::None) {
      usage("--quantize needs --model (the quantiser reads the stored weights)");
    }
    o.config = shapeConfig(o.shape);
  } else {
    o.shape = std::filesystem::path(o.modelDir).filename().string() + " (" +
              model::quantizationName(o.quantization) + ")";
  }
  return o;
}

// Op classes of the breakdown, by the op names the launch hooks see. Unknown names count
// as elementwise; the per-op table shows every name, so a misfiled op is visible.
std::string opClass(const std::string& op) {
  const auto has = [&](const char* part) { return op.find(part) != std::string::npos; };
  if (has("lm_head") || has("cross_entropy") || has("loss")) {
    return "loss";
  }
  if (has("attention") || has("flash")) {
    return "attention";
  }
  if (has("adamw") || has("sum_of_squares") || op == "scale" || op == "fill_zero" || has("clip")) {
    return "optimizer";
  }
  if (has("matmul") || has("gemm")) {
    return "gemm";
  }
  if (has("nf4")) {
    return "nf4 dequantize";  // --quantize nf4: the weight's bf16 workspace before each GEMM
  }
  return "norms/elementwise";
}

// Device memory: the allocator's peaks, and the driver's reading of the whole device (total −
// free, the figure torch.cuda.mem_get_info gives) as its maximum over the step boundaries.
// nullopt where the backend has no device allocator (the CPU).
struct MemoryReadings {
  std::optional<std::uint64_t> peakReservedBytes;
  std::optional<std::uint64_t> peakAllocatedBytes;
  std::optional<std::uint64_t> driverUsedBytes;

  void sampleDriver(compute::Backend& backend) {
    if (const memory::DeviceAllocator* allocator = backend.deviceAllocator()) {
      const memory::DeviceMemoryInfo info = allocator->deviceInfo();
      driverUsedBytes =
          std::max<std::uint64_t>(driverUsedBytes.value_or(0), info.totalBytes - info.freeBytes);
    }
  }
  void takePeaks(compute::Backend& backend) {
    if (const memory::DeviceAllocator* allocator = backend.deviceAllocator()) {
      const memory::AllocatorStats stats = allocator->stats();
      peakReservedBytes = static_cast<std::uint64_t>(stats.reservedBytes.peak);
      peakAllocatedBytes = static_cast<std::uint64_t>(stats.allocatedBytes.peak);
    }
  }
};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `count` steps, each between two device syncs; returns their wall-clock seconds, and each
// step's in `perStep` when given.
double runSteps(train::TrainLoop& loop, compute::Backend& backend, int count,
                MemoryReadings& memory, double& lastLoss, std::vector<double>* perStep = nullptr) {
  backend.synchronize();
  double seconds = 0;
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    lastLoss = loop.step().loss;
    backend.synchronize();
    const double step = secondsSince(start);
    seconds += step;
    if (perStep != nullptr) {
      perStep->push_back(step);
    }
    memory.sampleDriver(backend);  // outside the timed span
  }
  return seconds;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n == 0 ? 0.0 : n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// FLOPs per token of one optimizer step on this shape (the header's formula).
double flopsPerToken(const model::ModelConfig& c, std::int64_t seq, std::int64_t rank) {
  const double h = static_cast<double>(c.hiddenSize);
  const double q = static_cast<double>(c.numHeads * c.headDim);
  const double kv = static_cast<double>(c.numKvHeads * c.headDim);
  const double inter = static_cast<double>(c.intermediateSize);
  const double r = static_cast<double>(rank);
  const double perLayerWeights = h * (q + 2 * kv) + q * h + 3 * h * inter;
  const double loraPerLayer = 6 * r * ((h + q) + 2 * (h + kv) + (q + h) + 3 * (h + inter));
  double flops = 4 * h * static_cast<double>(c.vocabSize);
  for (int layer = 0; layer < c.numLayers; ++layer) {
    double keys = 0.5 * static_cast<double>(seq + 1);
    if (c.isSlidingLayer(layer)) {
      keys = std::min(keys, static_cast<double>(c.slidingWindow));
    }
    flops += 4 * perLayerWeights + 14 * q * keys + loraPerLayer;
  }
  return flops;
}

// The vendor GEMM's best rate (FLOP/s) on bf16 products of the step's big shapes: `tokens` rows
// times each (out, in) weight below, random values, 20 timed runs after 3 warm-ups each.
double gemmCeiling(compute::Backend& backend, const model::ModelConfig& c, std::int64_t tokens) {
  const std::int64_t h = c.hiddenSize;
  const std::int64_t q = c.numHeads * c.headDim;
  const std::int64_t lmChunk = std::min<std::int64_t>(c.vocabSize, 16384);
  const std::pair<std::int64_t, std::int64_t> shapes[] = {
      {c.intermediateSize, h}, {h, c.intermediateSize}, {q, h}, {lmChunk, h}};
  double best = 0;
  for (const auto& [out, in] : shapes) {
    const compute::Tensor x = bench::randomTensor(backend, 11, {tokens, in}, 1.0f);
    const compute::Tensor w = bench::randomTensor(backend, 12, {out, in}, 1.0f);
    compute::Tensor y = backend.empty(compute::DType::BF16, {tokens, out});
    constexpr int kWarmup = 3, kRuns = 20;
    for (int i = 0; i < kWarmup; ++i) {
      backend.matmul(x, false, w, true, y, 1.0f, 0.0f);
    }
    backend.synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRuns; ++i) {
      backend.matmul(x, false, w, true, y, 1.0f, 0.0f);
    }
    backend.synchronize();
    const double seconds = secondsSince(start);
    best = std::max(best, 2.0 * static_cast<double>(tokens * out * in) * kRuns / seconds);
  }
  return best;
}

// The state mirror's timings (--mirror), one entry per step boundary, seconds.
struct MirrorTimes {
  double megabytes = 0;                // the encoded state
  std::vector<double> synchronous;     // engine thread: encodeTrainerState(loop.state())
  std::vector<double> snapshot;        // engine thread: loop.snapshotState()
  std::vector<double> writer;          // writer thread: waitEncoded
  std::vector<double> write;           // writer thread: then StateMirror::write, durable
  std::vector<double> writeCached;     // ... one that does not wait for the disk (most of the
                                       // engine's: it waits at most every 2 s)
  std::vector<double> besideDownload;  // a step while the writer runs
  std::vector<double> alone;           // a step with nothing beside it
  // The allocator's peak allocated bytes over those steps (the snapshot's device copies counted
  // with the step beside them); nullopt on the CPU.
  std::optional<std::uint64_t> peakBeside, peakAlone;
};

// Starts a peak reading: the allocator's peak allocated from now on (nothing on the CPU).
void resetPeak(compute::Backend& backend) {
  if (memory::DeviceAllocator* allocator = backend.deviceAllocator()) {
    allocator->resetPeakStats();
  }
}
void raisePeak(compute::Backend& backend, std::optional<std::uint64_t>& peak) {
  if (memory::DeviceAllocator* allocator = backend.deviceAllocator()) {
    peak = std::max<std::uint64_t>(
        peak.value_or(0), static_cast<std::uint64_t>(allocator->stats().allocatedBytes.peak));
  }
}

struct Result {
  std::string device;
  double buildSeconds = 0;
  double warmupSeconds = 0;
  double timedSeconds = 0;
  std::vector<double> stepSeconds;  // each timed step's
  double profiledSeconds = 0;
  double flopsPerToken = 0;
  std::optional<double> gemmCeiling;  // FLOP/s; vendor GEMM on a GPU only
  double lastLoss = 0;
  MemoryReadings memory;
  std::vector<runtime::gpu::OpTime> ops;          // summed over the profiled steps
  std::optional<model::TrainingMemory> estimate;  // with --model: the memory model's numbers
  MirrorTimes mirror;
};

MirrorTimes timeStateMirror(train::TrainLoop& loop, compute::Backend& backend, int boundaries) {
  MirrorTimes t;
  if (boundaries == 0) {
    return t;
  }
  std::vector<std::byte> encoded;  // the writer's buffer
  // The engine's mirror file (checksum, copy into the mapping, two msyncs), in the temp folder.
  const std::filesystem::path mirrorPath =
      std::filesystem::temp_directory_path() /
      ("bench_gpu_train-" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".mirror");
  const std::size_t stateBytes = train::encodeTrainerState(loop.state()).size();
  std::optional<engine::StateMirror> mirror(std::in_place, mirrorPath,
                                            stateBytes + stateBytes / 8 + 4096, stateBytes);
  // A second mirror whose writes after the first do not wait for the disk, as the engine's
  // between its durable ones.
  const std::filesystem::path cachedPath = mirrorPath.string() + "-cached";
  std::optional<engine::StateMirror> cached(std::in_place, cachedPath,
                                            stateBytes + stateBytes / 8 + 4096, stateBytes);
  cached->setDurableEvery(std::chrono::hours(1));
  cached->write(train::encodeTrainerState(loop.state()));
  for (int i = 0; i < boundaries; ++i) {
    loop.step();
    backend.synchronize();
    auto start = std::chrono::steady_clock::now();
    const std::vector<std::byte> before = train::encodeTrainerState(loop.state());
    t.synchronous.push_back(secondsSince(start));
    t.megabytes = static_cast<double>(before.size()) / 1e6;

    resetPeak(backend);
    start = std::chrono::steady_clock::now();
    loop.step();
    backend.synchronize();
    t.alone.push_back(secondsSince(start));
    raisePeak(backend, t.peakAlone);

    resetPeak(backend);
    start = std::chrono::steady_clock::now();
    train::PendingTrainerState pending = loop.snapshotState();
    t.snapshot.push_back(secondsSince(start));
    auto writer = std::async(std::launch::async, [&pending, &encoded, &mirror, &cached] {
      auto begin = std::chrono::steady_clock::now();
      pending.waitEncoded(encoded);  // as the mirror's writer does, into a buffer it reuses
      const double encoding = secondsSince(begin);
      begin = std::chrono::steady_clock::now();
      mirror->write(encoded);
      const double durable = secondsSince(begin);
      begin = std::chrono::steady_clock::now();
      cached->write(encoded);
      return std::array<double, 3>{encoding, durable, secondsSince(begin)};
    });
    start = std::chrono::steady_clock::now();
    loop.step();
    backend.synchronize();
    t.besideDownload.push_back(secondsSince(start));
    const auto [encoding, durable, notWaiting] = writer.get();
    t.writer.push_back(encoding);
    t.write.push_back(durable);
    t.writeCached.push_back(notWaiting);
    raisePeak(backend, t.peakBeside);
  }
  mirror.reset();
  cached.reset();
  std::error_code ignored;
  std::filesystem::remove(mirrorPath, ignored);
  std::filesystem::remove(cachedPath, ignored);
  return t;
}

Result runBenchmark(const Options& o, compute::Backend& backend) {
  Result r;
  r.device = backend.capabilities().name;
  const auto buildStart = std::chrono::steady_clock::now();
  // With --model the folder's mapping backs the placed weights (on the CPU) and must outlive them.
  std::optional<model::ModelFolder> folder;
  model::ModelWeights weights;
  train::LoraConfig lora;
  lora.rank = 8;
  lora.alpha = 16;
  // As a run places them (job::DevicePlacement), with the LoRA's rows and columns beside q/k/v
  // and gate/up (Note [the LoRA term in the inner dimension]); none under NF4.
  const model::LoraFold fold = o.quantization == model::WeightQuantization::None
                                   ? train::loraFoldFor(lora)
                                   : model::LoraFold{};
  if (o.modelDir.empty()) {
    weights = bench::randomWeights(backend, o.config, fold);
  } else {
    const memory::OwnerScope owner(memory::Owner::Weights);
    folder.emplace(model::ModelFolder::open(o.modelDir));
    weights = model::placeWeights(backend, folder->weights(), {}, o.quantization, fold);
  }
  const model::ModelConfig& config = folder ? folder->config() : o.config;
  backend.synchronize();
  r.buildSeconds = secondsSince(buildStart);

  const int totalSteps = o.warmup + o.steps + o.profileSteps + 3 * o.mirror;
  train::TrainConfig tc;
  tc.lora = lora;
  tc.microBatchSize = o.batch;
  tc.maxSeqLen = o.seq;
  tc.maxSteps = totalSteps;
  tc.activationCheckpointing = o.checkpointing;
  tc.quantization = o.quantization;
  if (folder) {
    // As job::trainingShape builds it for a run (job/ needs Qt, which the device build lacks).
    const bool gpu = backend.capabilities().device == compute::Device::Gpu;
    model::TrainingShape shape;
    shape.weightsBytes =
        model::placedWeightBytes(*folder, backend.capabilities().device, o.quantization);
    shape.loraRank = tc.lora.rank;
    shape.activationDTypeBytes = gpu ? 2 : 4;
    shape.activationCheckpointing = o.checkpointing;
    shape.lossChunkFloats = gpu ? model::kLossChunkFloats : model::kCpuLossChunkFloats;
    shape.lossChunkBytesPerLogit = gpu ? 6 : 4;
    shape.nf4Workspace = gpu && o.quantization == model::WeightQuantization::Nf4;
    shape.stackedQkvGradient = gpu && o.quantization != model::WeightQuantization::Nf4;
    r.estimate = model::estimateTrainingMemory(config, shape, o.batch * o.seq);
  }
  train::TrainLoop loop(backend, config, weights,
                        bench::randomData(config, o.batch * totalSteps, o.seq, o.promptPercent),
                        tc);
  if (o.graph) {
    loop.setStepMode(train::StepMode::Graph);
  }
  r.warmupSeconds = runSteps(loop, backend, o.warmup, r.memory, r.lastLoss);
  r.timedSeconds = runSteps(loop, backend, o.steps, r.memory, r.lastLoss, &r.stepSeconds);
  runtime::gpu::setOpTiming(true);
  r.profiledSeconds = runSteps(loop, backend, o.profileSteps, r.memory, r.lastLoss);
  runtime::gpu::setOpTiming(false);
  r.ops = runtime::gpu::takeOpTimes();
  r.memory.takePeaks(backend);  // before the ceiling's products: the step's peaks alone
  r.mirror = timeStateMirror(loop, backend, o.mirror);
  r.flopsPerToken = flopsPerToken(config, o.seq, tc.lora.rank);
  if (o.gemm == compute::GemmImplementation::Vendor &&
      backend.capabilities().device == compute::Device::Gpu) {
    r.gemmCeiling = gemmCeiling(backend, config, o.batch * o.seq);
  }
  return r;
}

// ms per profiled step by op class, plus "outside ops" (wall-clock minus bracketed time).
std::map<std::string, double> classBreakdown(const Options& o, const Result& r) {
  std::map<std::string, double> ms;
  double bracketed = 0;
  for (const auto& op : r.ops) {
    ms[opClass(op.op)] += op.milliseconds / o.profileSteps;
    bracketed += op.milliseconds / o.profileSteps;
  }
  ms["outside ops"] = std::max(0.0, 1000.0 * r.profiledSeconds / o.profileSteps - bracketed);
  return ms;
}

double launchesPerStep(const Options& o, const Result& r) {
  double launches = 0;
  for (const auto& op : r.ops) {
    launches += static_cast<double>(op.launches) / o.profileSteps;
  }
  return launches;
}

std::string gibText(std::optional<std::uint64_t> bytes) {
  if (!bytes) {
    return "n/a";
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(*bytes) / kGiB);
  return text;
}

void printReport(const Options& o, const Result& r) {
  const std::string prompt =
      o.promptPercent > 0
          ? " (the first " + std::to_string(o.promptPercent) + "% of each without targets)"
          : "";
  std::printf("%s, %s GEMM, B%lld x S%lld%s, LoRA r8 x 7, checkpointing %s, %s steps, on %s\n",
              o.shape.c_str(), compute::gemmImplementationName(o.gemm),
              static_cast<long long>(o.batch), static_cast<long long>(o.seq), prompt.c_str(),
              o.checkpointing ? "on" : "off", o.graph ? "graph" : "eager", r.device.c_str());
  std::printf("  weights built in %.1f s; %d warm-up steps %.2f s\n", r.buildSeconds, o.warmup,
              r.warmupSeconds);
  const double medianStep = median(r.stepSeconds);
  const double tokensPerSecond = static_cast<double>(o.batch * o.seq) / medianStep;
  std::printf(
      "  %d timed steps: %.0f tokens/s, %.2f ms/step median (mean %.2f, max %.2f), last loss "
      "%.4f\n",
      o.steps, tokensPerSecond, 1000.0 * medianStep, 1000.0 * r.timedSeconds / o.steps,
      1000.0 * *std::max_element(r.stepSeconds.begin(), r.stepSeconds.end()), r.lastLoss);
  std::printf("  %.3f GFLOP per token", r.flopsPerToken / 1e9);
  if (r.gemmCeiling) {
    const double limit = *r.gemmCeiling / r.flopsPerToken;
    std::printf("; vendor GEMM ceiling %.0f TFLOP/s: limit %.0f tokens/s, this run %.1f %% of it",
                *r.gemmCeiling / 1e12, limit, 100.0 * tokensPerSecond / limit);
  }
  std::printf("\n");
  std::printf("  memory: allocator peak reserved %s, peak allocated %s, driver (total - free) %s\n",
              gibText(r.memory.peakReservedBytes).c_str(),
              gibText(r.memory.peakAllocatedBytes).c_str(),
              gibText(r.memory.driverUsedBytes).c_str());
  if (r.estimate) {
    std::printf(
        "  memory model (model/MemoryEstimate.h): weights %s, peak %s (LoRA and AdamW "
        "%s, saved activations %s, transient %s, dequantisation workspace %s)\n",
        gibText(r.estimate->weightsBytes).c_str(), gibText(r.estimate->peakBytes).c_str(),
        gibText(r.estimate->loraBytes + r.estimate->loraGradBytes + r.estimate->optimizerBytes)
            .c_str(),
        gibText(r.estimate->savedBytes).c_str(),
        gibText(std::max(r.estimate->lossBytes, r.estimate->backwardBytes)).c_str(),
        gibText(r.estimate->dequantizeBytes).c_str());
  }
  if (o.mirror > 0) {
    const MirrorTimes& m = r.mirror;
    std::printf(
        "  state mirror (%.1f MB encoded), medians of %d step boundaries: engine thread %.2f ms "
        "before (state() download + encoding), %.3f ms now (snapshotState); writer %.2f ms "
        "(wait + encoding), then %.2f ms writing the mirror file durably (msync), %.2f ms not "
        "waiting for the disk; a step beside them %.2f ms, "
        "alone %.2f ms; peak allocated beside them %s, alone %s\n",
        m.megabytes, o.mirror, 1000.0 * median(m.synchronous), 1000.0 * median(m.snapshot),
        1000.0 * median(m.writer), 1000.0 * median(m.write), 1000.0 * median(m.writeCached),
        1000.0 * median(m.besideDownload), 1000.0 * median(m.alone), gibText(m.peakBeside).c_str(),
        gibText(m.peakAlone).c_str());
  }
  if (o.profileSteps == 0) {
    return;
  }
  const double wallMs = 1000.0 * r.profiledSeconds / o.profileSteps;
  std::printf("  breakdown over %d profiled steps (%.2f ms/step with op timing on):\n",
              o.profileSteps, wallMs);
  for (const auto& [name, ms] : classBreakdown(o, r)) {
    std::printf("    %-18s %9.2f ms/step %5.1f %%\n", name.c_str(), ms, 100.0 * ms / wallMs);
  }
  std::printf("  launches per step: %.0f\n", launchesPerStep(o, r));
  std::printf("  per op (ms/step, launches/step, class):\n");
  for (const auto& op : r.ops) {
    std::printf("    %-46s %9.3f %7.0f  %s\n", op.op.c_str(), op.milliseconds / o.profileSteps,
                static_cast<double>(op.launches) / o.profileSteps, opClass(op.op).c_str());
  }
}

nlohmann::json resultJson(const Options& o, const Result& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : r.ops) {
    ops.push_back({{"op", op.op},
                   {"class", opClass(op.op)},
                   {"launches_per_step", static_cast<double>(op.launches) / o.profileSteps},
                   {"ms_per_step", op.milliseconds / o.profileSteps}});
  }
  const auto gib = [](std::optional<std::uint64_t> bytes) {
    return bytes ? nlohmann::json(static_cast<double>(*bytes) / kGiB) : nlohmann::json(nullptr);
  };
  const double medianStep = median(r.stepSeconds);
  return {
      {"program", "bench_gpu_train"},
      {"impl", o.label.empty() ? std::string("lorascope-") + compute::gemmImplementationName(o.gemm)
                               : o.label},
      {"shape", o.shape},
      {"quantize", model::quantizationName(o.quantization)},
      {"estimated_peak_gib", r.estimate
                                 ? nlohmann::json(static_cast<double>(r.estimate->peakBytes) / kGiB)
                                 : nlohmann::json(nullptr)},
      {"gpu", r.device},
      {"batch", o.batch},
      {"seq", o.seq},
      {"checkpointing", o.checkpointing},
      {"graph", o.graph},
      {"prompt_percent", o.promptPercent},
      {"warmup_steps", o.warmup},
      {"timed_steps", o.steps},
      {"profiled_steps", o.profileSteps},
      {"weights_build_s", r.buildSeconds},
      {"warmup_s", r.warmupSeconds},
      {"rank", 8},
      {"alpha", 16},
      {"targets", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}},
      {"s_per_step", medianStep},
      {"mean_s_per_step", r.timedSeconds / o.steps},
      {"max_s_per_step", *std::max_element(r.stepSeconds.begin(), r.stepSeconds.end())},
      {"tokens_per_s", static_cast<double>(o.batch * o.seq) / medianStep},
      {"flops_per_token", r.flopsPerToken},
      {"gemm_ceiling_tflops",
       r.gemmCeiling ? nlohmann::json(*r.gemmCeiling / 1e12) : nlohmann::json(nullptr)},
      {"launches_per_step", o.profileSteps > 0 ? launchesPerStep(o, r) : 0.0},
      {"last_loss", r.lastLoss},
      {"peak_reserved_gib", gib(r.memory.peakReservedBytes)},
      {"peak_allocated_gib", gib(r.memory.peakAllocatedBytes)},
      {"driver_used_gib", gib(r.memory.driverUsedBytes)},
      {"profiled_ms_per_step",
       o.profileSteps > 0 ? 1000.0 * r.profiledSeconds / o.profileSteps : 0.0},
      {"breakdown_ms_per_step",
       o.profileSteps > 0 ? nlohmann::json(classBreakdown(o, r)) : nlohmann::json::object()},
      {"ops", ops},
      {"mirror",
       o.mirror > 0
           ? nlohmann::json{{"boundaries", o.mirror},
                            {"encoded_mb", r.mirror.megabytes},
                            {"engine_ms_before", 1000.0 * median(r.mirror.synchronous)},
                            {"engine_ms_now", 1000.0 * median(r.mirror.snapshot)},
                            {"writer_ms", 1000.0 * median(r.mirror.writer)},
                            {"mirror_write_ms", 1000.0 * median(r.mirror.write)},
                            {"mirror_write_not_waiting_ms", 1000.0 * median(r.mirror.writeCached)},
                            {"step_ms_beside_download", 1000.0 * median(r.mirror.besideDownload)},
                            {"step_ms_alone", 1000.0 * median(r.mirror.alone)},
                            {"peak_allocated_gib_beside_download", gib(r.mirror.peakBeside)},
                            {"peak_allocated_gib_alone", gib(r.mirror.peakAlone)}}
           : nlohmann::json(nullptr)}};
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parseOptions(argc, argv);
  std::unique_ptr<compute::Backend> backend;
  try {
    backend = o.cpu ? compute::createCpuBackend() : compute::createGpuBackend(0);
    backend->setGemmImplementation(o.gemm);
    const Result result = runBenchmark(o, *backend);
    printReport(o, result);
    if (!o.json.empty()) {
      std::ofstream out(o.json, std::ios::app);
      out << resultJson(o, result).dump() << "\n";
      if (!out) {
        std::fprintf(stderr, "bench_gpu_train: could not append to %s\n", o.json.c_str());
        return 1;
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_gpu_train: %s, %s GEMM%s%s: %s\n", o.shape.c_str(),
                 compute::gemmImplementationName(o.gemm), backend ? " on " : "",
                 backend ? backend->capabilities().name.c_str() : "", error.what());
    return 1;
  }
  return 0;
}
