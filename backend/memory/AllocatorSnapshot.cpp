// AllocatorSnapshot.cpp — the readers of DeviceAllocator: stats (incremental plus the parts
// computed on read) and the memory snapshot in PyTorch's field names.
#include <algorithm>

#include "memory/DeviceAllocator.h"

namespace lorascope::memory {

DeviceAllocator::FreeStats DeviceAllocator::freeStats() const {
  FreeStats out;
  out.cachedFreeBytes =
      static_cast<std::size_t>(stats_.reservedBytes.current - stats_.allocatedBytes.current);
  for (const FreeSet* set : {&smallFree_, &largeFree_, &arenaFree_, &graphFree_}) {
    if (!set->empty()) {
      out.largestFreeBlockBytes = std::max(out.largestFreeBlockBytes, (*set->rbegin())->bytes);
    }
  }
  out.externalFragmentation = out.cachedFreeBytes == 0
                                  ? 0.0
                                  : 1.0 - static_cast<double>(out.largestFreeBlockBytes) /
                                              static_cast<double>(out.cachedFreeBytes);
  return out;
}

void DeviceAllocator::notePeaks() {
  const FreeStats free = freeStats();
  stats_.inactiveSplitBytesPeak =
      std::max(stats_.inactiveSplitBytesPeak, stats_.inactiveSplitBytes);
  stats_.externalFragmentationPeak =
      std::max(stats_.externalFragmentationPeak, free.externalFragmentation);
  if (stats_.allocatedBytes.current == stats_.allocatedBytes.peak) {
    stats_.largestFreeAtPeakBytes = free.largestFreeBlockBytes;
    stats_.inactiveSplitAtPeakBytes = stats_.inactiveSplitBytes;
  }
}

AllocatorStats DeviceAllocator::stats() const {
  const std::lock_guard lock(mutex_);
  AllocatorStats out = stats_;
  const FreeStats free = freeStats();
  out.cachedFreeBytes = free.cachedFreeBytes;
  out.largestFreeBlockBytes = free.largestFreeBlockBytes;
  out.externalFragmentation = free.externalFragmentation;
  return out;
}

void DeviceAllocator::resetPeakStats() {
  const std::lock_guard lock(mutex_);
  for (StatValue* value : {&stats_.requestedBytes, &stats_.allocatedBytes, &stats_.reservedBytes,
                           &stats_.allocationCount, &stats_.segmentCount}) {
    value->resetPeak();
  }
  for (StatValue& value : stats_.allocatedBytesByOwner) {
    value.resetPeak();
  }
  stats_.inactiveSplitBytesPeak = 0;
  stats_.externalFragmentationPeak = 0.0;
  stats_.largestRequestBytes = 0;
  notePeaks();
}

nlohmann::json DeviceAllocator::snapshot() const {
  nlohmann::json segments = nlohmann::json::array();
  nlohmann::json traces = nlohmann::json::array();
  {
    const std::lock_guard lock(mutex_);
    for (const TraceEntry& entry : trace_) {
      static constexpr const char* kActions[] = {"alloc", "free_completed", "segment_alloc",
                                                 "segment_free"};
      nlohmann::json item = {{"action", kActions[static_cast<int>(entry.action)]},
                             {"addr", entry.address},
                             {"size", entry.bytes},
                             {"stream", streamId_},
                             {"time_us", entry.timeUs},
                             {"step", entry.step}};
      if (entry.action == TraceAction::Alloc || entry.action == TraceAction::Free) {
        item["owner"] = ownerName(entry.owner);
      }
      traces.push_back(std::move(item));
    }
    for (const auto& [address, segment] : segments_) {
      std::size_t allocatedBytes = 0;
      std::size_t requestedBytes = 0;
      nlohmann::json blocks = nlohmann::json::array();
      for (const Block* block = segment->first; block != nullptr; block = block->next) {
        if (block->allocated) {
          allocatedBytes += block->bytes;
          requestedBytes += block->requestedBytes;
        }
        nlohmann::json entry = {
            {"address", block->address},
            {"size", block->bytes},
            {"requested_size", block->requestedBytes},
            {"state", block->allocated ? "active_allocated" : "inactive"},
        };
        if (block->allocated) {
          entry["owner"] = ownerName(block->owner);
          entry["step"] = block->step;
        }
        blocks.push_back(std::move(entry));
      }
      const char* pool = segment->pool == Pool::Small   ? "small"
                         : segment->pool == Pool::Arena ? "arena"
                         : segment->pool == Pool::Graph ? "graph"
                                                        : "large";
      segments.push_back({
          {"address", segment->address},
          {"total_size", segment->bytes},
          {"allocated_size", allocatedBytes},
          {"active_size", allocatedBytes},  // no pending frees: active == allocated
          {"requested_size", requestedBytes},
          {"stream", streamId_},
          {"segment_type", segment->pool == Pool::Small ? "small" : "large"},
          {"pool", pool},
          {"blocks", std::move(blocks)},
      });
    }
  }
  const DeviceMemoryInfo info = device_->info();
  return {{"segments", std::move(segments)},
          {"device_traces", nlohmann::json::array({std::move(traces)})},
          {"device",
           {{"name", device_->name()},
            {"total_bytes", info.totalBytes},
            {"free_bytes", info.freeBytes}}},
          {"policy", describePolicy(policy())},
          {"stats", statsToJson(stats())}};
}

}  // namespace lorascope::memory
