// Providers.h — picks the providers that work on this machine: NVML, amd-smi, rocm-smi (only
// where amd-smi is unavailable), amdgpu sysfs (only where both are, since all three read the same
// driver), and the host. Each that
// is absent is listed with the reason, in words; none of that is an error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "telemetry/Provider.h"

namespace lorascope::telemetry {

struct UnavailableProvider {
  std::string name;
  std::string reason;
};

struct ProviderSet {
  std::vector<std::shared_ptr<Provider>> gpu;  // initialised GPU providers
  std::shared_ptr<Provider> host;              // initialised host provider, or nullptr
  std::vector<UnavailableProvider> unavailable;
};

ProviderSet openProviders();

}  // namespace lorascope::telemetry
