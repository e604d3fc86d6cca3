// AllocatorPolicy.h — the knobs of the caching allocator, its size constants and its round-up
// arithmetic (pure functions, tested without a device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/EnumNames.h"

namespace lorascope::memory {

// Size classes. The values follow PyTorch's CUDACachingAllocator, whose reasons hold for us too.
inline constexpr std::size_t kMinBlockBytes = 512;  // every block is a multiple: keeps alignment
inline constexpr std::size_t kSmallRequestBytes = std::size_t{1} << 20;  // <= 1 MiB: small pool
inline constexpr std::size_t kSmallSegmentBytes = std::size_t{2}
                                                  << 20;  // small blocks packed in 2 MiB
inline constexpr std::size_t kLargeSegmentBytes = std::size_t{20} << 20;   // 1-10 MiB share 20 MiB
inline constexpr std::size_t kMinLargeAllocBytes = std::size_t{10} << 20;  // >= 10 MiB: own segment
inline constexpr std::size_t kLargeRoundBytes = std::size_t{2}
                                                << 20;  // own segments round to 2 MiB
inline constexpr std::size_t kUnlimitedSplit = std::numeric_limits<std::size_t>::max();

// Who a block belongs to; the memory map colours by it.
enum class Owner : std::uint8_t { Weights, Lora, Grads, Optimizer, Activations, Workspace, Other };
inline constexpr int kOwnerCount = 7;
const char* ownerName(Owner owner);  // "weights", "lora", ...

enum class AllocatorMode : std::uint8_t {
  Caching,  // PyTorch-style caching: segments are kept and reused, split and merged
  Arena,    // caching plus one planned arena that serves every activation/workspace block
};
// The modes' names, in PYTORCH_*_ALLOC_CONF mappings, profile files ("allocator": {"mode"}) and
// the allocator-policy setting's values (settings/Builtin.cpp).
inline constexpr common::EnumName<AllocatorMode> kAllocatorModeNames[] = {
    {AllocatorMode::Caching, "caching"}, {AllocatorMode::Arena, "arena"}};
const char* modeName(AllocatorMode mode);

struct AllocatorPolicy {
  AllocatorMode mode = AllocatorMode::Caching;
  // Cached blocks at least this large are never split and are released first under pressure
  // (PyTorch's max_split_size_mb). Lowers fragmentation when request sizes vary.
  std::size_t maxSplitBytes = kUnlimitedSplit;
  // Fraction of device memory (0 < t < 1) above which idle cached segments are released before a
  // new one is allocated; 0 turns it off (PyTorch's garbage_collection_threshold).
  double garbageCollectionThreshold = 0.0;
  // Round requests up to one of N equal steps between powers of two (0 or 1: off; else a power
  // of two). Fewer distinct sizes reuse blocks better (PyTorch's roundup_power2_divisions).
  unsigned roundupPower2Divisions = 0;
  // Arena mode: bytes reserved up front for activations and workspace (from the plan).
  std::size_t arenaBytes = 0;

  bool operator==(const AllocatorPolicy&) const = default;
};

// Throws std::invalid_argument naming the bad field (threshold outside [0,1), divisions not a power
// of two, max split below the large-segment size, arena mode without a size).
void validatePolicy(const AllocatorPolicy& policy);
std::string describePolicy(const AllocatorPolicy& policy);  // one line for the run log

// PyTorch's allocator setting (PYTORCH_CUDA_ALLOC_CONF / PYTORCH_HIP_ALLOC_CONF) mapped to ours:
// "max_split_size_mb:512,garbage_collection_threshold:0.6,roundup_power2_divisions:4", plus our
// "mode:arena" and "arena_mb:N". Unknown or unsupported keys (expandable_segments) and bad values
// throw std::invalid_argument naming the key; the result is validated.
AllocatorPolicy parseAllocatorConf(std::string_view conf);
// The policy as profiles and engine commands carry it; policyFromJson rejects unknown keys.
nlohmann::json policyToJson(const AllocatorPolicy& policy);
AllocatorPolicy policyFromJson(const nlohmann::json& json);

// The block size a request of `bytes` gets: a multiple of kMinBlockBytes, after the power-of-two
// division round-up when `divisions` > 1.
std::size_t roundedBlockBytes(std::size_t bytes, unsigned divisions);
// The segment a block of `blockBytes` is carved from when no cached block fits.
std::size_t segmentBytesFor(std::size_t blockBytes);
bool isSmallBlock(std::size_t blockBytes);

}  // namespace lorascope::memory
