// DeviceAllocator.cpp — the allocation ladder, split/merge, release and policy changes. The policy
// and the locking rules are in DeviceAllocator.h; stats/snapshot reading is in
// AllocatorSnapshot.cpp.
#include "memory/DeviceAllocator.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <vector>

namespace lorascope::memory {
namespace {

thread_local Owner tCurrentOwner = Owner::Other;

bool usesArena(Owner owner) {
  return owner == Owner::Activations || owner == Owner::Workspace;
}

std::uint64_t nanosecondsSince(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

std::string hexAddress(std::uintptr_t address) {
  std::ostringstream text;
  text << "0x" << std::hex << address;
  return text.str();
}

}  // namespace

OwnerScope::OwnerScope(Owner owner) : previous_(tCurrentOwner) {
  tCurrentOwner = owner;
}
OwnerScope::~OwnerScope() {
  tCurrentOwner = previous_;
}
Owner OwnerScope::current() {
  return tCurrentOwner;
}

DeviceAllocator::DeviceAllocator(std::shared_ptr<DeviceMemory> device, AllocatorPolicy policy,
                                 std::uintptr_t streamId)
    : device_(std::move(device)), streamId_(streamId) {
  if (!device_) {
    throw std::invalid_argument("DeviceAllocator: no device memory given");
  }
  validatePolicy(policy);
  const std::lock_guard lock(mutex_);
  applyPolicy(policy);
}

DeviceAllocator::~DeviceAllocator() {
  // Live blocks are the owner's leak, but the device memory is still given back.
  for (const auto& [address, segment] : segments_) {
    try {
      device_->release(address, segment->bytes);
    } catch (const DeviceMemoryError&) {
      // A destructor cannot report; the driver frees everything at process exit anyway.
    }
  }
}

Allocation DeviceAllocator::allocate(std::size_t bytes, Owner owner) {
  const auto started = std::chrono::steady_clock::now();
  const std::lock_guard lock(mutex_);
  const std::size_t blockBytes = roundedBlockBytes(bytes, policy_.roundupPower2Divisions);
  const Pool pool = isSmallBlock(blockBytes) ? Pool::Small : Pool::Large;
  Block* block = nullptr;
  if (capturing_) {
    block = findFreeBlock(Pool::Graph, blockBytes);
    if (block != nullptr) {
      eraseFree(block);
    } else {
      block = newSegment(Pool::Graph, segmentBytesFor(blockBytes));
      if (block == nullptr) {
        ++stats_.allocRetryCount;
        releaseIdleSegments(kUnlimitedSplit, false, false);
        block = newSegment(Pool::Graph, segmentBytesFor(blockBytes));
      }
    }
    if (block == nullptr) {
      throwOutOfMemory(bytes, owner);
    }
  } else if (policy_.mode == AllocatorMode::Arena && usesArena(owner)) {
    block = findFreeBlock(Pool::Arena, blockBytes);
    if (block == nullptr) {
      ++stats_.arenaOverflowCount;
    }
  }
  if (!capturing_) {
    if (block == nullptr) {
      block = findFreeBlock(pool, blockBytes);
    }
    if (block != nullptr) {
      eraseFree(block);
    } else {
      block = allocateFromDevice(pool, blockBytes);
    }
    if (block == nullptr) {
      throwOutOfMemory(bytes, owner);
    }
  }
  takeBlock(block, blockBytes, bytes, owner);
  trace(TraceAction::Alloc, block->address, block->bytes, owner);
  stats_.largestRequestBytes = std::max(stats_.largestRequestBytes, bytes);
  notePeaks();
  stats_.allocatorHostNs += nanosecondsSince(started);
  return {block->address, block->bytes};
}

void DeviceAllocator::deallocate(std::uintptr_t address) {
  const auto started = std::chrono::steady_clock::now();
  const std::lock_guard lock(mutex_);
  const auto found = blocks_.find(address);
  if (found == blocks_.end() || !found->second->allocated) {
    throw AllocatorUsageError("DeviceAllocator: deallocate(" + hexAddress(address) +
                              ") is not a live block (freed twice, or not from this allocator)");
  }
  Block* block = found->second.get();
  trace(TraceAction::Free, block->address, block->bytes, block->owner);
  block->allocated = false;
  countBlock(*block, -1);
  block->requestedBytes = 0;
  // Merge with free neighbours; the absorbed block object is dropped after relinking.
  if (Block* prev = block->prev; prev != nullptr && !prev->allocated) {
    eraseFree(prev);
    absorbNext(prev);
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && !next->allocated) {
    eraseFree(next);
    absorbNext(block);
  }
  block->freedTick = ++tick_;
  insertFree(block);
  notePeaks();
  stats_.allocatorHostNs += nanosecondsSince(started);
}

DeviceAllocator::Block* DeviceAllocator::findFreeBlock(Pool pool, std::size_t bytes) {
  FreeSet& set = freeSet(pool);
  Block key;
  key.bytes = bytes;
  const auto it = set.lower_bound(&key);
  if (it == set.end()) {
    return nullptr;
  }
  Block* best = *it;  // the set is ordered by size, so the first fit is the best fit
  if (pool == Pool::Large) {
    if (!isOversize(bytes) && isOversize(best->bytes)) {
      return nullptr;  // do not carve small requests out of oversize blocks
    }
    if (isOversize(bytes) && best->bytes >= bytes + kLargeSegmentBytes) {
      return nullptr;  // too much waste: an unsplit oversize block would strand > 20 MiB
    }
  }
  return best;
}

DeviceAllocator::Block* DeviceAllocator::newSegment(Pool pool, std::size_t segmentBytes) {
  const std::optional<std::uintptr_t> address = device_->allocate(segmentBytes);
  if (!address) {
    return nullptr;
  }
  auto segment = std::make_unique<Segment>();
  segment->address = *address;
  segment->bytes = segmentBytes;
  segment->pool = pool;
  auto block = std::make_unique<Block>();
  block->address = *address;
  block->bytes = segmentBytes;
  block->segment = segment.get();
  block->freedTick = ++tick_;
  segment->first = block.get();
  Block* raw = block.get();
  blocks_.emplace(*address, std::move(block));
  segments_.emplace(*address, std::move(segment));
  stats_.reservedBytes.add(static_cast<std::int64_t>(segmentBytes));
  stats_.segmentCount.add(1);
  ++stats_.deviceAllocCount;
  trace(TraceAction::SegmentAlloc, *address, segmentBytes, Owner::Other);
  return raw;
}

void DeviceAllocator::trace(TraceAction action, std::uintptr_t address, std::size_t bytes,
                            Owner owner) {
  if (trace_.size() == kTraceCapacity) {
    trace_.pop_front();
  }
  const auto sinceCreated = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - createdAt_);
  trace_.push_back(
      {action, owner, step_, address, bytes, static_cast<std::uint64_t>(sinceCreated.count())});
}

DeviceAllocator::Block* DeviceAllocator::allocateFromDevice(Pool pool, std::size_t blockBytes) {
  const std::size_t segmentBytes = segmentBytesFor(blockBytes);
  if (policy_.garbageCollectionThreshold > 0.0) {
    collectGarbage(segmentBytes);
  }
  if (Block* block = newSegment(pool, segmentBytes)) {
    return block;
  }
  if (policy_.maxSplitBytes != kUnlimitedSplit &&
      releaseIdleSegments(segmentBytes, /*oversizeOnly=*/true, /*oldestFirst=*/false)) {
    if (Block* block = newSegment(pool, segmentBytes)) {
      return block;
    }
  }
  ++stats_.allocRetryCount;
  releaseIdleSegments(kUnlimitedSplit, /*oversizeOnly=*/false, /*oldestFirst=*/false);
  return newSegment(pool, segmentBytes);
}

DeviceAllocator::Block* DeviceAllocator::takeBlock(Block* block, std::size_t bytes,
                                                   std::size_t requested, Owner owner) {
  if (shouldSplit(*block, bytes)) {
    auto rest = std::make_unique<Block>();
    rest->address = block->address + bytes;
    rest->bytes = block->bytes - bytes;
    rest->segment = block->segment;
    rest->prev = block;
    rest->next = block->next;
    rest->freedTick = block->freedTick;
    if (block->next != nullptr) {
      block->next->prev = rest.get();
    }
    block->next = rest.get();
    block->bytes = bytes;
    Block* raw = rest.get();
    blocks_.emplace(raw->address, std::move(rest));
    insertFree(raw);
  }
  block->allocated = true;
  block->requestedBytes = requested;
  block->owner = owner;
  block->step = step_;
  countBlock(*block, +1);
  return block;
}

void DeviceAllocator::countBlock(const Block& block, int sign) {
  const std::int64_t bytes = sign * static_cast<std::int64_t>(block.bytes);
  stats_.allocatedBytes.add(bytes);
  stats_.requestedBytes.add(sign * static_cast<std::int64_t>(block.requestedBytes));
  stats_.allocationCount.add(sign);
  stats_.allocatedBytesByOwner[static_cast<int>(block.owner)].add(bytes);
}

void DeviceAllocator::absorbNext(Block* left) {
  Block* right = left->next;
  left->bytes += right->bytes;
  left->next = right->next;
  if (right->next != nullptr) {
    right->next->prev = left;
  }
  blocks_.erase(right->address);  // destroys `right`
}

bool DeviceAllocator::shouldSplit(const Block& block, std::size_t bytes) const {
  const std::size_t rest = block.bytes - bytes;
  if (block.segment->pool == Pool::Large) {
    return !isOversize(bytes) && rest > kSmallRequestBytes;
  }
  return rest >= kMinBlockBytes;
}

DeviceAllocator::FreeSet& DeviceAllocator::freeSet(Pool pool) {
  switch (pool) {
    case Pool::Small:
      return smallFree_;
    case Pool::Arena:
      return arenaFree_;
    case Pool::Graph:
      return graphFree_;
    case Pool::Large:
      break;
  }
  return largeFree_;
}

void DeviceAllocator::insertFree(Block* block) {
  freeSet(block->segment->pool).insert(block);
  if (block->prev != nullptr || block->next != nullptr) {
    stats_.inactiveSplitBytes += block->bytes;
  }
}

void DeviceAllocator::eraseFree(Block* block) {
  freeSet(block->segment->pool).erase(block);
  if (block->prev != nullptr || block->next != nullptr) {
    stats_.inactiveSplitBytes -= block->bytes;
  }
}

void DeviceAllocator::releaseSegment(Segment* segment) {
  Block* block = segment->first;
  eraseFree(block);
  const std::uintptr_t address = segment->address;
  const std::size_t bytes = segment->bytes;
  trace(TraceAction::SegmentFree, address, bytes, Owner::Other);
  blocks_.erase(address);
  segments_.erase(address);  // destroys `segment`
  device_->release(address, bytes);
  stats_.reservedBytes.add(-static_cast<std::int64_t>(bytes));
  stats_.segmentCount.add(-1);
  ++stats_.deviceFreeCount;
}

bool DeviceAllocator::releaseIdleSegments(std::size_t targetBytes, bool oversizeOnly,
                                          bool oldestFirst) {
  std::vector<Segment*> idle;
  for (const auto& [address, segment] : segments_) {
    const Block* first = segment->first;
    const bool whole = !first->allocated && first->next == nullptr;
    if (whole && segment->pool != Pool::Arena && segment->pool != Pool::Graph &&
        (!oversizeOnly || isOversize(segment->bytes))) {
      idle.push_back(segment.get());
    }
  }
  std::sort(idle.begin(), idle.end(), [oldestFirst](const Segment* a, const Segment* b) {
    return oldestFirst ? a->first->freedTick < b->first->freedTick : a->bytes > b->bytes;
  });
  std::size_t released = 0;
  for (Segment* segment : idle) {
    if (released >= targetBytes) {
      break;
    }
    released += segment->bytes;
    releaseSegment(segment);
  }
  return released > 0;
}

void DeviceAllocator::collectGarbage(std::size_t incomingBytes) {
  const auto limitBytes = static_cast<std::size_t>(policy_.garbageCollectionThreshold *
                                                   static_cast<double>(device_->info().totalBytes));
  const auto reserved = static_cast<std::size_t>(stats_.reservedBytes.current);
  if (reserved + incomingBytes > limitBytes) {
    releaseIdleSegments(reserved + incomingBytes - limitBytes, false, /*oldestFirst=*/true);
  }
}

void DeviceAllocator::emptyCache() {
  const std::lock_guard lock(mutex_);
  releaseIdleSegments(kUnlimitedSplit, false, false);
}

void DeviceAllocator::setPolicy(const AllocatorPolicy& policy) {
  validatePolicy(policy);
  const std::lock_guard lock(mutex_);
  pendingPolicy_ = std::make_unique<AllocatorPolicy>(policy);
}

void DeviceAllocator::beginStep(std::int64_t step) {
  const std::lock_guard lock(mutex_);
  step_ = step;
  stats_.step = step;
  if (pendingPolicy_) {
    const AllocatorPolicy next = *pendingPolicy_;
    pendingPolicy_.reset();
    applyPolicy(next);
  }
}

AllocatorPolicy DeviceAllocator::policy() const {
  const std::lock_guard lock(mutex_);
  return policy_;
}

void DeviceAllocator::applyPolicy(const AllocatorPolicy& policy) {
  const bool hadArena = policy_.mode == AllocatorMode::Arena &&
                        std::any_of(segments_.begin(), segments_.end(), [](const auto& entry) {
                          return entry.second->pool == Pool::Arena;
                        });
  const bool sameArena =
      hadArena && policy.mode == AllocatorMode::Arena && policy.arenaBytes == policy_.arenaBytes;
  if (!sameArena) {
    demoteArenaSegments();
  }
  // A new arena replaces the cache that held the activations (the caching pools' idle segments,
  // or the previous arena, demoted above): kept, it would stay reserved beside the arena — on the
  // H100 reserved went 5.5 → 9.2 GiB. Idle segments go back to the device before the arena is
  // reserved; segments that still hold a live block stay. Leaving the arena keeps it cached: the
  // pools reuse it for the activations it held.
  if (!sameArena && policy.mode == AllocatorMode::Arena) {
    releaseIdleSegments(kUnlimitedSplit, false, false);
  }
  policy_ = policy;
  if (policy.mode == AllocatorMode::Arena && !sameArena) {
    reserveArena(policy.arenaBytes);
  }
}

void DeviceAllocator::reserveArena(std::size_t bytes) {
  const std::size_t segmentBytes =
      (bytes + kLargeRoundBytes - 1) / kLargeRoundBytes * kLargeRoundBytes;
  Block* block = newSegment(Pool::Arena, segmentBytes);
  if (block == nullptr) {
    ++stats_.allocRetryCount;
    releaseIdleSegments(kUnlimitedSplit, false, false);
    block = newSegment(Pool::Arena, segmentBytes);
  }
  if (block == nullptr) {
    policy_.mode = AllocatorMode::Caching;  // stay usable: activations go to the pools
    throwOutOfMemory(segmentBytes, Owner::Activations);
  }
  insertFree(block);
}

void DeviceAllocator::beginGraphCapture() {
  const std::lock_guard lock(mutex_);
  capturing_ = true;
}

void DeviceAllocator::endGraphCapture() {
  const std::lock_guard lock(mutex_);
  capturing_ = false;
}

void DeviceAllocator::releaseGraphPool() {
  const std::lock_guard lock(mutex_);
  demoteSegments(Pool::Graph);
}

std::size_t DeviceAllocator::graphPoolLiveBytes() const {
  const std::lock_guard lock(mutex_);
  std::size_t bytes = 0;
  for (const auto& [address, block] : blocks_) {
    if (block->allocated && block->segment->pool == Pool::Graph) {
      bytes += block->bytes;
    }
  }
  return bytes;
}

void DeviceAllocator::demoteArenaSegments() {
  demoteSegments(Pool::Arena);
}

void DeviceAllocator::demoteSegments(Pool from) {
  for (const auto& [address, segment] : segments_) {
    if (segment->pool != from) {
      continue;
    }
    std::vector<Block*> freeBlocks;
    for (Block* block = segment->first; block != nullptr; block = block->next) {
      if (!block->allocated) {
        eraseFree(block);
        freeBlocks.push_back(block);
      }
    }
    segment->pool = Pool::Large;
    for (Block* block : freeBlocks) {
      insertFree(block);
    }
  }
}

void DeviceAllocator::throwOutOfMemory(std::size_t requested, Owner owner) {
  ++stats_.oomCount;
  const DeviceMemoryInfo info = device_->info();
  OutOfMemoryDetails details;
  details.requestedBytes = requested;
  details.deviceTotalBytes = info.totalBytes;
  details.deviceFreeBytes = info.freeBytes;
  details.allocatedBytes = static_cast<std::size_t>(stats_.allocatedBytes.current);
  details.reservedUnallocatedBytes =
      static_cast<std::size_t>(stats_.reservedBytes.current - stats_.allocatedBytes.current);
  for (const FreeSet* set : {&smallFree_, &largeFree_, &arenaFree_, &graphFree_}) {
    if (!set->empty()) {
      details.largestFreeBlockBytes =
          std::max(details.largestFreeBlockBytes, (*set->rbegin())->bytes);
    }
  }
  details.owner = owner;
  details.step = step_;
  details.deviceName = device_->name();
  details.policy = policy_;
  throw OutOfMemoryError(std::move(details));
}

}  // namespace lorascope::memory
