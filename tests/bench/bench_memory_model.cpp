// bench_memory_model.cpp — a benchmark program (not a test): the memory model
// (model/MemoryEstimate.h) against real training steps. For each reference shape (Qwen2.5-0.5B,
// Llama-3.2-1B; random bf16 weights, tests/bench/RandomModel.h) with and without activation
// checkpointing, it runs optimizer steps through the real TrainLoop on GPU 0 and prints the
// estimate beside the caching allocator's peak allocated and peak reserved bytes. Exit 1 when an
// estimate is off peak allocated by more than the tolerance. scripts/gpu-check.sh memory runs it.
//
//   bench_memory_model [--batch B] [--seq S] [--steps N] [--tolerance F] [--shape NAME ...]
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "GpuOrSkip.h"    // defines: requireGpu, skipWithoutGpu
#include "RandomModel.h"  // defines: randomWeights, randomData
#include "compute/Backend.h"
#include "memory/DeviceAllocator.h"
#include "model/MemoryEstimate.h"
#include "model/ModelLayout.h"  // defines: countParameters
#include "model/ReferenceShapes.h"
#include "train/TrainLoop.h"

using namespace lorascope;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Options {
  std::int64_t batch = 8;
  std::int64_t seq = 512;
  int steps = 3;
  double tolerance = 0.15;
  std::vector<std::string> shapes = {"qwen2.5-0.5b", "llama-3.2-1b"};
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "bench_memory_model: %s\nusage: bench_memory_model [--batch B] [--seq S] "
               "[--steps N] [--tolerance F] [--shape qwen2.5-0.5b|llama-3.2-1b ...]\n",
               problem.c_str());
  std::exit(2);
}

Options parseOptions(int argc, char** argv) {
  Options o;
  bool shapesGiven = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      usage("unknown option or missing value: " + flag);
    }
    const std::string value = argv[++i];
    try {
      if (flag == "--batch") {
        o.batch = std::stoll(value);
      } else if (flag == "--seq") {
        o.seq = std::stoll(value);
      } else if (flag == "--steps") {
        o.steps = std::stoi(value);
      } else if (flag == "--tolerance") {
        o.tolerance = std::stod(value);
      } else if (flag == "--shape") {
        if (!model::referenceShape(value)) {
          usage("unknown --shape '" + value + "'");
        }
        if (!shapesGiven) {
          o.shapes.clear();
          shapesGiven = true;
        }
        o.shapes.push_back(value);
      } else {
        usage("unknown option: " + flag);
      }
    } catch (const std::logic_error&) {
      usage(flag + " needs a number, got '" + value + "'");
    }
  }
  if (o.batch < 1 || o.seq < 2 || o.steps < 1 || !(o.tolerance > 0)) {
    usage("--batch ≥ 1, --seq ≥ 2, --steps ≥ 1 and --tolerance > 0");
  }
  return o;
}

struct Measured {
  std::string device;
  std::uint64_t weightsBytes = 0;  // allocated once the weights were built
  std::uint64_t peakAllocatedBytes = 0;
  std::uint64_t peakReservedBytes = 0;
};

// A fresh backend (a fresh allocator, so fresh peaks) and `steps` optimizer steps.
Measured measure(const Options& o, const model::ModelConfig& config, bool checkpointing) {
  std::unique_ptr<compute::Backend> backend = test::requireGpu();
  memory::DeviceAllocator* allocator = backend->deviceAllocator();
  if (allocator == nullptr) {
    throw std::runtime_error("the GPU backend has no device allocator");
  }
  Measured m;
  m.device = backend->capabilities().name;
  const model::ModelWeights weights = bench::randomWeights(*backend, config);
  backend->synchronize();
  m.weightsBytes = static_cast<std::uint64_t>(allocator->stats().allocatedBytes.current);
  train::TrainConfig tc;
  tc.lora.rank = 8;
  tc.lora.alpha = 16;
  tc.microBatchSize = o.batch;
  tc.maxSeqLen = o.seq;
  tc.maxSteps = o.steps;
  tc.activationCheckpointing = checkpointing;
  train::TrainLoop loop(*backend, config, weights,
                        bench::randomData(config, o.batch * o.steps, o.seq), tc);
  while (!loop.finished()) {
    loop.step();
  }
  backend->synchronize();
  const memory::AllocatorStats stats = allocator->stats();
  m.peakAllocatedBytes = static_cast<std::uint64_t>(stats.allocatedBytes.peak);
  m.peakReservedBytes = static_cast<std::uint64_t>(stats.reservedBytes.peak);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parseOptions(argc, argv);
  int status = 0;
  std::printf(
      "memory model vs real steps: micro-batch %lld x %lld tokens, LoRA r8 on "
      "q,k,v,o,gate,up,down, %d steps, tolerance %.0f%% of peak allocated\n",
      static_cast<long long>(o.batch), static_cast<long long>(o.seq), o.steps, 100 * o.tolerance);
  std::printf("%-14s %-13s %11s %15s %14s %10s %9s\n", "shape", "checkpointing", "estimate",
              "peak allocated", "peak reserved", "est/alloc", "verdict");
  for (const std::string& name : o.shapes) {
    const model::ModelConfig config = *model::referenceShape(name);
    for (bool checkpointing : {false, true}) {
      try {
        const Measured m = measure(o, config, checkpointing);
        model::TrainingShape shape;
        // The weights as the device holds them: every distinct parameter in bf16.
        shape.weightsBytes = 2 * static_cast<std::uint64_t>(model::countParameters(config).total);
        shape.activationCheckpointing = checkpointing;
        shape.stackedQkvGradient = true;  // bf16 q/k/v on the GPU, stacked as randomWeights does
        const model::TrainingMemory estimate =
            model::estimateTrainingMemory(config, shape, o.batch * o.seq);
        const double ratio =
            static_cast<double>(estimate.peakBytes) / static_cast<double>(m.peakAllocatedBytes);
        const bool within = std::fabs(ratio - 1.0) <= o.tolerance;
        status = within ? status : 1;
        std::printf("%-14s %-13s %7.2f GiB %11.2f GiB %10.2f GiB %10.3f %9s\n", name.c_str(),
                    checkpointing ? "on" : "off", estimate.peakBytes / kGiB,
                    m.peakAllocatedBytes / kGiB, m.peakReservedBytes / kGiB, ratio,
                    within ? "ok" : "OFF");
        std::printf(
            "    on %s; weights estimated %.3f GiB, allocated %.3f GiB; saved %.2f GiB, "
            "loss %.2f GiB, backward %.2f GiB, LoRA state %.3f GiB\n",
            m.device.c_str(), shape.weightsBytes / kGiB, m.weightsBytes / kGiB,
            estimate.savedBytes / kGiB, estimate.lossBytes / kGiB, estimate.backwardBytes / kGiB,
            (estimate.fixedBytes() - estimate.weightsBytes) / kGiB);
        std::fflush(stdout);
      } catch (const test::NoGpu& none) {
        return test::skipWithoutGpu("bench_memory_model", none.reason);
      } catch (const std::exception& error) {
        std::printf("%-14s %-13s failed: %s\n", name.c_str(), checkpointing ? "on" : "off",
                    error.what());
        status = 1;
      }
    }
  }
  return status;
}
