// bench_gpu_train.cpp — a benchmark program (not a test): tokens/s, device memory and the device
// time per op class of LoRA optimizer steps through the real TrainLoop/TrainGraph, on a random
// model of a real model's shape built directly on the backend (no files). The PyTorch side of
// the comparison is scripts/reference/bench_lora_gpu_torch.py; scripts/gpu-check.sh bench runs
// both in one device call.
//
//   bench_gpu_train --shape qwen2.5-0.5b|llama-3.2-1b|tiny [--gemm vendor|built-in]
//                   [--warmup N] [--steps N] [--profile-steps N] [--batch B] [--seq S]
//                   [--checkpointing] [--device gpu|cpu] [--json FILE]
//   bench_gpu_train --model DIR [--quantize none|nf4] [the options above but --shape]
//
// --model reads a Hugging Face model folder instead (safetensors through model::ModelFolder) and
// places it as a run does (model::placeWeights: bf16, or the projections quantised to NF4 at
// load with --quantize nf4); the report then adds the memory model's estimate for that placement
// (model/MemoryEstimate.h). scripts/gpu-check.sh qlora runs it on a Llama-3.1-8B-shaped random
// model made by scripts/reference/random_model.py.
//
// A step: B × S random tokens (every position predicted), LoRA r8 alpha 16 without dropout on
// q,k,v,o,gate,up,down of every layer, AdamW lr 2e-4, global-norm clipping at 1.0; bf16 frozen
// weights, uniform with std 1/√in (norms 1, biases ±0.02). Speed does not depend on the values.
//
// Phases: warm-up steps (timed apart), timed steps with op timing off (tokens/s), then profiled
// steps with op timing on (runtime/OpTiming.h): the device time of every op name, summed into
// classes. The profiled steps' wall-clock time minus the bracketed time is "outside ops": host
// work the device waited for, transfers and syncs.
//
// Memory: the caching allocator's peak reserved and peak allocated bytes over the whole run
// (PyTorch's max_memory_reserved / max_memory_allocated), and the driver's reading of the whole
// device (total − free: context, BLAS workspaces and all), its maximum over the step boundaries.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
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
#include "memory/DeviceAllocator.h"
#include "model/DeviceWeights.h"   // defines: placeWeights, placedWeightBytes
#include "model/MemoryEstimate.h"  // defines: estimateTrainingMemory
#include "model/ModelFolder.h"
#include "model/ReferenceShapes.h"
#include "runtime/OpTiming.h"  // defines: setOpTiming, takeOpTimes
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
  std::int64_t batch = 8;
  std::int64_t seq = 512;
  bool checkpointing = false;
  bool cpu = false;
  std::string json;
  std::string modelDir;  // --model: a model folder instead of a random model of --shape
  model::WeightQuantization quantization = model::WeightQuantization::None;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "bench_gpu_train: %s\n"
               "usage: bench_gpu_train --shape qwen2.5-0.5b|llama-3.2-1b|tiny "
               "[--gemm vendor|built-in] [--warmup N] [--steps N] [--profile-steps N] "
               "[--batch B] [--seq S] [--checkpointing] [--device gpu|cpu] [--json FILE]\n"
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

// Runs `count` steps, each between two device syncs; returns their wall-clock seconds.
double runSteps(train::TrainLoop& loop, compute::Backend& backend, int count,
                MemoryReadings& memory, double& lastLoss) {
  backend.synchronize();
  double seconds = 0;
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    lastLoss = loop.step().loss;
    backend.synchronize();
    seconds += secondsSince(start);
    memory.sampleDriver(backend);  // outside the timed span
  }
  return seconds;
}

struct Result {
  std::string device;
  double buildSeconds = 0;
  double warmupSeconds = 0;
  double timedSeconds = 0;
  double profiledSeconds = 0;
  double lastLoss = 0;
  MemoryReadings memory;
  std::vector<runtime::gpu::OpTime> ops;          // summed over the profiled steps
  std::optional<model::TrainingMemory> estimate;  // with --model: the memory model's numbers
};

