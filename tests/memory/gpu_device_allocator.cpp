// gpu_device_allocator.cpp — the caching allocator over hipMalloc on the real GPU (Qt-free, label
// gpu; exit 77 = no GPU): blocks are real device memory, a forward-like step with variable
// sequence lengths measures allocator overhead (caching) and device allocations per step (arena),
// and a deliberately oversized batch produces the out-of-memory message.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "GpuOrSkip.h"
#include "common/Format.h"
#include "compute/Backend.h"
#include "memory/DeviceAllocator.h"
#include "memory/MicroBatchPlanner.h"

using namespace lorascope;
using memory::DeviceAllocator;
using memory::Owner;

namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  failures += ok ? 0 : 1;
}

compute::Tensor makeTensor(const std::shared_ptr<DeviceAllocator>& allocator, compute::DType dtype,
                           const compute::Shape& shape, Owner owner) {
  const std::size_t bytes =
      static_cast<std::size_t>(compute::numelOf(shape)) * compute::dtypeBytes(dtype);
  const memory::Allocation block = allocator->allocate(bytes, owner);
  return compute::Tensor(
      std::shared_ptr<void>(
          block.pointer(),
          [allocator](void* p) { allocator->deallocate(reinterpret_cast<std::uintptr_t>(p)); }),
      dtype, shape, compute::Device::Gpu);
}

constexpr std::int64_t kDim = 4096;
constexpr int kLayers = 24;
constexpr std::int64_t kRowChoices[] = {1024, 2048, 3072, 4096, 6144, 8192};  // tokens per step
constexpr std::int64_t kMaxRows = 8192;

// Bytes one token's saved activations take in the step below (y bf16 + rstd f32 per layer).
constexpr std::uint64_t kActivationBytesPerToken = kLayers * (kDim * 2 + 4);

struct StepStats {
  double medianStepMs = 0;
  double allocatorNsPerStep = 0;
  std::uint64_t steadyDeviceAllocs = 0;
};

// A forward-like pass: every layer's output is kept (as for backward), then all is freed.
StepStats runSteps(compute::Backend& gpu, const std::shared_ptr<DeviceAllocator>& allocator,
                   const std::vector<compute::Tensor>& inputs, const compute::Tensor& weight,
                   int steps, int warmup) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::size_t> pick(0, std::size(kRowChoices) - 1);
  std::vector<double> stepMs;
  std::uint64_t allocatorNs = 0;
  std::uint64_t allocsAtWarm = 0;
  for (int s = 0; s < steps; ++s) {
    allocator->beginStep(s);
    if (s == warmup) {
      allocsAtWarm = allocator->stats().deviceAllocCount;
    }
    const std::uint64_t nsBefore = allocator->stats().allocatorHostNs;
    const compute::Tensor& x = inputs[pick(rng)];
    const auto start = std::chrono::steady_clock::now();
    {
      std::vector<compute::Tensor> saved;
      saved.reserve(2 * kLayers);  // `previous` points into it: it must not reallocate
      const compute::Tensor* previous = &x;
      for (int layer = 0; layer < kLayers; ++layer) {
        saved.push_back(
            makeTensor(allocator, compute::DType::BF16, previous->shape(), Owner::Activations));
        compute::Tensor rstd =
            makeTensor(allocator, compute::DType::F32, {previous->dim(0)}, Owner::Activations);
        gpu.rmsnormForward(*previous, weight, 1e-5f, saved.back(), rstd);
        saved.push_back(std::move(rstd));
        previous = &saved[saved.size() - 2];
      }
      gpu.synchronize();
    }  // backward's frees
    if (s >= warmup) {
      stepMs.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
      allocatorNs += allocator->stats().allocatorHostNs - nsBefore;
    }
  }
  std::sort(stepMs.begin(), stepMs.end());
  StepStats out;
  out.medianStepMs = stepMs[stepMs.size() / 2];
  out.allocatorNsPerStep = static_cast<double>(allocatorNs) / static_cast<double>(stepMs.size());
  out.steadyDeviceAllocs = allocator->stats().deviceAllocCount - allocsAtWarm;
  return out;
}

}  // namespace

