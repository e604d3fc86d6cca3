// FragmentationScenario.cpp — replays the workload of FragmentationScenario.h on a SimulatedDevice.
#include "FragmentationScenario.h"

#include <random>
#include <vector>

#include "memory/DeviceAllocator.h"
#include "memory/SimulatedDevice.h"

namespace lorascope::memory::scenario {
namespace {

constexpr std::uint64_t kBf16Bytes = 2;
constexpr std::uint64_t kF32Bytes = 4;

struct Workload {
  const ScenarioShape& shape;
  DeviceAllocator& allocator;

  std::uintptr_t take(std::uint64_t bytes, Owner owner) {
    return allocator.allocate(bytes, owner).address;
  }

  // Frozen weights, LoRA adapters on q/k/v/o, their grads and two AdamW moments.
  void loadModel() {
    const std::uint64_t d = shape.hidden;
    const std::uint64_t f = shape.intermediate;
    take(shape.vocab * d * kBf16Bytes, Owner::Weights);  // embedding
    take(shape.vocab * d * kBf16Bytes, Owner::Weights);  // lm head
    for (int layer = 0; layer < shape.layers; ++layer) {
      for (int i = 0; i < 4; ++i) {
        take(d * d * kBf16Bytes, Owner::Weights);
      }
      for (int i = 0; i < 3; ++i) {
        take(d * f * kBf16Bytes, Owner::Weights);
      }
      take(2 * d * kBf16Bytes, Owner::Weights);  // two norms
      for (int i = 0; i < 8; ++i) {              // A and B of q, k, v, o
        const std::uint64_t loraBytes = d * shape.loraRank * kF32Bytes;
        take(loraBytes, Owner::Lora);
        take(loraBytes, Owner::Grads);
        take(loraBytes, Owner::Optimizer);
        take(loraBytes, Owner::Optimizer);
      }
    }
  }

