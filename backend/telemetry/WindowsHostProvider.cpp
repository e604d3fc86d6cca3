// WindowsHostProvider.cpp — GlobalMemoryStatusEx and the working set into a HostReading.
#include "telemetry/WindowsHostProvider.h"

namespace lorascope::telemetry {

bool WindowsHostProvider::init() {
  Snapshot probe;
  return refresh(probe);
}

bool WindowsHostProvider::refresh(Snapshot& out) {
  std::string error;
  const std::optional<common::MemoryStatus> status = source_.memoryStatus(&error);
  if (!status) {
    lastError_ = error;
    return false;
  }
  HostReading host;
  host.ramTotalBytes = status->totalPhysicalBytes;
  host.ramAvailableBytes = status->availablePhysicalBytes;
  host.processRssBytes = source_.workingSetBytes();
  out.host = host;
  lastError_.clear();
  return true;
}

}  // namespace lorascope::telemetry
