// OpTiming.cpp — the on/off switch and the scopes of per-op timing, the same in every flavour. The
// brackets and takeOpTimes() are the flavour's: hip/OpTimer.cpp, or NoGpuEvents.cpp in the cpu
// flavour.
#include "runtime/OpTiming.h"

#include <atomic>

namespace lorascope::runtime::gpu {
namespace {

std::atomic<bool> timingOn{false};
thread_local const char* innermostScope = nullptr;

}  // namespace

void setOpTiming(bool on) {
  timingOn.store(on, std::memory_order_relaxed);
}

bool opTimingEnabled() {
  return timingOn.load(std::memory_order_relaxed);
}

OpTimingScope::OpTimingScope(const char* name) : previous_(innermostScope) {
  innermostScope = name;
}

OpTimingScope::~OpTimingScope() {
  innermostScope = previous_;
}

const char* currentOpTimingScope() {
  return innermostScope;
}

}  // namespace lorascope::runtime::gpu
