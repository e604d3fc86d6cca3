// NoGpuEvents.cpp — the cpu flavour has no device events: the queue tracker counts submissions as
// completed at once.
#include "runtime/LaunchControl.h"

namespace lorascope::runtime {

std::shared_ptr<EventApi> platformEventApi() {
  return nullptr;
}

}  // namespace lorascope::runtime
