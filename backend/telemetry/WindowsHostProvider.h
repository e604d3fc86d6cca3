// WindowsHostProvider.h — host memory on Windows ("host"): RAM total and available from
// GlobalMemoryStatusEx, this process's working set. Swap stays n/a: Windows reports a commit
// limit (RAM plus paging files), not a swap size, and a made-up split would not be a reading.
// The system calls come through WindowsHostSource (common/WindowsCounters.h by default) so tests
// feed recorded answers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/WindowsCounters.h"
#include "telemetry/Provider.h"

namespace lorascope::telemetry {

struct WindowsHostSource {
  std::function<std::optional<common::MemoryStatus>(std::string* error)> memoryStatus =
      common::globalMemoryStatus;
  std::function<std::optional<std::uint64_t>()> workingSetBytes = common::currentWorkingSetBytes;
};

class WindowsHostProvider : public Provider {
 public:
  explicit WindowsHostProvider(WindowsHostSource source = {}) : source_(std::move(source)) {}
  std::string name() const override { return "host"; }
  bool init() override;
  std::vector<DeviceInfo> devices() const override { return {}; }
  bool refresh(Snapshot& out) override;
  std::string lastError() const override { return lastError_; }

 private:
  WindowsHostSource source_;
  std::string lastError_;
};

}  // namespace lorascope::telemetry
