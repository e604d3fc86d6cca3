// AllocatorPolicy.cpp — policy validation and the round-up arithmetic.
#include "memory/AllocatorPolicy.h"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "common/EnumNames.h"
#include "common/Format.h"

namespace lorascope::memory {
using common::formatBytes;

namespace {

constexpr common::EnumName<Owner> kOwnerNames[] = {{Owner::Weights, "weights"},
                                                   {Owner::Lora, "lora"},
                                                   {Owner::Grads, "grads"},
                                                   {Owner::Optimizer, "optimizer"},
                                                   {Owner::Activations, "activations"},
                                                   {Owner::Workspace, "workspace"},
                                                   {Owner::Other, "other"}};
static_assert(common::coversEnum(kOwnerNames) && std::size(kOwnerNames) == kOwnerCount);

static_assert(common::coversEnum(kAllocatorModeNames));

// The mode named `text`; throws std::invalid_argument starting with `context`.
AllocatorMode parseMode(std::string_view text, const char* context) {
  if (const std::optional<AllocatorMode> mode = common::parseEnum(kAllocatorModeNames, text)) {
    return *mode;
  }
  throw std::invalid_argument(std::string(context) + ": mode must be " +
                              common::enumNameList(kAllocatorModeNames, " or ") + ", got '" +
                              std::string(text) + "'");
}

}  // namespace

const char* ownerName(Owner owner) {
  return common::enumName(kOwnerNames, owner);
}

const char* modeName(AllocatorMode mode) {
  return common::enumName(kAllocatorModeNames, mode);
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

namespace lorascope::memory {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

double parseNumber(std::string_view key, std::string_view value) {
  const std::string text(value);
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(number >= 0.0)) {
    throw std::invalid_argument("allocator conf: " + std::string(key) +
                                " needs a non-negative number, got '" + text + "'");
  }
  return number;
}

std::size_t parseMiB(std::string_view key, std::string_view value) {
  const double mib = parseNumber(key, value);
  if (mib != static_cast<double>(static_cast<std::size_t>(mib))) {
    throw std::invalid_argument("allocator conf: " + std::string(key) + " must be whole MiB");
  }
  return static_cast<std::size_t>(mib) * kMiB;
}

}  // namespace

AllocatorPolicy parseAllocatorConf(std::string_view conf) {
  AllocatorPolicy policy;
  while (!conf.empty()) {
    const std::size_t comma = conf.find(',');
    const std::string_view entry = conf.substr(0, comma);
    conf = comma == std::string_view::npos ? std::string_view{} : conf.substr(comma + 1);
    if (entry.empty()) {
      continue;
    }
    const std::size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      throw std::invalid_argument("allocator conf: '" + std::string(entry) + "' is not key:value");
    }
    const std::string_view key = entry.substr(0, colon);
    const std::string_view value = entry.substr(colon + 1);
    if (key == "max_split_size_mb") {
      policy.maxSplitBytes = parseMiB(key, value);
    } else if (key == "garbage_collection_threshold") {
      policy.garbageCollectionThreshold = parseNumber(key, value);
    } else if (key == "roundup_power2_divisions") {
      policy.roundupPower2Divisions = static_cast<unsigned>(parseNumber(key, value));
    } else if (key == "arena_mb") {
      policy.arenaBytes = parseMiB(key, value);
    } else if (key == "mode") {
      policy.mode = parseMode(value, "allocator conf");
    } else if (key == "expandable_segments") {
      throw std::invalid_argument(
          "allocator conf: expandable_segments is not supported by LoRAscope's allocator; "
          "use max_split_size_mb or mode:arena against fragmentation");
    } else {
      throw std::invalid_argument(
          "allocator conf: unknown key '" + std::string(key) +
          "' (known: max_split_size_mb, garbage_collection_threshold, roundup_power2_divisions, "
          "mode, arena_mb)");
    }
  }
  validatePolicy(policy);
  return policy;
}

nlohmann::json policyToJson(const AllocatorPolicy& policy) {
  return {{"mode", modeName(policy.mode)},
          {"max_split_bytes", policy.maxSplitBytes == kUnlimitedSplit
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(policy.maxSplitBytes)},
          {"garbage_collection_threshold", policy.garbageCollectionThreshold},
          {"roundup_power2_divisions", policy.roundupPower2Divisions},
          {"arena_bytes", policy.arenaBytes}};
}

AllocatorPolicy policyFromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    throw std::invalid_argument("allocator policy: expected a JSON object");
  }
  AllocatorPolicy policy;
  try {
    for (const auto& [key, value] : json.items()) {
      if (key == "mode") {
        policy.mode = parseMode(value.get<std::string>(), "allocator policy");
      } else if (key == "max_split_bytes") {
        policy.maxSplitBytes = value.is_null() ? kUnlimitedSplit : value.get<std::size_t>();
      } else if (key == "garbage_collection_threshold") {
        policy.garbageCollectionThreshold = value.get<double>();
      } else if (key == "roundup_power2_divisions") {
        policy.roundupPower2Divisions = value.get<unsigned>();
      } else if (key == "arena_bytes") {
        policy.arenaBytes = value.get<std::size_t>();
      } else {
        throw std::invalid_argument("allocator policy: unknown key '" + key + "'");
      }
    }
  } catch (const nlohmann::json::exception& error) {
    throw std::invalid_argument(std::string("allocator policy: wrong value type: ") + error.what());
  }
  validatePolicy(policy);
  return policy;
}

}  // namespace lorascope::memory
