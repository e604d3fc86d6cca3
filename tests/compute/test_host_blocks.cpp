// test_host_blocks.cpp — compute/cpu/host_blocks (Note [host block cache]): a freed large block
// is handed out again for the same size, aligned; small blocks bypass the cache; a block that
// would overflow the cache's limit empties it first; a block outliving its HostBlocks is still
// freed. Qt-free.
#include <cstdint>
#include <cstdio>
#include <memory>

#include "compute/cpu/host_blocks.h"

namespace cpu = lorascope::compute::cpu;

namespace {

int gFailures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    ++gFailures;
    std::printf("FAIL: %s\n", what);
  }
}

bool aligned(const std::shared_ptr<void>& p) {
  return reinterpret_cast<std::uintptr_t>(p.get()) % cpu::kHostAlignmentBytes == 0;
}

}  // namespace

int main() {
  const std::size_t large = std::size_t{1} << 20;
  const std::size_t limit = 8 * large;
  {
    cpu::HostBlocks blocks(limit);
    void* first = nullptr;
    {
      const std::shared_ptr<void> a = blocks.allocate(large);
      check(aligned(a), "a large block is 64-byte aligned");
      first = a.get();
      check(blocks.cachedBytes() == 0, "nothing is cached while the block lives");
    }
    check(blocks.cachedBytes() == large, "a freed large block is kept");
    const std::shared_ptr<void> again = blocks.allocate(large - 10);  // the same rounded size
    check(again.get() == first, "the same size gets the kept block back");
    check(blocks.cachedBytes() == 0, "the reused block left the cache");
    {
      const std::shared_ptr<void> other = blocks.allocate(2 * large);
      check(other.get() != first, "a live block is never handed out twice");
    }
    check(blocks.cachedBytes() == 2 * large, "a block of another size is kept apart");
    {
      const std::shared_ptr<void> small = blocks.allocate(100);
      check(aligned(small), "a small block is 64-byte aligned");
      const std::shared_ptr<void> empty = blocks.allocate(0);
      check(empty != nullptr && aligned(empty), "a zero-byte request still gets a block");
    }
    check(blocks.cachedBytes() == 2 * large, "small blocks bypass the cache");
    {
      // Just under the limit with what is cached: this one's release overflows it.
      const std::shared_ptr<void> huge = blocks.allocate(limit - 2 * large + 64);
      check(huge != nullptr, "a block near the limit is allocated");
    }
    check(blocks.cachedBytes() == limit - 2 * large + 64,
          "a block overflowing the cache empties it first and is kept alone");
  }
  std::shared_ptr<void> survivor;
  {
    cpu::HostBlocks blocks(limit);
    survivor = blocks.allocate(large);
  }
  survivor.reset();  // the cache lives in the deleter: freeing after the HostBlocks is fine
  check(true, "a block outliving its HostBlocks is released without a crash");
  if (gFailures > 0) {
    std::printf("%d failure(s)\n", gFailures);
    return 1;
  }
  std::printf("all passed\n");
  return 0;
}
