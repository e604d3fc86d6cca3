// Providers.cpp — the order in which providers are tried: NVML; for AMD, amd-smi (ROCm 6/7), else
// rocm-smi, else amdgpu sysfs (all three read the same driver, so only the first that works).
#include "telemetry/Providers.h"

#include "telemetry/AmdSmiProvider.h"
#include "telemetry/AmdgpuSysfsProvider.h"
#include "telemetry/HostProvider.h"
#include "telemetry/NvmlProvider.h"
#include "telemetry/RocmSmiProvider.h"

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
