// cpu/host_blocks.cpp — see host_blocks.h, Note [host block cache].
#include "compute/cpu/host_blocks.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace lorascope::compute::cpu {
namespace {

void* newBlock(std::size_t bytes) {
  // C++'s aligned operator new, not std::aligned_alloc, which the Windows C runtime lacks; it
  // throws std::bad_alloc itself.
  return ::operator new (bytes, std::align_val_t{kHostAlignmentBytes});
}

void deleteBlock(void* p) {
  ::operator delete (p, std::align_val_t{kHostAlignmentBytes});
}

}  // namespace

struct HostBlocks::Cache {
  explicit Cache(std::size_t limitBytes) : limit(limitBytes) {}
  const std::size_t limit;
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free;  // by size in bytes
  std::size_t bytes = 0;

  ~Cache() { flush(); }

  void flush() {
    for (auto& [size, blocks] : free) {
      for (void* p : blocks) {
        deleteBlock(p);
      }
    }
    free.clear();
    bytes = 0;
  }

  void* take(std::size_t size) {
    {
      const std::lock_guard lock(mutex);
      auto it = free.find(size);
      if (it != free.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        bytes -= size;
        return p;
      }
    }
    return newBlock(size);
  }

  void give(void* p, std::size_t size) {
    const std::lock_guard lock(mutex);
    if (size > limit) {
      deleteBlock(p);
      return;
    }
    if (bytes + size > limit) {
      flush();
    }
    free[size].push_back(p);
    bytes += size;
  }
};

HostBlocks::HostBlocks(std::size_t cacheLimitBytes)
    : cache_(std::make_shared<Cache>(cacheLimitBytes)) {}

HostBlocks::~HostBlocks() = default;

std::shared_ptr<void> HostBlocks::allocate(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kHostAlignmentBytes - 1) /
                              kHostAlignmentBytes * kHostAlignmentBytes;
  if (rounded < kMinCachedBytes) {
    return std::shared_ptr<void>(newBlock(rounded), deleteBlock);
  }
  void* p = cache_->take(rounded);
  // The deleter owns the cache: a tensor may outlive the backend that made it.
  return std::shared_ptr<void>(p, [cache = cache_, rounded](void* q) { cache->give(q, rounded); });
}

std::size_t HostBlocks::cachedBytes() const {
  const std::lock_guard lock(cache_->mutex);
  return cache_->bytes;
}

}  // namespace lorascope::compute::cpu
