// HostProvider.h — host memory, the CPU fallback's memory: RAM total/available and swap from
// /proc/meminfo, this process's resident set (VmRSS) from /proc/self/status. The proc root is
// injectable so tests read fixture files.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/Provider.h"

namespace lorascope::telemetry {

// Parses /proc/meminfo text (MemTotal, MemAvailable, SwapTotal, SwapFree) and /proc/self/status
// text (VmRSS). Lines that are missing or malformed leave their metric empty.
HostReading parseHostMemory(std::string_view meminfo, std::string_view selfStatus);

class HostProvider : public Provider {
 public:
  explicit HostProvider(std::filesystem::path procRoot = "/proc");
  std::string name() const override { return "host"; }
  bool init() override;
  std::vector<DeviceInfo> devices() const override { return {}; }
  bool refresh(Snapshot& out) override;
  std::string lastError() const override { return lastError_; }

 private:
  std::filesystem::path procRoot_;
  std::string lastError_;
};

}  // namespace lorascope::telemetry
