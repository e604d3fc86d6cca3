// OpTiming.cpp — the on/off switch of per-op timing, the same in every flavour. The brackets and
// takeOpTimes() are the flavour's: hip/OpTiming.cpp, or NoGpuEvents.cpp in the cpu flavour.
#include "runtime/OpTiming.h"

#include <atomic>

namespace lorascope::runtime::gpu {
namespace {

std::atomic<bool> timingOn{false};

}  // namespace

void setOpTiming(bool on) {
  timingOn.store(on, std::memory_order_relaxed);
}

bool opTimingEnabled() {
  return timingOn.load(std::memory_order_relaxed);
}

}  // namespace lorascope::runtime::gpu
