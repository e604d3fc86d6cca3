// AllocatorStats.cpp — stat arithmetic, the stats JSON and the out-of-memory message.
#include "memory/AllocatorStats.h"

#include <algorithm>

#include "common/Format.h"

namespace lorascope::memory {
using common::formatBytes;

void StatValue::add(std::int64_t amount) {
  current += amount;
  if (amount > 0) {
    total += amount;
  }
  peak = std::max(peak, current);
}

namespace {
nlohmann::json statJson(const StatValue& value) {
  return {{"current", value.current}, {"peak", value.peak}, {"total", value.total}};
}
}  // namespace

nlohmann::json statsToJson(const AllocatorStats& stats) {
  nlohmann::json byOwner = nlohmann::json::object();
  for (int i = 0; i < kOwnerCount; ++i) {
    byOwner[ownerName(static_cast<Owner>(i))] = statJson(stats.allocatedBytesByOwner[i]);
  }
  return {
      {"requested_bytes", statJson(stats.requestedBytes)},
      {"allocated_bytes", statJson(stats.allocatedBytes)},
      {"reserved_bytes", statJson(stats.reservedBytes)},
      {"inactive_split_bytes", stats.inactiveSplitBytes},
      {"cached_free_bytes", stats.cachedFreeBytes},
      {"largest_free_block_bytes", stats.largestFreeBlockBytes},
      {"external_fragmentation", stats.externalFragmentation},
      {"inactive_split_bytes_peak", stats.inactiveSplitBytesPeak},
      {"external_fragmentation_peak", stats.externalFragmentationPeak},
      {"largest_request_bytes", stats.largestRequestBytes},
      {"largest_free_at_peak_bytes", stats.largestFreeAtPeakBytes},
      {"inactive_split_at_peak_bytes", stats.inactiveSplitAtPeakBytes},
      {"allocated_bytes_by_owner", byOwner},
      {"allocation_count", statJson(stats.allocationCount)},
      {"segment_count", statJson(stats.segmentCount)},
      {"num_device_alloc", stats.deviceAllocCount},
      {"num_device_free", stats.deviceFreeCount},
      {"num_alloc_retries", stats.allocRetryCount},
      {"num_ooms", stats.oomCount},
      {"num_arena_overflows", stats.arenaOverflowCount},
      {"allocator_host_ns", stats.allocatorHostNs},
      {"step", stats.step},
  };
}

std::string outOfMemoryMessage(const OutOfMemoryDetails& d) {
  std::string text =
      "out of memory: tried to allocate " + formatBytes(d.requestedBytes) + " (" +
      ownerName(d.owner) + ", step " + std::to_string(d.step) + ") on " + d.deviceName +
      ". The device has " + formatBytes(d.deviceTotalBytes) + " in total, " +
      formatBytes(d.deviceFreeBytes) + " free. This run holds " + formatBytes(d.allocatedBytes) +
      " in tensors and " + formatBytes(d.reservedUnallocatedBytes) +
      " reserved by the allocator but unallocated (largest free block " +
      formatBytes(d.largestFreeBlockBytes) + "; policy " + describePolicy(d.policy) + ").";
  text +=
      " Try: a smaller micro-batch (--batch-size auto steps down by itself), activation"
      " checkpointing, or arena mode";
  if (d.reservedUnallocatedBytes > d.requestedBytes && d.policy.maxSplitBytes == kUnlimitedSplit) {
    text +=
        "; reserved-but-unallocated memory exceeds the request, so fragmentation is the likely"
        " cause: set max_split_size (e.g. 512 MiB)";
  } else {
    text += "; or max_split_size (e.g. 512 MiB) when reserved-but-unallocated is large";
  }
  const std::size_t heldByRun = d.allocatedBytes + d.reservedUnallocatedBytes;
  const std::size_t heldOutside =
      d.deviceTotalBytes - std::min(d.deviceTotalBytes, d.deviceFreeBytes + heldByRun);
  if (d.requestedBytes > d.deviceTotalBytes) {
    text += ". The request alone exceeds the device's memory: the batch is far too large";
  } else if (heldOutside > d.deviceTotalBytes / 2) {
    text += ". " + formatBytes(heldOutside) +
            " of the device is held outside this run: close other GPU programs";
  }
  return text + ".";
}

OutOfMemoryError::OutOfMemoryError(OutOfMemoryDetails details)
    : std::runtime_error(outOfMemoryMessage(details)), details_(std::move(details)) {}

}  // namespace lorascope::memory
