// BuildInfo.h — facts about this build (common/Build.h: version, flavour, GPU targets) and the GPUs
// the HIP runtime reports, shared by `lorascope-train --version` / `devices`, doctor and the
// engine's hello event (from which the About dialog lists the GPUs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/Build.h"

namespace lorascope::compute {

using common::BuildInfo;
using common::buildInfo;

struct GpuDeviceInfo {
  int index = 0;
  std::string name;          // as the runtime reports it
  std::string architecture;  // "gfx1100", "sm_90"
  std::uint64_t totalBytes = 0;
  int computeUnits = 0;  // CUs on AMD, SMs on NVIDIA
  int waveSize = 0;
};

struct GpuInventory {
  std::string runtime;  // "HIP 5.2 (AMD)", "CUDA 13.0 via HIP portability header", or "" in cpu
  std::vector<GpuDeviceInfo> devices;
  std::string unavailableReason;  // why `devices` is empty, in words; "" when devices were found
};
// Asks the HIP runtime (or nothing, in the cpu flavour). Never throws: no GPU is a normal answer.
GpuInventory queryGpuInventory();

// Multi-line human-readable summary: version, flavour, targets, runtime, devices ("none: why").
std::string describeBuildAndDevices(const GpuInventory& inventory);

}  // namespace lorascope::compute
