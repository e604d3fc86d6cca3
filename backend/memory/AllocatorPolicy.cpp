// AllocatorPolicy.cpp — policy validation and the round-up arithmetic.
#include "memory/AllocatorPolicy.h"

#include <bit>
#include <cstdio>
#include <stdexcept>

#include "memory/SimulatedDevice.h"  // defines: formatBytes

namespace lorascope::memory {

const char* ownerName(Owner owner) {
  switch (owner) {
    case Owner::Weights:
      return "weights";
    case Owner::Lora:
      return "lora";
    case Owner::Grads:
      return "grads";
    case Owner::Optimizer:
      return "optimizer";
    case Owner::Activations:
      return "activations";
    case Owner::Workspace:
      return "workspace";
    case Owner::Other:
      return "other";
  }
  return "other";
}

const char* modeName(AllocatorMode mode) {
  return mode == AllocatorMode::Arena ? "arena" : "caching";
}

void validatePolicy(const AllocatorPolicy& policy) {
  if (!(policy.garbageCollectionThreshold >= 0.0 && policy.garbageCollectionThreshold < 1.0)) {
    throw std::invalid_argument("allocator policy: garbage_collection_threshold must be in [0, 1)");
  }
  if (policy.roundupPower2Divisions > 1 && !std::has_single_bit(policy.roundupPower2Divisions)) {
    throw std::invalid_argument(
        "allocator policy: roundup_power2_divisions must be a power of two, got " +
        std::to_string(policy.roundupPower2Divisions));
  }
  // Below a large segment, "never split" would also forbid packing 1-10 MiB requests.
  if (policy.maxSplitBytes < kLargeSegmentBytes) {
    throw std::invalid_argument("allocator policy: max_split_size must be at least " +
                                formatBytes(kLargeSegmentBytes) + ", got " +
                                formatBytes(policy.maxSplitBytes));
  }
  if (policy.mode == AllocatorMode::Arena && policy.arenaBytes == 0) {
    throw std::invalid_argument("allocator policy: arena mode needs arena_bytes from the plan");
  }
}

std::string describePolicy(const AllocatorPolicy& policy) {
  std::string text = std::string("mode=") + modeName(policy.mode);
  text +=
      " max_split=" +
      (policy.maxSplitBytes == kUnlimitedSplit ? "unlimited" : formatBytes(policy.maxSplitBytes));
  char threshold[16];
  std::snprintf(threshold, sizeof threshold, "%.2f", policy.garbageCollectionThreshold);
  text += std::string(" gc_threshold=") + threshold;
  text += " roundup_divisions=" + std::to_string(policy.roundupPower2Divisions);
  if (policy.mode == AllocatorMode::Arena) {
    text += " arena=" + formatBytes(policy.arenaBytes);
  }
  return text;
}

std::size_t roundedBlockBytes(std::size_t bytes, unsigned divisions) {
  if (bytes <= kMinBlockBytes) {
    return kMinBlockBytes;
  }
  std::size_t size = bytes;
  // Only where a step is at least a block: below that, 512-byte rounding is finer already.
  if (divisions > 1 && size > kMinBlockBytes * divisions && !std::has_single_bit(size)) {
    // Between 2^k and 2^(k+1) there are `divisions` steps of 2^k / divisions bytes.
    const std::size_t floorPow2 = std::bit_floor(size);
    const std::size_t step = floorPow2 / divisions;
    if (step > 0) {
      size = (size + step - 1) / step * step;
    }
  }
  return (size + kMinBlockBytes - 1) / kMinBlockBytes * kMinBlockBytes;
}

bool isSmallBlock(std::size_t blockBytes) {
  return blockBytes <= kSmallRequestBytes;
}

std::size_t segmentBytesFor(std::size_t blockBytes) {
  if (isSmallBlock(blockBytes)) {
    return kSmallSegmentBytes;
  }
  if (blockBytes < kMinLargeAllocBytes) {
    return kLargeSegmentBytes;
  }
  return (blockBytes + kLargeRoundBytes - 1) / kLargeRoundBytes * kLargeRoundBytes;
}

}  // namespace lorascope::memory
