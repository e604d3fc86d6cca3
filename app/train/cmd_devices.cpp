// train/cmd_devices.cpp — `lorascope-train devices [--json]`: build facts and the GPUs the HIP
// runtime reports. No GPU is a normal answer (exit 0).
#include <iostream>

#include <nlohmann/json.hpp>

#include "compute/BuildInfo.h"
#include "train/CliArgs.h"
#include "train/Commands.h"

namespace lorascope::cli {

int runDevices(const Args& args) {
  const CliArgs parsed(args, {"json"}, {});
  const compute::GpuInventory inventory = compute::queryGpuInventory();
  if (!parsed.has("json")) {
    std::cout << compute::describeBuildAndDevices(inventory);
    return 0;
  }
  const compute::BuildInfo& info = compute::buildInfo();
  nlohmann::json out = {{"version", info.version},
                        {"flavour", info.flavour},
                        {"gpu_targets", info.gpuTargets},
                        {"runtime", inventory.runtime},
                        {"devices", nlohmann::json::array()}};
  if (inventory.devices.empty()) {
    out["unavailable_reason"] = inventory.unavailableReason;
  }
  for (const compute::GpuDeviceInfo& d : inventory.devices) {
    out["devices"].push_back({{"index", d.index},
                              {"name", d.name},
                              {"architecture", d.architecture},
                              {"total_bytes", d.totalBytes},
                              {"compute_units", d.computeUnits},
                              {"wave_size", d.waveSize}});
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace lorascope::cli
