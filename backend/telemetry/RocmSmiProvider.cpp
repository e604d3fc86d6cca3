// RocmSmiProvider.cpp — librocm_smi64 through a symbol table: device metrics and KFD processes.
#include "telemetry/RocmSmiProvider.h"
#include "common/Platform.h"  // defines: kOsFamily

#include <cstring>

#include "telemetry/TextFiles.h"  // defines: readProcessName

namespace lorascope::telemetry {
namespace {

using namespace rsmi;  // the constants of rocm_smi.h (RocmSmiAbi.h)

constexpr std::uint32_t kMaxProcesses = 1024;
const char* const kProcRoot = "/proc";
const char* const kKfdNode = "/dev/kfd";

std::uint32_t readU32(const unsigned char* bytes, std::size_t offset) {
  std::uint32_t value = 0;
  std::memcpy(&value, bytes + offset, sizeof(value));
  return value;
}

std::optional<std::uint64_t> currentFrequencyAt(const unsigned char* bytes, std::size_t size,
                                                std::size_t countOffset, std::size_t arrayOffset) {
  const std::uint32_t supported = readU32(bytes, countOffset);
  const std::uint32_t current = readU32(bytes, countOffset + 4);
  if (supported == 0 || supported > kMaxFrequencies || current >= supported ||
      arrayOffset + kMaxFrequencies * 8 > size) {
    return std::nullopt;
  }
  std::uint64_t hz = 0;
  std::memcpy(&hz, bytes + arrayOffset + current * 8, sizeof(hz));
  return hz;
}

}  // namespace

std::optional<std::uint64_t> decodeRsmiCurrentFrequencyHz(const unsigned char* bytes,
                                                          std::size_t size) {
  if (bytes == nullptr || size < 16) {
    return std::nullopt;
  }
  // ROCm 5: {u32 num_supported; u32 current; u64 frequency[32]}.
  if (auto hz = currentFrequencyAt(bytes, size, 0, 8)) {
    return hz;
  }
  // ROCm 6: {bool has_deep_sleep; u32 num_supported; u32 current; u64 frequency[33]}.
  return currentFrequencyAt(bytes, size, kRocm6FrequencyCountOffset, kRocm6FrequencyArrayOffset);
}

std::vector<std::string> RocmSmiProvider::defaultLibraryNames() {
  if (common::kOsFamily == common::OsFamily::Windows) {
    return {"rocm_smi64.dll", "rocm_smi.dll"};  // where an AMD install ships it
  }
  return {"librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5",
          "librocm_smi64.so.1", "librocm_smi64.so",   "/opt/rocm/lib/librocm_smi64.so"};
}

RocmSmiProvider::RocmSmiProvider(std::vector<std::string> libraryNames)
    : SmiProvider({"rocm-smi", "rsmi_init", "rsmi status"}, std::move(libraryNames), kKfdNode) {}

std::vector<SymbolSpec> RocmSmiProvider::symbolTable() {
  return {
      {{"rsmi_init"}, slotFor(api_.init), true},
      {{"rsmi_shut_down"}, slotFor(api_.shutDown), true},
      {{"rsmi_num_monitor_devices"}, slotFor(api_.numMonitorDevices), true},
      {{"rsmi_dev_memory_total_get"}, slotFor(api_.memoryTotal), true},
      {{"rsmi_dev_memory_usage_get"}, slotFor(api_.memoryUsage), true},
      {{"rsmi_status_string"}, slotFor(api_.statusString), false},
      {{"rsmi_dev_name_get"}, slotFor(api_.deviceName), false},
      {{"rsmi_dev_pci_id_get"}, slotFor(api_.pciId), false},
      {{"rsmi_dev_busy_percent_get"}, slotFor(api_.busyPercent), false},
      {{"rsmi_dev_memory_busy_percent_get"}, slotFor(api_.memoryBusyPercent), false},
      {{"rsmi_dev_temp_metric_get"}, slotFor(api_.temperature), false},
      {{"rsmi_dev_current_socket_power_get"}, slotFor(api_.socketPower), false},
      {{"rsmi_dev_power_ave_get"}, slotFor(api_.averagePower), false},
      {{"rsmi_dev_gpu_clk_freq_get"}, slotFor(api_.clockFrequencies), false},
      {{"rsmi_compute_process_info_get"}, slotFor(api_.processInfo), false},
      {{"rsmi_compute_process_gpus_get"}, slotFor(api_.processGpus), false},
      {{"rsmi_compute_process_info_by_pid_get"}, slotFor(api_.processInfoByPid), false},
      {{"rsmi_compute_process_info_by_device_get"}, slotFor(api_.processInfoByDevice), false},
  };
}

bool RocmSmiProvider::init() {
  if (!openLibrary(symbolTable(), 0)) {
    return false;
  }
  std::uint32_t count = 0;
  if (api_.numMonitorDevices(&count) != kSuccess || count == 0) {
    lastError_ = "rocm-smi found no AMD GPU";
    return false;
  }
  listDevices(count, [this](std::size_t index, DeviceInfo& info) {
    const auto i = static_cast<std::uint32_t>(index);
    char text[256] = {};
    if (api_.deviceName != nullptr && api_.deviceName(i, text, sizeof(text)) == kSuccess) {
      info.name = text;
    }
    // BDFID: domain << 32 | bus << 8 | device << 3 | function.
    std::uint64_t bdfid = 0;
    if (api_.pciId != nullptr && api_.pciId(i, &bdfid) == kSuccess) {
      info.busId = pciBusId(bdfid >> 32, bdfid >> 8, bdfid >> 3, bdfid);
    }
  });
  return true;
}

DeviceReading RocmSmiProvider::readDevice(std::uint32_t index) const {
  DeviceReading r = readMemory(index, index, {kMemTypeVram, kMemTypeVisVram, kMemTypeGtt});
  const auto percent = [&](auto fn) -> std::optional<double> {
    std::uint32_t value = 0;
    if (fn == nullptr || fn(index, &value) != kSuccess || value > 100) {
      return std::nullopt;
    }
    return static_cast<double>(value);
  };
  r.busyPercent = percent(api_.busyPercent);
  r.memoryBusyPercent = percent(api_.memoryBusyPercent);
  std::int64_t millicelsius = 0;
  if (api_.temperature != nullptr &&
      api_.temperature(index, kTempTypeEdge, kTempCurrent, &millicelsius) == kSuccess) {
    r.temperatureCelsius = static_cast<double>(millicelsius) / 1000.0;
  }
  std::uint64_t microwatts = 0;
  if ((api_.socketPower != nullptr && api_.socketPower(index, &microwatts) == kSuccess) ||
      (api_.averagePower != nullptr && api_.averagePower(index, 0, &microwatts) == kSuccess)) {
    r.powerWatts = static_cast<double>(microwatts) / 1e6;
  }
  const auto clockMhz = [&](int type) -> std::optional<double> {
    unsigned char buffer[kFrequencyBufferBytes] = {};
    if (api_.clockFrequencies == nullptr ||
        api_.clockFrequencies(index, type, buffer) != kSuccess) {
      return std::nullopt;
    }
    const std::optional<std::uint64_t> hz = decodeRsmiCurrentFrequencyHz(buffer, sizeof(buffer));
    return hz ? std::optional(static_cast<double>(*hz) / 1e6) : std::nullopt;
  };
  r.graphicsClockMhz = clockMhz(kClockTypeSys);
  r.memoryClockMhz = clockMhz(kClockTypeMem);
  return r;
}

std::vector<std::uint32_t> RocmSmiProvider::processDevices(std::uint32_t pid) const {
  std::vector<std::uint32_t> indices(devices_.size());
  std::uint32_t count = static_cast<std::uint32_t>(indices.size());
  if (api_.processGpus == nullptr || api_.processGpus(pid, indices.data(), &count) != kSuccess) {
    return {};
  }
  indices.resize(std::min<std::size_t>(count, indices.size()));
  return indices;
}

void RocmSmiProvider::readProcesses(Snapshot& out) const {
  if (api_.processInfo == nullptr) {
    return;
  }
  std::vector<ProcessInfo> listed(kMaxProcesses);
  std::uint32_t count = kMaxProcesses;
  if (api_.processInfo(listed.data(), &count) != kSuccess) {
    return;
  }
  listed.resize(std::min(count, kMaxProcesses));
  for (const ProcessInfo& entry : listed) {
    const std::vector<std::uint32_t> gpus = processDevices(entry.processId);
    const std::string processName = readProcessName(kProcRoot, entry.processId);
    // `info` is nullopt when the details could not be read: the PID is listed without numbers.
    const auto add = [&](const std::optional<ProcessInfo>& info, std::optional<int> device) {
      ProcessReading p;
      p.pid = entry.processId;
      p.name = processName;
      p.deviceIndex = device;
      if (info) {
        p.vramBytes = info->vramUsageBytes;
        p.sdmaTimeUs = info->sdmaUsageUs;
        if (info->cuOccupancyPercent <= 100) {
          p.cuOccupancyPercent = static_cast<double>(info->cuOccupancyPercent);
        }
      }
      out.processes.push_back(std::move(p));
    };
    if (api_.processInfoByDevice != nullptr && !gpus.empty()) {
      for (const std::uint32_t gpu : gpus) {
        ProcessInfo details{};
        if (api_.processInfoByDevice(entry.processId, gpu, &details) == kSuccess) {
          add(details, static_cast<int>(gpu));
        }
      }
      continue;
    }
    std::optional<ProcessInfo> info = entry;  // ROCm 6 fills the details in the list itself
    if (api_.processInfoByPid != nullptr) {
      ProcessInfo details{};  // ROCm 5 fills VRAM/SDMA/CU only per PID
      info = api_.processInfoByPid(entry.processId, &details) == kSuccess ? std::optional(details)
                                                                          : std::nullopt;
    }
    add(info, gpus.size() == 1 ? std::optional(static_cast<int>(gpus.front())) : std::nullopt);
  }
}

bool RocmSmiProvider::refresh(Snapshot& out) {
  if (!beginRefresh(out)) {
    return false;
  }
  for (std::uint32_t i = 0; i < devices_.size(); ++i) {
    out.devices.push_back(readDevice(i));
  }
  readProcesses(out);
  return true;
}

}  // namespace lorascope::telemetry
