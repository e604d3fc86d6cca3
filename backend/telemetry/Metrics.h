// Metrics.h — what a telemetry provider reports: device identity, one reading per device, the
// processes holding device memory, and host memory. Every metric is optional (nvtop's validity
// bit): an unread metric stays empty and is shown as "n/a", never as a made-up zero. Units are
// in the names.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lorascope::telemetry {

struct DeviceInfo {
  int index = 0;         // the provider's own device index
  std::string name;      // "NVIDIA H100 80GB HBM3", "amdgpu card0 [1002:744c]"
  std::string busId;     // PCI "0000:03:00.0" when known, else ""
  std::string provider;  // "nvml", "rocm-smi", "amdgpu-sysfs"
};

struct DeviceReading {
  int index = 0;
  std::optional<std::uint64_t> vramTotalBytes;
  std::optional<std::uint64_t> vramUsedBytes;          // what the driver says is in use
  std::optional<std::uint64_t> vramReservedBytes;      // NVIDIA: held back by the driver itself
  std::optional<std::uint64_t> visibleVramTotalBytes;  // CPU-visible VRAM (AMD) / BAR1 (NVIDIA)
  std::optional<std::uint64_t> visibleVramUsedBytes;
  std::optional<std::uint64_t> gttTotalBytes;  // system memory mapped for the GPU (AMD)
  std::optional<std::uint64_t> gttUsedBytes;
  std::optional<double> busyPercent;
  std::optional<double> memoryBusyPercent;
  std::optional<double> temperatureCelsius;  // edge (AMD) / GPU core (NVIDIA)
  std::optional<double> powerWatts;
  std::optional<double> graphicsClockMhz;
  std::optional<double> memoryClockMhz;
  // Windows (DXGI QueryVideoMemoryInfo): the VRAM the OS lets this process use now, and what it
  // uses of it.
  std::optional<std::uint64_t> processVramBudgetBytes;
  std::optional<std::uint64_t> processVramUsageBytes;
};

struct ProcessReading {
  std::uint32_t pid = 0;  // as the platform lists it (NVML: the host's PID namespace)
  std::optional<int> deviceIndex;
  std::string name;  // /proc/<pid>/comm (Windows: the image name) when readable, else ""
  std::optional<std::uint64_t> vramBytes;
  std::optional<std::uint64_t> gttBytes;
  std::optional<std::uint64_t> sdmaTimeUs;   // rocm-smi: time spent in SDMA (copy) engines
  std::optional<double> cuOccupancyPercent;  // rocm-smi: share of compute units in use
};

struct HostReading {
  std::optional<std::uint64_t> ramTotalBytes;
  std::optional<std::uint64_t> ramAvailableBytes;
  std::optional<std::uint64_t> swapTotalBytes;
  std::optional<std::uint64_t> swapFreeBytes;
  std::optional<std::uint64_t> processRssBytes;  // this process's resident set
};

// One refresh's worth of data from one provider.
struct Snapshot {
  std::vector<DeviceReading> devices;
  std::vector<ProcessReading> processes;
  std::optional<HostReading> host;
};

// Calls `visit(name, value)` for every metric of a reading, in a fixed order; names are the
// snake_case field names ("vram_used_bytes"). The sampler, the CLI and JSON share this list.
using MetricVisitor = std::function<void(const char* name, std::optional<double> value)>;
void forEachMetric(const DeviceReading& reading, const MetricVisitor& visit);
void forEachMetric(const HostReading& reading, const MetricVisitor& visit);

}  // namespace lorascope::telemetry
