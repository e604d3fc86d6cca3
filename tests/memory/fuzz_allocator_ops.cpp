// fuzz_allocator_ops.cpp — libFuzzer: the input drives a sequence of allocate / deallocate /
// policy / step / emptyCache operations on a small simulated device, and the allocator's
// invariants are checked after every operation. Any out-of-memory must be the typed error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "memory/DeviceAllocator.h"
#include "memory/SimulatedDevice.h"

using namespace lorascope::memory;

namespace {

void require(bool ok) {
  if (!ok) {
    std::abort();  // libFuzzer reports the input that broke an invariant
  }
}

void checkInvariants(const DeviceAllocator& allocator, std::size_t liveBytes) {
  const AllocatorStats s = allocator.stats();
  require(s.allocatedBytes.current >= 0 && s.allocatedBytes.current <= s.reservedBytes.current);
  require(static_cast<std::size_t>(s.allocatedBytes.current) == liveBytes);
  require(s.requestedBytes.current <= s.allocatedBytes.current);
  require(s.inactiveSplitBytes <= s.cachedFreeBytes);
  require(s.largestFreeBlockBytes <= s.cachedFreeBytes);
  require(s.externalFragmentation >= 0.0 && s.externalFragmentation <= 1.0);
  require(allocator.deviceInfo().totalBytes - allocator.deviceInfo().freeBytes >=
          static_cast<std::size_t>(s.reservedBytes.current));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto device = std::make_shared<SimulatedDevice>(std::size_t{256} << 20);
  DeviceAllocator allocator(device);
  std::vector<Allocation> live;
  std::size_t liveBytes = 0;
  std::int64_t step = 0;
  for (std::size_t i = 0; i + 2 < size; i += 3) {
    const std::uint8_t op = data[i] % 8;
    const std::size_t arg = static_cast<std::size_t>(data[i + 1]) << 8 | data[i + 2];
    if (op <= 3) {  // allocate: sizes from bytes to ~64 MiB, every owner
      const std::size_t bytes = op == 0 ? arg : op == 1 ? arg << 6 : arg << 10;
      try {
        live.push_back(allocator.allocate(bytes, static_cast<Owner>(arg % kOwnerCount)));
        liveBytes += live.back().bytes;
      } catch (const OutOfMemoryError&) {
      }
    } else if (op <= 5 && !live.empty()) {
      const std::size_t index = arg % live.size();
      allocator.deallocate(live[index].address);
      liveBytes -= live[index].bytes;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
    } else if (op == 6) {
      AllocatorPolicy policy;
      policy.maxSplitBytes = arg % 2 ? (std::size_t{20} + arg % 64) << 20 : kUnlimitedSplit;
      policy.garbageCollectionThreshold = arg % 3 == 0 ? 0.5 : 0.0;
      policy.roundupPower2Divisions = arg % 5 == 0 ? 4u : 0u;
      if (arg % 7 == 0) {
        policy.mode = AllocatorMode::Arena;
        policy.arenaBytes = (arg % 64 + 1) << 20;
      }
      allocator.setPolicy(policy);
      try {
        allocator.beginStep(++step);
      } catch (const OutOfMemoryError&) {  // the arena did not fit: caching mode stays
      }
    } else {
      allocator.emptyCache();
    }
    checkInvariants(allocator, liveBytes);
  }
  for (const Allocation& a : live) {
    allocator.deallocate(a.address);
  }
  const AllocatorStats s = allocator.stats();
  require(s.allocatedBytes.current == 0 && s.inactiveSplitBytes == 0);
  return 0;
}
