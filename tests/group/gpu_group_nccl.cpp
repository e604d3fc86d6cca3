// gpu_group_nccl.cpp — the group through the real NCCL (RCCL) path on the GPU machine (label gpu).
//
//   gpu_group_nccl collectives [--model DIR]
//       one rank: the library loads, the group forms through its rendezvous file, a bucketed sum
//       over device memory, a broadcast and a barrier leave the values as they must, and the
//       calls of a 35 MB sum are timed (one rank moves no data);
//   gpu_group_nccl train [--model DIR]
//       one rank: the GPU trainer joined to a NCCL group of 1 follows the trainer alone;
//   gpu_group_nccl rank R SIZE DEVICE RENDEZVOUS [--model DIR]
//       rank R of SIZE processes, one per GPU (scripts/gpu-check.sh group starts them, with
//       NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 for the socket transport): each runs the trainer
//       alone on its GPU, then as its rank, and checks that the group's curve is the one-GPU curve
//       (1e-5 relative) and that every rank ends with the adapter rank 0 broadcasts;
//   gpu_group_nccl scale SHAPE R SIZE DEVICE RENDEZVOUS
//       rank R of SIZE on a random model of SHAPE (qwen2.5-0.5b, llama-3.2-1b; bench's
//       RandomModel.h), micro-batch 8 × 512 tokens per GPU: the trainer alone (one micro-batch a
//       step), then the group (one micro-batch per rank a step); tokens/s over the step cycle of
//       20 timed steps after 3, both printed by rank 0 with their ratio. The trainer's loop
//       (TrainLoop::step), not the engine's: the product's loop does not run a group yet.
// Without a GPU (cpu flavour, no device, no library) it prints SKIP and exits 77.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "GpuOrSkip.h"
#include "RandomModel.h"  // defines: randomWeights, randomData
#include "TestPaths.h"
#include "TrainExamples.h"
#include "group/GroupCheck.h"
#include "group/NcclCollective.h"
#include "model/DeviceWeights.h"  // defines: placeWeights
#include "model/ModelFolder.h"
#include "model/ReferenceShapes.h"
#include "train/TrainLoop.h"

using namespace lorascope;

