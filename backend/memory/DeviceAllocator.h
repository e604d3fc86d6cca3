// DeviceAllocator.h — the caching device allocator (in the spirit of PyTorch's
// CUDACachingAllocator; our own code).
//
// Policy:
// - Requests are rounded to 512-byte multiples (optionally to power-of-two divisions first).
// - Blocks of at most 1 MiB come from the small pool, carved out of 2 MiB segments; larger ones
//   from the large pool: 1-10 MiB share 20 MiB segments, >= 10 MiB get a segment of their own
//   rounded to 2 MiB.
// - A request takes the smallest cached free block that fits (best fit, ties to the lowest
//   address). What is left is split off as a free block if it is worth keeping: >= 512 B in the
//   small pool, > 1 MiB in the large pool.
// - Freed blocks merge with free neighbours of the same segment and stay cached; segments go back
//   to the device only on emptyCache(), under pressure, or by the garbage-collection threshold.
// - max_split_size: cached blocks at least that large are not split for smaller requests, a large
//   request does not take a cached block more than 20 MiB bigger than itself, and such blocks are
//   released first when the device is full.
// - Arena mode: at the step boundary one segment of the planned size is reserved; every
//   activation and workspace block comes from it (best fit, split, merge inside) and it is never
//   released while the mode lasts, so steady state asks the device for nothing. A block that does
//   not fit falls back to the pools and is counted as an arena overflow.
// - Graph pool (whole-step graph mode, Note [whole-step graphs] in train/StepGraphs.h): between
//   beginGraphCapture() and endGraphCapture() every block comes from segments of its own, and a
//   block of those segments, freed at any time, is handed out again only to a later capture: the
//   captured ops write those addresses at every replay, so nothing else may hold them. Reuse
//   inside the pool is safe because captures and replays run on the one stream, in order.
//   releaseGraphPool() (once no captured graph is left) gives the segments to the ordinary cache.
// - Allocation ladder: cached block -> (gc threshold: release idle segments) -> new segment ->
//   release oversize cached blocks, new segment -> release every cached segment, new segment
//   (counted as a retry) -> OutOfMemoryError with the numbers and a remedy.
// - Policy changes are queued by setPolicy() and take effect at the next beginStep().
//
// - Trace: the latest kTraceCapacity allocations, frees and segment changes, each with its block's
//   owner and step, kept in a ring and written into the snapshot as PyTorch's "device_traces"
//   (the allocation timeline that its memory viewer draws offline; the memory map draws it live).
//
// Locking: one mutex guards all state; every public method takes it, including the stats and
// snapshot readers called from the telemetry thread. DeviceMemory is called with the mutex held,
// as PyTorch does: a device allocation is rare and must not race a release of the same range.
//
// Streams: one allocator serves one stream (the backend's); blocks never migrate between streams.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "memory/AllocatorPolicy.h"
#include "memory/AllocatorStats.h"
#include "memory/DeviceMemory.h"

namespace lorascope::memory {

struct Allocation {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;  // the block size (>= requested)
  void* pointer() const { return reinterpret_cast<void*>(address); }
};

class DeviceAllocator {
 public:
  // Throws std::invalid_argument for an invalid policy, OutOfMemoryError when an arena cannot be
  // reserved.
  DeviceAllocator(std::shared_ptr<DeviceMemory> device, AllocatorPolicy policy = {},
                  std::uintptr_t streamId = 0);
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // Throws OutOfMemoryError when the ladder above is exhausted.
  Allocation allocate(std::size_t bytes, Owner owner);
  // Throws AllocatorUsageError for an address that is not a live block.
  void deallocate(std::uintptr_t address);

  // Queues a policy for the next step boundary; validated now (throws std::invalid_argument).
  void setPolicy(const AllocatorPolicy& policy);
  // The step boundary: applies a queued policy, then stamps new blocks with `step`.
  void beginStep(std::int64_t step);
  AllocatorPolicy policy() const;

  // The graph pool (above): allocations from the pool while a capture lasts.
  void beginGraphCapture();
  void endGraphCapture();
  // Its segments join the ordinary cache (the caller has dropped every captured graph).
  void releaseGraphPool();
  // Bytes of the graph pool's blocks that are allocated now.
  std::size_t graphPoolLiveBytes() const;

  // Gives every cached segment that holds no live block back to the device.
  void emptyCache();
  AllocatorStats stats() const;
  void resetPeakStats();
  // The trace ring's size: a B8 x S512 step of a 24-layer model makes ~4,000 entries, so a few
  // steps' worth.
  static constexpr std::size_t kTraceCapacity = 16384;

