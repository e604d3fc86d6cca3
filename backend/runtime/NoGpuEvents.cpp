// NoGpuEvents.cpp — the cpu flavour has no device events: the queue tracker counts submissions as
// completed at once, and per-op timing has no launch to bracket.
#include "runtime/LaunchControl.h"
#include "runtime/OpTiming.h"

namespace lorascope::runtime {

std::shared_ptr<EventApi> platformEventApi() {
  return nullptr;
}

namespace gpu {

std::vector<OpTime> takeOpTimes() {
  return {};
}

}  // namespace gpu

}  // namespace lorascope::runtime
