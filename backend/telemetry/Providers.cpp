// Providers.cpp — the order in which providers are tried: NVML; for AMD, amd-smi (ROCm 6/7), else
// rocm-smi, else amdgpu sysfs (all three read the same driver, so only the first that works).
// On Windows: NVML (nvml.dll) and rocm-smi (rocm_smi64.dll) where present (AMD SMI needs
// /dev/kfd), then DXGI/PDH for every GPU (per-process memory and utilisation, which NVML does not
// give under WDDM), and the Windows host.
#include "telemetry/Providers.h"

#include "common/Platform.h"  // defines: kOsFamily
#include "telemetry/AmdSmiProvider.h"
#include "telemetry/AmdgpuSysfsProvider.h"
#include "telemetry/HostProvider.h"
#include "telemetry/NvmlProvider.h"
#include "telemetry/RocmSmiProvider.h"
#include "telemetry/WindowsGpuProvider.h"
#include "telemetry/WindowsHostProvider.h"

namespace lorascope::telemetry {
namespace {

// Initialises `provider`; keeps it in `into` or records why it is unavailable.
bool tryOpen(const std::shared_ptr<Provider>& provider, ProviderSet& set,
             std::vector<std::shared_ptr<Provider>>& into) {
  if (provider->init()) {
    into.push_back(provider);
    return true;
  }
  set.unavailable.push_back({provider->name(), provider->lastError()});
  return false;
}

}  // namespace

ProviderSet openProviders() {
  ProviderSet set;
  if (common::kOsFamily == common::OsFamily::Windows) {
    tryOpen(std::make_shared<NvmlProvider>(), set, set.gpu);
    tryOpen(std::make_shared<RocmSmiProvider>(), set, set.gpu);
    tryOpen(std::make_shared<WindowsGpuProvider>(), set, set.gpu);
    std::vector<std::shared_ptr<Provider>> host;
    if (tryOpen(std::make_shared<WindowsHostProvider>(), set, host)) {
      set.host = host.front();
    }
    return set;
  }
  tryOpen(std::make_shared<NvmlProvider>(), set, set.gpu);
  if (!tryOpen(std::make_shared<AmdSmiProvider>(), set, set.gpu) &&
      !tryOpen(std::make_shared<RocmSmiProvider>(), set, set.gpu)) {
    tryOpen(std::make_shared<AmdgpuSysfsProvider>(), set, set.gpu);
  }
  std::vector<std::shared_ptr<Provider>> host;
  if (tryOpen(std::make_shared<HostProvider>(), set, host)) {
    set.host = host.front();
  }
  return set;
}

}  // namespace lorascope::telemetry
