// WindowsGpuProvider.h — GPUs on Windows without a vendor library ("dxgi-pdh"): the adapters
// DXGI enumerates, with this process's VRAM budget and usage (QueryVideoMemoryInfo); the driver's
// used dedicated and shared memory per adapter ("GPU Adapter Memory"), each process's
// ("GPU Process Memory"), and utilisation ("GPU Engine": per engine type, the sum over processes;
// the busiest engine type is the GPU's busy percent, as Task Manager shows it). Works for every
// vendor under WDDM, so it also fills what NVML cannot give on Windows (per-process memory).
//
// What it cannot see, said in the "who holds VRAM" view: memory the kernel-mode driver keeps for
// itself; the processes inside WSL2, whose allocations Windows lists under the one process of the
// WSL virtual machine (vmmem / vmmemWSL); temperature, power and clocks (those need the vendor's
// library: NVML, or AMD's where present).
//
// The system calls go through a WindowsGpuSource (common/WindowsCounters.h by default) so that
// tests feed recorded DXGI and PDH answers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/WindowsCounters.h"
#include "telemetry/Provider.h"

namespace lorascope::telemetry {

// The seam: what the provider asks Windows.
class WindowsGpuSource {
 public:
  virtual ~WindowsGpuSource() = default;
  virtual std::vector<common::DxgiAdapterInfo> adapters(std::string* error) = 0;
  // Opens the PDH counters of kWindowsGpuCounters; false with *error when there are none.
  virtual bool openCounters(std::string* error) = 0;
  // One sample of kWindowsGpuCounters, in that order.
  virtual bool readCounters(std::vector<std::vector<common::CounterSample>>* values,
                            std::string* error) = 0;
  virtual std::string processName(std::uint32_t pid) = 0;
};

// The PDH counters read, in this order.
inline constexpr const char* kWindowsGpuCounters[] = {
    "\\GPU Adapter Memory(*)\\Dedicated Usage", "\\GPU Adapter Memory(*)\\Shared Usage",
    "\\GPU Process Memory(*)\\Dedicated Usage", "\\GPU Process Memory(*)\\Shared Usage",
    "\\GPU Engine(*)\\Utilization Percentage",
};

// The parts of a PDH GPU instance name:
// "pid_1234_luid_0x00000000_0x0000D4B4_phys_0_eng_3_engtype_VideoDecode";
// adapter-wide instances ("luid_0x00000000_0x0000D4B4_phys_0") have no pid.
struct GpuInstanceName {
  std::optional<std::uint32_t> pid;
  std::uint64_t luid = 0;
  int physicalAdapter = 0;
  std::string engineType;  // "3D", "Compute_0", "Copy", ... ("" outside GPU Engine)
};
std::optional<GpuInstanceName> parseGpuInstanceName(std::string_view instance);

// The default source: common/WindowsCounters.h (answers "Windows only" elsewhere).
std::unique_ptr<WindowsGpuSource> systemWindowsGpuSource();

class WindowsGpuProvider : public Provider {
 public:
  explicit WindowsGpuProvider(std::unique_ptr<WindowsGpuSource> source = systemWindowsGpuSource());
  std::string name() const override { return "dxgi-pdh"; }
  bool init() override;
  std::vector<DeviceInfo> devices() const override { return devices_; }
  bool refresh(Snapshot& out) override;
  std::string lastError() const override { return lastError_; }

 private:
  std::unique_ptr<WindowsGpuSource> source_;
  std::vector<common::DxgiAdapterInfo> adapters_;  // hardware adapters, in device-index order
  std::vector<DeviceInfo> devices_;
  bool countersOpen_ = false;
  std::string countersError_;
  std::string lastError_;
};

}  // namespace lorascope::telemetry