  // One step; returns false when it ran out of memory (everything it held is freed).
  bool step(std::int64_t tokens, double& fragmentationAtPeak, std::size_t& cachedFreeAtPeak) {
    const std::uint64_t t = static_cast<std::uint64_t>(tokens);
    const std::uint64_t d = shape.hidden;
    const std::uint64_t f = shape.intermediate;
    std::vector<std::vector<std::uintptr_t>> saved(static_cast<std::size_t>(shape.layers));
    std::vector<std::uintptr_t> live;
    try {
      for (int layer = 0; layer < shape.layers; ++layer) {
        auto& keep = saved[static_cast<std::size_t>(layer)];
        for (int i = 0; i < 5; ++i) {  // normed input, q, k, v, attention output
          keep.push_back(take(t * d * kBf16Bytes, Owner::Activations));
        }
        const std::uintptr_t scratch = take(t * f * kF32Bytes, Owner::Workspace);
        for (int i = 0; i < 3; ++i) {  // gate, up, activation product
          keep.push_back(take(t * f * kBf16Bytes, Owner::Activations));
        }
        allocator.deallocate(scratch);
      }
      for (std::uint64_t done = 0; done < t; done += shape.lmHeadChunkTokens) {
        const std::uint64_t chunk = std::min<std::uint64_t>(shape.lmHeadChunkTokens, t - done);
        const std::uintptr_t logits = take(chunk * shape.vocab * kF32Bytes, Owner::Workspace);
        allocator.deallocate(logits);
      }
      const AllocatorStats peak = allocator.stats();
      fragmentationAtPeak = peak.externalFragmentation;
      cachedFreeAtPeak = peak.cachedFreeBytes;
      for (int layer = shape.layers - 1; layer >= 0; --layer) {
        const std::uintptr_t gradMlp = take(t * f * kBf16Bytes, Owner::Activations);
        const std::uintptr_t gradHidden = take(t * d * kBf16Bytes, Owner::Activations);
        for (const std::uintptr_t address : saved[static_cast<std::size_t>(layer)]) {
          allocator.deallocate(address);
        }
        saved[static_cast<std::size_t>(layer)].clear();
        allocator.deallocate(gradMlp);
        allocator.deallocate(gradHidden);
      }
      return true;
    } catch (const OutOfMemoryError&) {
      for (const auto& keep : saved) {
        for (const std::uintptr_t address : keep) {
          allocator.deallocate(address);
        }
      }
      return false;
    }
  }
};

}  // namespace

std::uint64_t activationBytesPerToken(const ScenarioShape& shape) {
  const std::uint64_t d = shape.hidden;
  const std::uint64_t f = shape.intermediate;
  const std::uint64_t savedPerLayer = 5 * d * kBf16Bytes + 3 * f * kBf16Bytes;
  return savedPerLayer * static_cast<std::uint64_t>(shape.layers) + f * kF32Bytes;
}

AllocatorPolicy arenaPolicyFor(const ScenarioShape& shape) {
  AllocatorPolicy policy;
  policy.mode = AllocatorMode::Arena;
  const std::uint64_t tokens = static_cast<std::uint64_t>(shape.maxSequence * shape.microBatch);
  // Saved activations and the widest transient (the fp32 MLP scratch or an lm-head chunk).
  const std::uint64_t lmHead = static_cast<std::uint64_t>(shape.lmHeadChunkTokens) *
                               static_cast<std::uint64_t>(shape.vocab) * kF32Bytes;
  const std::uint64_t planned = activationBytesPerToken(shape) * tokens + lmHead;
  policy.arenaBytes = static_cast<std::size_t>(static_cast<double>(planned) * (1.0 + kArenaSlack));
  return policy;
}

ScenarioResult runScenario(const ScenarioShape& shape, const AllocatorPolicy& policy) {
  auto device = std::make_shared<SimulatedDevice>(shape.deviceBytes, shape.placement);
  ScenarioResult result;
  result.policyText = describePolicy(policy);
  DeviceAllocator allocator(device, AllocatorPolicy{});
  Workload workload{shape, allocator};
  workload.loadModel();
  allocator.setPolicy(policy);  // weights are loaded; the training policy starts at step 0
  std::mt19937 rng(shape.seed);
  std::uniform_int_distribution<std::int64_t> sequence(shape.minSequence, shape.maxSequence);
  double fragmentationSum = 0.0;
  double cachedFreeSum = 0.0;
  std::uint64_t allocsAtHalf = 0;
  for (int step = 0; step < shape.steps; ++step) {
    allocator.beginStep(step);
    if (step == shape.steps / 2) {
      allocsAtHalf = allocator.stats().deviceAllocCount;
    }
    double fragmentation = 0.0;
    std::size_t cachedFree = 0;
    if (workload.step(sequence(rng) * shape.microBatch, fragmentation, cachedFree)) {
      ++result.stepsCompleted;
      fragmentationSum += fragmentation;
      cachedFreeSum += static_cast<double>(cachedFree);
      result.maxFragmentationAtPeak = std::max(result.maxFragmentationAtPeak, fragmentation);
    } else {
      ++result.ooms;
    }
  }
  const AllocatorStats stats = allocator.stats();
  result.peakReservedBytes = static_cast<std::size_t>(stats.reservedBytes.peak);
  result.peakAllocatedBytes = static_cast<std::size_t>(stats.allocatedBytes.peak);
  if (result.stepsCompleted > 0) {
    result.meanFragmentationAtPeak = fragmentationSum / result.stepsCompleted;
    result.meanCachedFreeBytesAtPeak = cachedFreeSum / result.stepsCompleted;
  }
  result.deviceAllocs = stats.deviceAllocCount;
  result.steadyStateDeviceAllocs = stats.deviceAllocCount - allocsAtHalf;
  result.allocRetries = stats.allocRetryCount;
  result.arenaOverflows = stats.arenaOverflowCount;
  return result;
}

}  // namespace lorascope::memory::scenario
