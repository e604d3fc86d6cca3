// BuildInfo.cpp — the build facts recorded by CMake and their one-text summary.
#include "compute/BuildInfo.h"

#include <sstream>

#include "lorascope_build_config.h"  // generated: LORASCOPE_VERSION, LORASCOPE_FLAVOUR, ...

namespace lorascope::compute {

const BuildInfo& buildInfo() {
  static const BuildInfo info{LORASCOPE_VERSION, LORASCOPE_FLAVOUR, LORASCOPE_GPU_TARGETS,
                              LORASCOPE_COMPILER};
  return info;
}

std::string describeBuildAndDevices(const GpuInventory& inventory) {
  const BuildInfo& info = buildInfo();
  std::ostringstream out;
  out << "LoRAscope " << info.version << "\n";
  out << "build flavour: " << info.flavour << "\n";
  out << "GPU targets: " << (info.gpuTargets.empty() ? "none" : info.gpuTargets) << "\n";
  out << "compiler: " << info.compiler << "\n";
  out << "GPU runtime: " << (inventory.runtime.empty() ? "none" : inventory.runtime) << "\n";
  if (inventory.devices.empty()) {
    out << "GPUs: none (" << inventory.unavailableReason << ")\n";
  }
  for (const GpuDeviceInfo& d : inventory.devices) {
    out << "GPU " << d.index << ": " << d.name << " [" << d.architecture << "], "
        << (d.totalBytes >> 20) << " MiB, " << d.computeUnits << " compute units, wave "
        << d.waveSize << "\n";
  }
  return out.str();
}

}  // namespace lorascope::compute
