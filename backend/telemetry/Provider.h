// Provider.h — one telemetry source (nvtop's vendor struct, ksystemstats' GpuBackend): init,
// devices, refresh, last error. Implementations: NvmlProvider, RocmSmiProvider,
// AmdgpuSysfsProvider, HostProvider.
//
// A missing library or device is a normal outcome: init() returns false and lastError() says why
// in words. A provider is used from one thread at a time; the Sampler calls refresh() on a
// worker thread of its own so a slow vendor library never stalls the caller.
#pragma once

#include <string>
#include <vector>

#include "telemetry/Metrics.h"  // defines: DeviceInfo, Snapshot

namespace lorascope::telemetry {

class Provider {
 public:
  virtual ~Provider() = default;
  Provider() = default;
  Provider(const Provider&) = delete;
  Provider& operator=(const Provider&) = delete;

  virtual std::string name() const = 0;  // "nvml", "rocm-smi", "amdgpu-sysfs", "host"
  // Loads the library / finds the devices. False = unavailable; lastError() says why.
  virtual bool init() = 0;
  virtual std::vector<DeviceInfo> devices() const = 0;  // valid after a successful init()
  // Reads every metric it can into `out`. False when nothing could be read (lastError() says
  // why); individual metrics that fail stay empty and do not make the refresh fail.
  virtual bool refresh(Snapshot& out) = 0;
  virtual std::string lastError() const = 0;
};

}  // namespace lorascope::telemetry
