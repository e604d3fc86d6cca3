// AmdgpuSysfsProvider.h — AMD GPUs read straight from the amdgpu kernel driver's sysfs files, for
// Linux machines without rocm-smi. Layout followed (Linux 6.8, as on Ubuntu 24.04; unchanged
// since 5.x for these files):
//   /sys/class/drm/card<N>/device/uevent                   DRIVER=amdgpu, PCI_ID, PCI_SLOT_NAME
//   /sys/class/drm/card<N>/device/mem_info_vram_total|used      bytes
//   /sys/class/drm/card<N>/device/mem_info_vis_vram_total|used  bytes (CPU-visible VRAM)
//   /sys/class/drm/card<N>/device/mem_info_gtt_total|used       bytes
//   /sys/class/drm/card<N>/device/gpu_busy_percent, mem_busy_percent
//   /sys/class/drm/card<N>/device/hwmon/hwmon<M>/temp1_input (m°C), power1_average or
//     power1_input (µW), freq1_input (sclk, Hz), freq2_input (mclk, Hz)
// Per-process VRAM comes from /proc/<pid>/fdinfo (DrmFdinfo.h). Both roots are injectable so
// tests read fixture trees.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "telemetry/Provider.h"

namespace lorascope::telemetry {

struct SysfsRoots {
  std::filesystem::path drm = "/sys/class/drm";
  std::filesystem::path proc = "/proc";
};

struct AmdgpuCard {
  std::string cardName;             // "card0"
  std::filesystem::path deviceDir;  // <drm>/card0/device
  std::string pciSlot;              // "0000:03:00.0" or ""
  std::string pciId;                // "1002:744C" or ""
};

// Cards bound to amdgpu, in card-number order (connectors such as card0-DP-1 are skipped).
std::vector<AmdgpuCard> findAmdgpuCards(const std::filesystem::path& drmRoot);
// Every metric the card's files give; unreadable or malformed files leave the metric empty.
DeviceReading readAmdgpuCard(const AmdgpuCard& card, int index);

class AmdgpuSysfsProvider : public Provider {
 public:
  explicit AmdgpuSysfsProvider(SysfsRoots roots = {});
  std::string name() const override { return "amdgpu-sysfs"; }
  bool init() override;
  std::vector<DeviceInfo> devices() const override;
  bool refresh(Snapshot& out) override;
  std::string lastError() const override { return lastError_; }

 private:
  SysfsRoots roots_;
  std::vector<AmdgpuCard> cards_;
  std::string lastError_;
};

}  // namespace lorascope::telemetry