namespace {

std::string modelDir =
    std::string(lstest::sourcePath("tests/model/data")) + "/llama_f32_legacy_rope";

struct Failed {
  std::string what;
};
void check(bool ok, const std::string& what) {
  if (!ok) {
    throw Failed{what};
  }
}

std::filesystem::path freshRendezvous(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("lorascope-" + name + "-" +
                     std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::remove(path);
  return path;
}

int collectives() {
  auto backend = test::requireGpu();
  const auto rendezvous = freshRendezvous("nccl-1");
  group::GroupOfOneCheck one = group::checkGroupOfOne(*backend, 0, rendezvous);
  if (!one.ran) {
    throw test::NoGpu{one.detail};
  }
  std::printf("%s\n", one.detail.c_str());
  check(one.passed, "the group of one's collectives");
  check(!std::filesystem::exists(rendezvous), "the rendezvous file is removed once read");
  group::Collective* group = one.group.get();

  const std::int64_t big = 35 << 20 >> 2;  // 35 MB of f32 gradients
  compute::Tensor g = backend->empty(compute::DType::F32, {big});
  backend->fillZero(std::vector<compute::Tensor*>{&g});
  backend->synchronize();
  group::allReduceBucketed(*group, g.as<float>(), static_cast<std::size_t>(big));  // warm-up
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRounds = 20;
  for (int i = 0; i < kRounds; ++i) {
    group::allReduceBucketed(*group, g.as<float>(), static_cast<std::size_t>(big));
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      kRounds;
  // One rank moves no data: this is the cost of the calls and the waits, which every step of a
  // group pays on top of the transfer.
  std::printf("bucketed sum of 35 MB (2 buckets of 25 MiB) over 1 rank, no transfer: %.3f ms\n",
              ms);
  std::printf("PASS: collectives over %s, 1 rank\n", group->name().c_str());
  return 0;
}

train::TrainConfig config() {
  train::TrainConfig c;
  c.lora.rank = 8;
  c.lora.alpha = 16;
  c.lora.dropout = 0.1;
  c.adamw.learningRate = 5e-3;
  c.microBatchSize = 2;
  c.gradAccumulation = 4;
  c.maxSteps = 50;
  c.maxSeqLen = 16;
  c.seed = 31;
  return c;
}

struct Curve {
  std::vector<double> losses;
  train::LoraAdapter adapter;
};

Curve train(compute::Backend& backend, const model::ModelFolder& folder,
            group::Collective* collective) {
  const model::ModelWeights placed = model::placeWeights(backend, folder.weights());
  train::TrainLoop loop(backend, folder.config(), placed, test::syntheticExamples(64, 9), config());
  if (collective != nullptr) {
    loop.joinGroup(*collective);
  }
  Curve curve;
  while (!loop.finished()) {
    curve.losses.push_back(loop.step().loss);
  }
  curve.adapter = loop.state().adapter;
  return curve;
}

void compareCurves(const Curve& got, const Curve& want, double tolerance) {
  check(got.losses.size() == want.losses.size(), "the same number of steps");
  double worst = 0.0;
  for (std::size_t i = 0; i < want.losses.size(); ++i) {
    worst = std::max(worst, std::fabs(got.losses[i] - want.losses[i]) / std::fabs(want.losses[i]));
  }
  std::printf(
      "%zu steps: largest relative loss difference %.3g (tolerance %.0e); loss %.6f -> "
      "%.6f\n",
      want.losses.size(), worst, tolerance, want.losses.front(), want.losses.back());
  check(worst <= tolerance, "the group's curve is the one-GPU curve");
}

int trainOneRank() {
  auto backend = test::requireGpu();
  const model::ModelFolder folder = model::ModelFolder::open(modelDir);
  const Curve alone = train(*backend, folder, nullptr);
  const auto rendezvous = freshRendezvous("nccl-train");
  auto group = group::openNcclGroup({0, 1, 0, rendezvous, 60'000});
  std::filesystem::remove(rendezvous);
  const Curve grouped = train(*backend, folder, group.get());
  compareCurves(grouped, alone, 1e-6);
  std::printf("PASS: the GPU trainer in a %s group of 1 follows the trainer alone\n",
              group->name().c_str());
  return 0;
}

int rank(int r, int size, int device, const std::filesystem::path& rendezvous) {
  std::unique_ptr<compute::Backend> backend;
  try {
    backend = compute::createGpuBackend(device);
  } catch (const compute::NoGpuError& e) {
    throw test::NoGpu{e.what()};
  }
  const model::ModelFolder folder = model::ModelFolder::open(modelDir);
  const Curve alone = train(*backend, folder, nullptr);
  auto group = group::openNcclGroup({r, size, device, rendezvous, 120'000});
  const auto start = std::chrono::steady_clock::now();
  const Curve grouped = train(*backend, folder, group.get());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("rank %d of %d (GPU %d), %s: %zu steps in %.2f s\n", r, size, device,
              group->name().c_str(), grouped.losses.size(), seconds);
  compareCurves(grouped, alone, 1e-5);
  // Every rank holds rank 0's adapter: rank 0 broadcasts its B of the first site, the others
  // compare.
  const std::vector<float>& b = grouped.adapter.weights.front().b;
  compute::Tensor t =
      backend->upload(b, compute::DType::F32, {static_cast<std::int64_t>(b.size())});
  backend->synchronize();
  group->broadcast(t.as<float>(), b.size(), 0);
  check(backend->download(t) == b, "rank " + std::to_string(r) + " holds rank 0's adapter");
  group->barrier();
  std::printf("PASS: rank %d of %d\n", r, size);
  return 0;
}

// Real tokens per second over `steps` step cycles after `warmup` steps of `loop`.
double tokensPerSecond(train::TrainLoop& loop, int warmup, int steps) {
  for (int i = 0; i < warmup; ++i) {
    loop.step();
  }
  std::int64_t tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    tokens += loop.step().tokens;
  }
  return static_cast<double>(tokens) /
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int scale(const std::string& shape, int r, int size, int device,
          const std::filesystem::path& rendezvous) {
  const std::optional<model::ModelConfig> modelConfig = model::referenceShape(shape);
  check(modelConfig.has_value(), "a reference shape: " + shape);
  std::unique_ptr<compute::Backend> backend;
  try {
    backend = compute::createGpuBackend(device);
  } catch (const compute::NoGpuError& e) {
    throw test::NoGpu{e.what()};
  }
  const model::ModelWeights weights = bench::randomWeights(*backend, *modelConfig);
  constexpr int kWarmup = 3, kSteps = 20;
  constexpr std::int64_t kMicro = 8, kSeq = 512;
  train::TrainConfig c;
  c.lora.rank = 8;
  c.lora.alpha = 16;
  c.adamw.learningRate = 2e-4;
  c.microBatchSize = kMicro;
  c.maxSeqLen = kSeq;
  c.maxSteps = kWarmup + kSteps;
  const auto data = bench::randomData(*modelConfig, kMicro * size * (kWarmup + kSteps), kSeq);
  double alone = 0.0;
  {
    train::TrainLoop loop(*backend, *modelConfig, weights, data, c);
    alone = tokensPerSecond(loop, kWarmup, kSteps);
  }
  auto group = group::openNcclGroup({r, size, device, rendezvous, 120'000});
  c.gradAccumulation = size;  // one micro-batch per rank a step
  train::TrainLoop loop(*backend, *modelConfig, weights, data, c);
  loop.joinGroup(*group);
  const double grouped = tokensPerSecond(loop, kWarmup, kSteps);
  if (r == 0) {
    std::printf(
        "%s, micro-batch %lld x %lld per GPU: 1 GPU %.0f tokens/s, %d GPUs (%s) %.0f "
        "tokens/s, %.2fx\n",
        shape.c_str(), static_cast<long long>(kMicro), static_cast<long long>(kSeq), alone, size,
        group->name().c_str(), grouped, grouped / alone);
  }
  group->barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--model") {
      modelDir = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
                 args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      break;
    }
  }
  const std::string mode = args.empty() ? "collectives" : args[0];
  try {
    if (mode == "collectives") {
      return collectives();
    }
    if (mode == "train") {
      return trainOneRank();
    }
    if (mode == "scale" && args.size() == 6) {
      return scale(args[1], std::stoi(args[2]), std::stoi(args[3]), std::stoi(args[4]), args[5]);
    }
    if (mode == "rank" && args.size() == 5) {
      return rank(std::stoi(args[1]), std::stoi(args[2]), std::stoi(args[3]), args[4]);
    }
    std::fprintf(stderr,
                 "usage: gpu_group_nccl collectives | train | rank R SIZE DEVICE RENDEZVOUS | "
                 "scale SHAPE R SIZE DEVICE RENDEZVOUS [--model DIR]\n");
    return 2;
  } catch (const test::NoGpu& none) {
    return test::skipWithoutGpu("gpu_group_nccl", none.reason);
  } catch (const Failed& f) {
    std::printf("FAIL: %s\n", f.what.c_str());
    return 1;
  } catch (const std::exception& e) {
    const group::CollectiveLibrary library = group::probeCollectiveLibrary();
    if (!library.available) {
      return test::skipWithoutGpu("gpu_group_nccl", library.reason);
    }
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
