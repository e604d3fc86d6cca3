// RocmSmiProvider.cpp — librocm_smi64 through a symbol table: device metrics and KFD processes.
#include "telemetry/RocmSmiProvider.h"
#include "common/Platform.h"  // defines: kOsFamily

#include <cstdio>
#include <cstring>
#include <filesystem>

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

// "0000:03:00.0" from rocm-smi's BDFID (domain << 32 | bus << 8 | device << 3 | function).
std::string formatBdf(std::uint64_t bdfid) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x",
                static_cast<unsigned>((bdfid >> 32) & 0xffffffffu),
                static_cast<unsigned>((bdfid >> 8) & 0xffu),
                static_cast<unsigned>((bdfid >> 3) & 0x1fu), static_cast<unsigned>(bdfid & 0x7u));
  return text;
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
    : libraryNames_(std::move(libraryNames)) {}

RocmSmiProvider::~RocmSmiProvider() {
  if (initialised_ && api_.shutDown != nullptr) {
    api_.shutDown();
  }
}

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

std::string RocmSmiProvider::statusText(int status) const {
  const char* text = nullptr;
  if (api_.statusString != nullptr && api_.statusString(status, &text) == kSuccess &&
      text != nullptr) {
    return text;
  }
  return "rsmi status " + std::to_string(status);
}

bool RocmSmiProvider::init() {
  load_ = library_.open(libraryNames_, symbolTable());
  if (!load_.loaded) {
    lastError_ = "rocm-smi unavailable: " + load_.error;
    return false;
  }
  // Without the KFD device node rsmi_init can only fail, and ROCm 5 prints its exception to the
  // terminal on the way; a missing node is the plain answer.
  if (!std::filesystem::exists(kKfdNode)) {
    lastError_ = std::string("no AMD compute device: ") + kKfdNode +
                 " is absent (amdgpu driver not loaded, or not passed into this container)";
    return false;
  }
  const int status = api_.init(0);
  if (status != kSuccess) {
    lastError_ = "rsmi_init failed: " + statusText(status) +
                 " (is the amdgpu driver loaded and /dev/kfd readable?)";
    return false;
  }
  initialised_ = true;
  std::uint32_t count = 0;
  if (api_.numMonitorDevices(&count) != kSuccess || count == 0) {
    lastError_ = "rocm-smi found no AMD GPU";
    return false;
  }
  devices_.clear();
  for (std::uint32_t i = 0; i < count; ++i) {
    DeviceInfo info{static_cast<int>(i), "AMD GPU " + std::to_string(i), "", name()};
    char text[256] = {};
    if (api_.deviceName != nullptr && api_.deviceName(i, text, sizeof(text)) == kSuccess) {
      info.name = text;
    }
    std::uint64_t bdfid = 0;
    if (api_.pciId != nullptr && api_.pciId(i, &bdfid) == kSuccess) {
      info.busId = formatBdf(bdfid);
    }
    devices_.push_back(std::move(info));
  }
  lastError_.clear();
  return true;
}

DeviceReading RocmSmiProvider::readDevice(std::uint32_t index) const {
  DeviceReading r;
  r.index = static_cast<int>(index);
  const auto memory = [&](auto fn, int type) -> std::optional<std::uint64_t> {
    std::uint64_t bytes = 0;
    return fn(index, type, &bytes) == kSuccess ? std::optional(bytes) : std::nullopt;
  };
  r.vramTotalBytes = memory(api_.memoryTotal, kMemTypeVram);
  r.vramUsedBytes = memory(api_.memoryUsage, kMemTypeVram);
  r.visibleVramTotalBytes = memory(api_.memoryTotal, kMemTypeVisVram);
  r.visibleVramUsedBytes = memory(api_.memoryUsage, kMemTypeVisVram);
  r.gttTotalBytes = memory(api_.memoryTotal, kMemTypeGtt);
  r.gttUsedBytes = memory(api_.memoryUsage, kMemTypeGtt);
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
  out.devices.clear();
  out.processes.clear();
  if (!initialised_ || devices_.empty()) {
    lastError_ = "rocm-smi is not initialised";
    return false;
  }
  for (std::uint32_t i = 0; i < devices_.size(); ++i) {
    out.devices.push_back(readDevice(i));
  }
  readProcesses(out);
  return true;
}

}  // namespace lorascope::telemetry
