// SimulatedDevice.h — a device of a given size with its own address space, for testing allocator
// policy without a GPU.
//
// Placement is real, not assumed: every segment occupies an address range, allocation takes the
// lowest-addressed free range that fits (first fit, as drivers place large buffers), and a segment
// fails when no single free range is long enough even though the free total would be. Sizes are
// rounded up to the device page (2 MiB by default: the granularity of large driver allocations).
//
// Placement::Paged models a driver that maps physical pages into a large virtual address space
// (what current NVIDIA and ROCm drivers do for big buffers): there a segment fails only when the
// free total is too small, so fragmentation lives inside the allocator's segments alone. Running a
// scenario under both placements shows which of its effects depend on device contiguity.
#pragma once

#include <map>
#include <mutex>

#include "memory/DeviceMemory.h"

namespace lorascope::memory {

class SimulatedDevice final : public DeviceMemory {
 public:
  enum class Placement { Contiguous, Paged };
  static constexpr std::size_t kDefaultPageBytes = std::size_t{2} << 20;
  // Addresses start here so that 0 is never a valid segment and numbers look like device pointers.
  static constexpr std::uintptr_t kBaseAddress = 0x7f0000000000;

  // Throws std::invalid_argument when capacityBytes is 0 or not a multiple of pageBytes.
  SimulatedDevice(std::size_t capacityBytes, Placement placement = Placement::Contiguous,
                  std::size_t pageBytes = kDefaultPageBytes);

  std::optional<std::uintptr_t> allocate(std::size_t bytes) override;
  void release(std::uintptr_t address, std::size_t bytes) override;
  DeviceMemoryInfo info() const override;
  std::string name() const override;

  // The largest new segment that could be placed now.
  std::size_t largestFreeRangeBytes() const;
  std::size_t liveSegmentCount() const;

 private:
  std::size_t pageRounded(std::size_t bytes) const;

  const std::size_t capacityBytes_;
  const Placement placement_;
  const std::size_t pageBytes_;
  std::uintptr_t nextVirtualAddress_ = kBaseAddress;  // Paged: addresses are never reused
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> freeRanges_;    // address -> bytes, coalesced
  std::map<std::uintptr_t, std::size_t> liveSegments_;  // address -> page-rounded bytes
  std::size_t freeBytes_ = 0;
};

}  // namespace lorascope::memory
