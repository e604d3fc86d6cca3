// AllocatorStats.h — what the allocator reports: counts and byte sums, current and peak, and the
// out-of-memory error with the numbers a user needs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "memory/AllocatorPolicy.h"

namespace lorascope::memory {

// One tracked quantity. `current` and `peak` are levels; `total` counts every increase since the
// allocator was made (a cumulative sum for byte stats, a cumulative count for count stats).
struct StatValue {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t total = 0;

  void add(std::int64_t amount);
  void resetPeak() { peak = current; }
};

struct AllocatorStats {
  // Sums of bytes.
  StatValue requestedBytes;               // what callers asked for (before rounding)
  StatValue allocatedBytes;               // blocks handed out (rounded sizes)
  StatValue reservedBytes;                // segments held from the device
  std::size_t inactiveSplitBytes = 0;     // current: free blocks inside partly used segments
  std::size_t cachedFreeBytes = 0;        // current: reserved - allocated
  std::size_t largestFreeBlockBytes = 0;  // current: the biggest block a request could get as is
  // 1 - largest free block / cached free bytes (0 when nothing is cached): current.
  double externalFragmentation = 0.0;
  // Peaks of the two above, taken after every allocate/deallocate (the states a caller can see),
  // since the allocator was made or since resetPeakStats().
  std::size_t inactiveSplitBytesPeak = 0;
  double externalFragmentationPeak = 0.0;
  // Since resetPeakStats() (the engine calls it as each step begins): the largest single request —
  // what the next step needs a free block for — and, at the moment allocatedBytes peaked, the
  // largest free block and the inactive-split bytes. Fragmentation hurts when the largest free
  // block is smaller than the largest request; cached free memory the next step reuses does not.
  std::size_t largestRequestBytes = 0;
  std::size_t largestFreeAtPeakBytes = 0;
  std::size_t inactiveSplitAtPeakBytes = 0;
  std::array<StatValue, kOwnerCount> allocatedBytesByOwner{};

  // Counts.
  StatValue allocationCount;             // live blocks
  StatValue segmentCount;                // live segments
  std::uint64_t deviceAllocCount = 0;    // cumulative: segments obtained from the device
  std::uint64_t deviceFreeCount = 0;     // cumulative: segments given back to the device
  std::uint64_t allocRetryCount = 0;     // cumulative: the whole cache was released to retry
  std::uint64_t oomCount = 0;            // cumulative: OutOfMemoryError thrown
  std::uint64_t arenaOverflowCount = 0;  // cumulative: activation blocks that missed the arena
  std::uint64_t allocatorHostNs = 0;     // cumulative: host time spent inside allocate/deallocate

  std::int64_t step = 0;  // the step the allocator is at
};

nlohmann::json statsToJson(const AllocatorStats& stats);

// The numbers behind an out-of-memory error.
struct OutOfMemoryDetails {
  std::size_t requestedBytes = 0;
  std::size_t deviceTotalBytes = 0;
  std::size_t deviceFreeBytes = 0;
  std::size_t allocatedBytes = 0;
  std::size_t reservedUnallocatedBytes = 0;
  std::size_t largestFreeBlockBytes = 0;
  Owner owner = Owner::Other;
  std::int64_t step = 0;
  std::string deviceName;
  AllocatorPolicy policy;
};

std::string outOfMemoryMessage(const OutOfMemoryDetails& details);

// The device could not provide a block even after releasing every cached segment. Recoverable:
// the engine frees what it can and retries with a smaller micro-batch.
class OutOfMemoryError : public std::runtime_error {
 public:
  explicit OutOfMemoryError(OutOfMemoryDetails details);
  const OutOfMemoryDetails& details() const { return details_; }

 private:
  OutOfMemoryDetails details_;
};

// A caller freed an address the allocator never handed out (or freed it twice).
class AllocatorUsageError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace lorascope::memory
