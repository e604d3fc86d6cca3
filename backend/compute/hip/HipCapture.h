// hip/HipCapture.h — the GPU backend's capture state (hip/HipCapture.cpp), shared with
// HipBackend.cpp, which owns it. Internal to backend/compute/hip.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "compute/hip/HipBackend.h"

namespace lorascope::compute::hip {

// The ranges pinnedHost() handed out and that are still alive: a copy from one of them is a live
// input of a captured graph. Shared with the buffers' deleters, which may run on any thread.
class PinnedRanges {
 public:
  void add(const std::byte* begin, std::size_t bytes) {
    const std::lock_guard lock(mutex_);
    ranges_[begin] = bytes;
  }
  void remove(const std::byte* begin) {
    const std::lock_guard lock(mutex_);
    ranges_.erase(begin);
  }
  bool contains(const void* p, std::size_t bytes) const {
    const auto* q = static_cast<const std::byte*>(p);
    const std::lock_guard lock(mutex_);
    auto it = ranges_.upper_bound(q);
    if (it == ranges_.begin()) {
      return false;
    }
    --it;
    return q >= it->first && q + bytes <= it->first + it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<const std::byte*, std::size_t> ranges_;
};

// The capture in progress: the pinned copies of the constant host values its ops read
// (bump-allocated from blocks of kStagingBlockBytes), kept by the graph it becomes.
struct HipBackend::Capture {
  static constexpr std::size_t kStagingBlockBytes = std::size_t{4} << 20;
  std::vector<std::shared_ptr<std::byte[]>> staging;
  std::size_t used = kStagingBlockBytes;  // of staging.back(); full: a new block first
  // A pinned copy of `bytes` host bytes, valid as long as `staging`.
  const std::byte* stage(const void* host, std::size_t bytes);
};

}  // namespace lorascope::compute::hip