  // PyTorch memory-snapshot layout: {"segments": [...], "device_traces": [[...]], "device": {...},
  // "stats": {...}}; a trace entry is {"action": "alloc"|"free_completed"|"segment_alloc"|
  // "segment_free", "addr", "size", "stream", "time_us", and ours: "owner", "step"}.
  nlohmann::json snapshot() const;
  DeviceMemoryInfo deviceInfo() const { return device_->info(); }

 private:
  enum class Pool : std::uint8_t { Small, Large, Arena, Graph };
  struct Segment;
  struct Block {
    std::uintptr_t address = 0;
    std::size_t bytes = 0;
    std::size_t requestedBytes = 0;
    Segment* segment = nullptr;
    Block* prev = nullptr;  // neighbours inside the segment, by address
    Block* next = nullptr;
    bool allocated = false;
    Owner owner = Owner::Other;
    std::int64_t step = 0;
    std::uint64_t freedTick = 0;  // when it became free: the gc releases the oldest first
  };
  struct Segment {
    std::uintptr_t address = 0;
    std::size_t bytes = 0;
    Pool pool = Pool::Large;
    Block* first = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      return a->bytes != b->bytes ? a->bytes < b->bytes : a->address < b->address;
    }
  };
  using FreeSet = std::set<Block*, BySize>;

  Block* findFreeBlock(Pool pool, std::size_t bytes);
  Block* newSegment(Pool pool, std::size_t segmentBytes);
  Block* allocateFromDevice(Pool pool, std::size_t blockBytes);
  Block* takeBlock(Block* block, std::size_t bytes, std::size_t requested, Owner owner);
  bool shouldSplit(const Block& block, std::size_t bytes) const;
  void countBlock(const Block& block, int sign);  // +1 when handed out, -1 when freed
  void absorbNext(Block* left);                   // merges left->next into left
  void insertFree(Block* block);
  void eraseFree(Block* block);
  FreeSet& freeSet(Pool pool);
  void releaseSegment(Segment* segment);
  bool releaseIdleSegments(std::size_t targetBytes, bool oversizeOnly, bool oldestFirst);
  void collectGarbage(std::size_t incomingBytes);
  void applyPolicy(const AllocatorPolicy& policy);
  void reserveArena(std::size_t bytes);
  void demoteArenaSegments();
  void demoteSegments(Pool from);  // every segment of `from` becomes a Large one
  [[noreturn]] void throwOutOfMemory(std::size_t requested, Owner owner);
  enum class TraceAction : std::uint8_t { Alloc, Free, SegmentAlloc, SegmentFree };
  struct TraceEntry {
    TraceAction action = TraceAction::Alloc;
    Owner owner = Owner::Other;
    std::int64_t step = 0;
    std::uintptr_t address = 0;
    std::size_t bytes = 0;
    std::uint64_t timeUs = 0;  // since the allocator was made
  };
  void trace(TraceAction action, std::uintptr_t address, std::size_t bytes, Owner owner);
  // The stats computed from the free sets rather than kept incrementally. Caller holds mutex_.
  struct FreeStats {
    std::size_t cachedFreeBytes = 0;
    std::size_t largestFreeBlockBytes = 0;
    double externalFragmentation = 0.0;
  };
  FreeStats freeStats() const;
  // Raises the inactive-split and fragmentation peaks to the current state. Caller holds mutex_.
  void notePeaks();
  bool isOversize(std::size_t bytes) const { return bytes >= policy_.maxSplitBytes; }

  const std::shared_ptr<DeviceMemory> device_;
  const std::uintptr_t streamId_;
  mutable std::mutex mutex_;
  AllocatorPolicy policy_;
  std::unique_ptr<AllocatorPolicy> pendingPolicy_;
  std::int64_t step_ = 0;
  std::uint64_t tick_ = 0;
  std::map<std::uintptr_t, std::unique_ptr<Segment>> segments_;
  std::map<std::uintptr_t, std::unique_ptr<Block>> blocks_;  // every block, by address
  FreeSet smallFree_, largeFree_, arenaFree_, graphFree_;
  bool capturing_ = false;  // beginGraphCapture() .. endGraphCapture()
  AllocatorStats stats_;    // incremental parts; stats() adds the computed ones
  const std::chrono::steady_clock::time_point createdAt_ = std::chrono::steady_clock::now();
  std::deque<TraceEntry> trace_;  // oldest first, at most kTraceCapacity
};

// Tags allocations made on this thread while it lives (the Backend interface has no owner
// argument): `OwnerScope scope(Owner::Activations);` around a forward pass.
class OwnerScope {
 public:
  explicit OwnerScope(Owner owner);
  ~OwnerScope();
  OwnerScope(const OwnerScope&) = delete;
  OwnerScope& operator=(const OwnerScope&) = delete;
  static Owner current();

 private:
  Owner previous_;
};

}  // namespace lorascope::memory