Result runBenchmark(const Options& o, compute::Backend& backend) {
  Result r;
  r.device = backend.capabilities().name;
  const auto buildStart = std::chrono::steady_clock::now();
  // With --model the folder's mapping backs the placed weights (on the CPU) and must outlive them.
  std::optional<model::ModelFolder> folder;
  model::ModelWeights weights;
  if (o.modelDir.empty()) {
    weights = bench::randomWeights(backend, o.config);
  } else {
    const memory::OwnerScope owner(memory::Owner::Weights);
    folder.emplace(model::ModelFolder::open(o.modelDir));
    weights = model::placeWeights(backend, folder->weights(), {}, o.quantization);
  }
  const model::ModelConfig& config = folder ? folder->config() : o.config;
  backend.synchronize();
  r.buildSeconds = secondsSince(buildStart);

  const int totalSteps = o.warmup + o.steps + o.profileSteps;
  train::TrainConfig tc;
  tc.lora.rank = 8;
  tc.lora.alpha = 16;
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
    r.estimate = model::estimateTrainingMemory(config, shape, o.batch * o.seq);
  }
  train::TrainLoop loop(backend, config, weights,
                        bench::randomData(config, o.batch * totalSteps, o.seq), tc);
  r.warmupSeconds = runSteps(loop, backend, o.warmup, r.memory, r.lastLoss);
  r.timedSeconds = runSteps(loop, backend, o.steps, r.memory, r.lastLoss);
  runtime::gpu::setOpTiming(true);
  r.profiledSeconds = runSteps(loop, backend, o.profileSteps, r.memory, r.lastLoss);
  runtime::gpu::setOpTiming(false);
  r.ops = runtime::gpu::takeOpTimes();
  r.memory.takePeaks(backend);
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

std::string gibText(std::optional<std::uint64_t> bytes) {
  if (!bytes) {
    return "n/a";
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(*bytes) / kGiB);
  return text;
}

void printReport(const Options& o, const Result& r) {
  std::printf("%s, %s GEMM, B%lld x S%lld, LoRA r8 x 7, checkpointing %s, on %s\n", o.shape.c_str(),
              compute::gemmImplementationName(o.gemm), static_cast<long long>(o.batch),
              static_cast<long long>(o.seq), o.checkpointing ? "on" : "off", r.device.c_str());
  std::printf("  weights built in %.1f s; %d warm-up steps %.2f s\n", r.buildSeconds, o.warmup,
              r.warmupSeconds);
  std::printf("  %d timed steps: %.0f tokens/s, %.2f ms/step, last loss %.4f\n", o.steps,
              static_cast<double>(o.batch * o.seq) * o.steps / r.timedSeconds,
              1000.0 * r.timedSeconds / o.steps, r.lastLoss);
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
  if (o.profileSteps == 0) {
    return;
  }
  const double wallMs = 1000.0 * r.profiledSeconds / o.profileSteps;
  std::printf("  breakdown over %d profiled steps (%.2f ms/step with op timing on):\n",
              o.profileSteps, wallMs);
  for (const auto& [name, ms] : classBreakdown(o, r)) {
    std::printf("    %-18s %9.2f ms/step %5.1f %%\n", name.c_str(), ms, 100.0 * ms / wallMs);
  }
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
  return {{"program", "bench_gpu_train"},
          {"impl", std::string("lorascope-") + compute::gemmImplementationName(o.gemm)},
          {"shape", o.shape},
          {"quantize", model::quantizationName(o.quantization)},
          {"estimated_peak_gib",
           r.estimate ? nlohmann::json(static_cast<double>(r.estimate->peakBytes) / kGiB)
                      : nlohmann::json(nullptr)},
          {"gpu", r.device},
          {"batch", o.batch},
          {"seq", o.seq},
          {"checkpointing", o.checkpointing},
          {"warmup_steps", o.warmup},
          {"timed_steps", o.steps},
          {"profiled_steps", o.profileSteps},
          {"weights_build_s", r.buildSeconds},
          {"warmup_s", r.warmupSeconds},
          {"s_per_step", r.timedSeconds / o.steps},
          {"tokens_per_s", static_cast<double>(o.batch * o.seq) * o.steps / r.timedSeconds},
          {"last_loss", r.lastLoss},
          {"peak_reserved_gib", gib(r.memory.peakReservedBytes)},
          {"peak_allocated_gib", gib(r.memory.peakAllocatedBytes)},
          {"driver_used_gib", gib(r.memory.driverUsedBytes)},
          {"profiled_ms_per_step",
           o.profileSteps > 0 ? 1000.0 * r.profiledSeconds / o.profileSteps : 0.0},
          {"breakdown_ms_per_step",
           o.profileSteps > 0 ? nlohmann::json(classBreakdown(o, r)) : nlohmann::json::object()},
          {"ops", ops}};
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
