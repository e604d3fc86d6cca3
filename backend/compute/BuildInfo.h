// BuildInfo.h — facts about this build (version, flavour, GPU targets) and the GPUs the HIP
// runtime reports, shared by the About dialog and `lorascope-train --version` / `devices`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lorascope::compute {

struct BuildInfo {
  std::string version;     // "0.1.0"
  std::string flavour;     // "cpu", "hip-amd" or "hip-nvidia"
  std::string gpuTargets;  // "gfx1030;gfx90a", "sm_90" or "" for cpu
  std::string compiler;    // e.g. "GNU 12.2.0"
};
const BuildInfo& buildInfo();

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
