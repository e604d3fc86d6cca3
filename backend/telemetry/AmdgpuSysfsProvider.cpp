// AmdgpuSysfsProvider.cpp — amdgpu sysfs and hwmon files into DeviceReadings; fdinfo into
// ProcessReadings.
#include "telemetry/AmdgpuSysfsProvider.h"

#include <algorithm>
#include <system_error>

#include "telemetry/DrmFdinfo.h"  // defines: scanDrmClients
#include "telemetry/TextFiles.h"  // defines: readUnsignedFile, readTextFile, parseUnsigned

namespace lorascope::telemetry {
namespace {

namespace fs = std::filesystem;

// The value of KEY=value in a uevent file, or "".
std::string ueventValue(const std::string& uevent, const std::string& key) {
  const std::string prefix = key + "=";
  std::size_t start = 0;
  while (start < uevent.size()) {
    std::size_t end = uevent.find('\n', start);
    end = end == std::string::npos ? uevent.size() : end;
    if (uevent.compare(start, prefix.size(), prefix) == 0) {
      return uevent.substr(start + prefix.size(), end - start - prefix.size());
    }
    start = end + 1;
  }
  return "";
}

std::optional<int> cardNumber(const std::string& name) {
  if (name.rfind("card", 0) != 0) {
    return std::nullopt;
  }
  const std::optional<std::uint64_t> number = parseUnsigned(name.substr(4));
  if (!number || name.size() == 4 || *number > 4096) {
    return std::nullopt;  // "card0-DP-1" and the like are connectors, not cards
  }
  return static_cast<int>(*number);
}

std::optional<double> percentFile(const fs::path& path) {
  const std::optional<std::uint64_t> value = readUnsignedFile(path);
  if (!value || *value > 100) {
    return std::nullopt;
  }
  return static_cast<double>(*value);
}

std::optional<double> scaledFile(const fs::path& path, double unitsPerResult) {
  const std::optional<std::uint64_t> value = readUnsignedFile(path);
  if (!value) {
    return std::nullopt;
  }
  return static_cast<double>(*value) / unitsPerResult;
}

// The hwmon directory of the card: the one whose `name` is amdgpu, else the first.
std::optional<fs::path> hwmonDir(const fs::path& deviceDir) {
  std::error_code error;
  std::vector<fs::path> candidates;
  for (const fs::directory_entry& entry : fs::directory_iterator(deviceDir / "hwmon", error)) {
    candidates.push_back(entry.path());
  }
  std::sort(candidates.begin(), candidates.end());
  for (const fs::path& dir : candidates) {
    if (trimmed(readTextFile(dir / "name", 256).value_or("")) == "amdgpu") {
      return dir;
    }
  }
  if (candidates.empty()) {
    return std::nullopt;
  }
  return candidates.front();
}

}  // namespace

std::vector<AmdgpuCard> findAmdgpuCards(const fs::path& drmRoot) {
  std::vector<std::pair<int, AmdgpuCard>> found;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(drmRoot, error)) {
    const std::string name = entry.path().filename().string();
    const std::optional<int> number = cardNumber(name);
    if (!number) {
      continue;
    }
    const fs::path deviceDir = entry.path() / "device";
    const std::string uevent = readTextFile(deviceDir / "uevent", 64 * 1024).value_or("");
    if (ueventValue(uevent, "DRIVER") != "amdgpu") {
      continue;
    }
    found.push_back({*number, AmdgpuCard{name, deviceDir, ueventValue(uevent, "PCI_SLOT_NAME"),
                                         ueventValue(uevent, "PCI_ID")}});
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<AmdgpuCard> cards;
  for (auto& entry : found) {
    cards.push_back(std::move(entry.second));
  }
  return cards;
}

DeviceReading readAmdgpuCard(const AmdgpuCard& card, int index) {
  const fs::path& dir = card.deviceDir;
  DeviceReading r;
  r.index = index;
  r.vramTotalBytes = readUnsignedFile(dir / "mem_info_vram_total");
  r.vramUsedBytes = readUnsignedFile(dir / "mem_info_vram_used");
  r.visibleVramTotalBytes = readUnsignedFile(dir / "mem_info_vis_vram_total");
  r.visibleVramUsedBytes = readUnsignedFile(dir / "mem_info_vis_vram_used");
  r.gttTotalBytes = readUnsignedFile(dir / "mem_info_gtt_total");
  r.gttUsedBytes = readUnsignedFile(dir / "mem_info_gtt_used");
  r.busyPercent = percentFile(dir / "gpu_busy_percent");
  r.memoryBusyPercent = percentFile(dir / "mem_busy_percent");
  if (const std::optional<fs::path> hwmon = hwmonDir(dir)) {
    r.temperatureCelsius = scaledFile(*hwmon / "temp1_input", 1000.0);  // millidegrees
    r.powerWatts = scaledFile(*hwmon / "power1_average", 1e6);          // microwatts
    if (!r.powerWatts) {
      r.powerWatts = scaledFile(*hwmon / "power1_input", 1e6);  // RDNA3 and later kernels
    }
    r.graphicsClockMhz = scaledFile(*hwmon / "freq1_input", 1e6);  // Hz
    r.memoryClockMhz = scaledFile(*hwmon / "freq2_input", 1e6);
  }
  return r;
}

AmdgpuSysfsProvider::AmdgpuSysfsProvider(SysfsRoots roots) : roots_(std::move(roots)) {}

bool AmdgpuSysfsProvider::init() {
  cards_ = findAmdgpuCards(roots_.drm);
  if (cards_.empty()) {
    lastError_ = "no card bound to the amdgpu driver under " + roots_.drm.string();
    return false;
  }
  lastError_.clear();
  return true;
}

std::vector<DeviceInfo> AmdgpuSysfsProvider::devices() const {
  std::vector<DeviceInfo> infos;
  for (std::size_t i = 0; i < cards_.size(); ++i) {
    const AmdgpuCard& card = cards_[i];
    infos.push_back(
        DeviceInfo{static_cast<int>(i),
                   "amdgpu " + card.cardName + (card.pciId.empty() ? "" : " [" + card.pciId + "]"),
                   card.pciSlot, name()});
  }
  return infos;
}

bool AmdgpuSysfsProvider::refresh(Snapshot& out) {
  out.devices.clear();
  out.processes.clear();
  for (std::size_t i = 0; i < cards_.size(); ++i) {
    out.devices.push_back(readAmdgpuCard(cards_[i], static_cast<int>(i)));
  }
  const DrmScanResult scan = scanDrmClients(roots_.proc, "amdgpu");
  for (const DrmProcessUsage& usage : scan.processes) {
    ProcessReading p;
    p.pid = usage.pid;
    p.name = usage.name;
    p.vramBytes = usage.vramBytes;
    p.gttBytes = usage.gttBytes;
    for (std::size_t i = 0; i < cards_.size(); ++i) {
      if (!usage.pdev.empty() && usage.pdev == cards_[i].pciSlot) {
        p.deviceIndex = static_cast<int>(i);
      }
    }
    out.processes.push_back(std::move(p));
  }
  const bool anyMemory =
      std::any_of(out.devices.begin(), out.devices.end(),
                  [](const DeviceReading& d) { return d.vramUsedBytes.has_value(); });
  lastError_ = anyMemory ? "" : "no mem_info_vram_used readable under " + roots_.drm.string();
  return anyMemory;
}

}  // namespace lorascope::telemetry
