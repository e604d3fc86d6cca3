// cpu/host_blocks.h — the CPU backend's tensor memory: 64-byte-aligned blocks, the large ones kept
// for reuse when their tensors die.
//
// Note [host block cache]: a training step allocates the same activation sizes in every step.
// Handed back to the C runtime, the large ones go back to the OS (munmap) and the next step
// faults every page in again, zeroed by the kernel (~10,000 faults a step of even the tiny
// benchmark model), and with many threads each unmap interrupts every core to flush its TLB.
// Blocks of at least kMinCachedBytes are therefore kept by size when freed and handed out again
// for the same size. The cache holds at most kCacheLimitBytes (by default): a block that would
// overflow it first empties it (a run whose sizes changed — another batch shape, evaluation — does
// not keep the old ones), so in steady training the peak memory is what it was without the cache.
#pragma once

#include <cstddef>
#include <memory>

namespace lorascope::compute::cpu {

inline constexpr std::size_t kHostAlignmentBytes = 64;  // one cache line; what AVX-512 prefers

class HostBlocks {
 public:
  static constexpr std::size_t kMinCachedBytes = std::size_t{64} << 10;
  static constexpr std::size_t kCacheLimitBytes = std::size_t{4} << 30;

  explicit HostBlocks(std::size_t cacheLimitBytes = kCacheLimitBytes);
  ~HostBlocks();
  HostBlocks(const HostBlocks&) = delete;
  HostBlocks& operator=(const HostBlocks&) = delete;

  // A block of at least `bytes` (≥ 1), aligned to kHostAlignmentBytes, released to this cache
  // (or freed) when the last owner lets go; the cache itself lives as long as any block of it.
  // Throws std::bad_alloc.
  std::shared_ptr<void> allocate(std::size_t bytes);

  std::size_t cachedBytes() const;  // held for reuse now (for tests)

 private:
  struct Cache;
  std::shared_ptr<Cache> cache_;
};

}  // namespace lorascope::compute::cpu