int run() {
  const std::unique_ptr<compute::Backend> gpu = test::gpuOrSkip("gpu_device_allocator");
  if (!gpu) {
    return test::kSkipExitCode;
  }
  std::shared_ptr<memory::DeviceMemory> device = memory::createHipDeviceMemory(0);
  const memory::DeviceMemoryInfo info = device->info();
  std::printf("device: %s, %s total, %s free\n", gpu->capabilities().name.c_str(),
              common::formatBytes(info.totalBytes).c_str(),
              common::formatBytes(info.freeBytes).c_str());

  // Blocks are real device memory: a kernel writes them and the values come back.
  auto caching = std::make_shared<DeviceAllocator>(device);
  const compute::Tensor ones =
      gpu->upload(std::vector<float>(4 * kDim, 1.0f), compute::DType::BF16, {4, kDim});
  const compute::Tensor weight =
      gpu->upload(std::vector<float>(kDim, 1.0f), compute::DType::BF16, {kDim});
  {
    compute::Tensor y = makeTensor(caching, compute::DType::BF16, {4, kDim}, Owner::Activations);
    compute::Tensor rstd = makeTensor(caching, compute::DType::F32, {4}, Owner::Activations);
    gpu->rmsnormForward(ones, weight, 1e-5f, y, rstd);
    const std::vector<float> r = gpu->download(rstd);
    const std::vector<float> yv = gpu->download(y);
    expect(std::abs(r[3] - 1.0f / std::sqrt(1.0f + 1e-5f)) < 1e-6f && yv[4 * kDim - 1] == 1.0f,
           "kernels write and read allocator blocks (rstd = 1/sqrt(1+eps), y = 1)");
  }

  std::vector<compute::Tensor> inputs;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (const std::int64_t rows : kRowChoices) {
    std::vector<float> values(static_cast<std::size_t>(rows * kDim));
    for (float& v : values) {
      v = normal(rng);
    }
    inputs.push_back(gpu->upload(values, compute::DType::BF16, {rows, kDim}));
  }

  const StepStats cached = runSteps(*gpu, caching, inputs, weight, 60, 10);
  const double overheadPercent = 100.0 * cached.allocatorNsPerStep / (cached.medianStepMs * 1e6);
  std::printf(
      "caching: median step %.3f ms, allocator %.1f us/step = %.2f%% of the step "
      "(%.0f ns per allocate or deallocate), %llu device allocs in 50 steady steps\n",
      cached.medianStepMs, cached.allocatorNsPerStep / 1000.0, overheadPercent,
      cached.allocatorNsPerStep / (4.0 * kLayers),
      static_cast<unsigned long long>(cached.steadyDeviceAllocs));
  const memory::AllocatorStats cachingStats = caching->stats();
  std::printf("caching stats: %s\n", memory::statsToJson(cachingStats).dump().c_str());
  const nlohmann::json snapshot = caching->snapshot();
  expect(!snapshot["segments"].empty() &&
             snapshot["segments"][0]["address"].get<std::uintptr_t>() != 0,
         "snapshot lists real segments (" + std::to_string(snapshot["segments"].size()) + ")");

  memory::AllocatorPolicy arenaPolicy;
  arenaPolicy.mode = memory::AllocatorMode::Arena;
  arenaPolicy.arenaBytes =
      static_cast<std::size_t>(static_cast<double>(kActivationBytesPerToken * kMaxRows) * 1.1);
  auto arena = std::make_shared<DeviceAllocator>(device, arenaPolicy);
  const StepStats planned = runSteps(*gpu, arena, inputs, weight, 60, 10);
  std::printf(
      "arena (%s): median step %.3f ms, allocator %.1f us/step, %llu device allocs in 50 "
      "steady steps, %llu overflows\n",
      common::formatBytes(arenaPolicy.arenaBytes).c_str(), planned.medianStepMs,
      planned.allocatorNsPerStep / 1000.0,
      static_cast<unsigned long long>(planned.steadyDeviceAllocs),
      static_cast<unsigned long long>(arena->stats().arenaOverflowCount));
  expect(planned.steadyDeviceAllocs == 0, "arena mode allocates nothing on the device per step");
  arena.reset();

  // Auto micro-batch on the real free memory, and the OOM message of a batch far too big.
  memory::PlanRequest request;
  request.model = {static_cast<std::uint64_t>(cachingStats.reservedBytes.current),
                   kActivationBytesPerToken};
  request.sequenceLength = 4096;
  request.effectiveBatch = 64;
  request.freeBytes = device->info().freeBytes;
  std::printf("planner: %s\n", memory::planMicroBatch(request).summary.c_str());
  const std::size_t oversizedBytes = kActivationBytesPerToken * 4096 * 512;  // micro-batch 512
  try {
    caching->allocate(oversizedBytes, Owner::Activations);
    expect(false, "an oversized batch must not fit");
  } catch (const memory::OutOfMemoryError& error) {
    std::printf("OOM message: %s\n", error.what());
    expect(error.details().requestedBytes == oversizedBytes &&
               error.details().deviceTotalBytes == info.totalBytes,
           "the OOM error carries the request and the device total");
    expect(caching->stats().oomCount == 1 && caching->stats().allocRetryCount == 1,
           "the cache was released and retried once before the OOM");
  }
  return failures == 0 ? 0 : 1;
}

int main() {
  try {
    return run();
  } catch (const std::exception& error) {
    std::printf("FAIL: unexpected error: %s\n", error.what());
    return 1;
  }
}
