// BuildInfo.cpp — the build facts and the GPUs in one text.
#include "compute/BuildInfo.h"

#include <sstream>

namespace lorascope::compute {

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
