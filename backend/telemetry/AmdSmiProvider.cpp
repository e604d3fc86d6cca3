// AmdSmiProvider.cpp — libamd_smi through a symbol table: sockets → processors (AMD GPUs only),
// device metrics and the processes on each.
#include "telemetry/AmdSmiProvider.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "telemetry/TextFiles.h"  // defines: readProcessName

namespace lorascope::telemetry {
namespace {

using namespace amdsmi;  // the constants of amdsmi.h (AmdSmiAbi.h)

constexpr std::uint32_t kMaxSockets = 64;
constexpr std::uint32_t kMaxProcesses = 1024;
const char* const kProcRoot = "/proc";

std::string formatBdf(Bdf bdf) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x",
                static_cast<unsigned>((bdf >> 16) & 0xffffffffu),
                static_cast<unsigned>((bdf >> 8) & 0xffu),
                static_cast<unsigned>((bdf >> 3) & 0x1fu), static_cast<unsigned>(bdf & 0x7u));
  return text;
}

std::optional<double> percent(std::uint32_t value) {
  return value <= 100 ? std::optional(static_cast<double>(value)) : std::nullopt;
}

}  // namespace

std::vector<std::string> AmdSmiProvider::defaultLibraryNames() {
  return {"libamd_smi.so.27", "libamd_smi.so", "/opt/rocm/lib/libamd_smi.so"};
}

AmdSmiProvider::AmdSmiProvider(std::vector<std::string> libraryNames, std::string kfdNode)
    : libraryNames_(std::move(libraryNames)), kfdNode_(std::move(kfdNode)) {}

AmdSmiProvider::~AmdSmiProvider() {
  if (initialised_ && api_.shutDown != nullptr) {
    api_.shutDown();
  }
}

std::vector<SymbolSpec> AmdSmiProvider::symbolTable() {
  return {
      {{"amdsmi_init"}, slotFor(api_.init), true},
      {{"amdsmi_shut_down"}, slotFor(api_.shutDown), true},
      {{"amdsmi_get_lib_version"}, slotFor(api_.libVersion), true},
      {{"amdsmi_get_socket_handles"}, slotFor(api_.socketHandles), true},
      {{"amdsmi_get_processor_handles"}, slotFor(api_.processorHandles), true},
      {{"amdsmi_get_gpu_memory_total"}, slotFor(api_.memoryTotal), true},
      {{"amdsmi_get_gpu_memory_usage"}, slotFor(api_.memoryUsage), true},
      {{"amdsmi_get_processor_type"}, slotFor(api_.processorType), false},
      {{"amdsmi_status_code_to_string"}, slotFor(api_.statusString), false},
      {{"amdsmi_get_gpu_asic_info"}, slotFor(api_.asicInfo), false},
      {{"amdsmi_get_gpu_device_bdf"}, slotFor(api_.deviceBdf), false},
      {{"amdsmi_get_gpu_activity"}, slotFor(api_.activity), false},
      {{"amdsmi_get_temp_metric"}, slotFor(api_.temperature), false},
      {{"amdsmi_get_power_info"}, slotFor(api_.powerInfo), false},
      {{"amdsmi_get_clk_freq"}, slotFor(api_.clockFrequencies), false},
      {{"amdsmi_get_gpu_process_list"}, slotFor(api_.processList), false},
  };
}

std::string AmdSmiProvider::statusText(int status) const {
  const char* text = nullptr;
  if (api_.statusString != nullptr && api_.statusString(status, &text) == kSuccess &&
      text != nullptr) {
    return text;
  }
  return "amdsmi status " + std::to_string(status);
}

bool AmdSmiProvider::init() {
  load_ = library_.open(libraryNames_, symbolTable());
  if (!load_.loaded) {
    lastError_ = "amd-smi unavailable: " + load_.error;
    return false;
  }
  Version version{};
  if (api_.libVersion(&version) != kSuccess || version.major != kCheckedLibraryMajor) {
    lastError_ = "amd-smi unavailable: " + load_.libraryName + " is version " +
                 std::to_string(version.major) + "." + std::to_string(version.minor) +
                 ", whose structs were not checked (this build knows version " +
                 std::to_string(kCheckedLibraryMajor) + ", ROCm 6.4)";
    return false;
  }
  if (!std::filesystem::exists(kfdNode_)) {
    lastError_ = "no AMD compute device: " + kfdNode_ +
                 " is absent (amdgpu driver not loaded, or not passed into this container)";
    return false;
  }
  const int status = api_.init(kInitAmdGpus);
  if (status != kSuccess) {
    lastError_ = "amdsmi_init failed: " + statusText(status) +
                 " (is the amdgpu driver loaded and /dev/kfd readable?)";
    return false;
  }
  initialised_ = true;
  std::vector<Handle> sockets(kMaxSockets);
  std::uint32_t socketCount = kMaxSockets;
  if (api_.socketHandles(&socketCount, sockets.data()) != kSuccess) {
    lastError_ = "amd-smi lists no sockets";
    return false;
  }
  processors_.clear();
  for (std::uint32_t s = 0; s < std::min(socketCount, kMaxSockets); ++s) {
    std::uint32_t count = 0;
    if (api_.processorHandles(sockets[s], &count, nullptr) != kSuccess || count == 0) {
      continue;
    }
    std::vector<Handle> processors(count);
    if (api_.processorHandles(sockets[s], &count, processors.data()) != kSuccess) {
      continue;
    }
    processors.resize(std::min<std::size_t>(count, processors.size()));
    for (Handle p : processors) {
      int type = kProcessorTypeAmdGpu;
      if (api_.processorType == nullptr || api_.processorType(p, &type) != kSuccess ||
          type == kProcessorTypeAmdGpu) {
        processors_.push_back(p);
      }
    }
  }
  if (processors_.empty()) {
    lastError_ = "amd-smi found no AMD GPU";
    return false;
  }
  devices_.clear();
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    DeviceInfo info{static_cast<int>(i), "AMD GPU " + std::to_string(i), "", name()};
    AsicInfo asic{};
    if (api_.asicInfo != nullptr && api_.asicInfo(processors_[i], &asic) == kSuccess) {
      asic.marketName[kMaxStringLength - 1] = '\0';
      if (asic.marketName[0] != '\0') {
        info.name = asic.marketName;
      }
    }
    Bdf bdf = 0;
    if (api_.deviceBdf != nullptr && api_.deviceBdf(processors_[i], &bdf) == kSuccess) {
      info.busId = formatBdf(bdf);
    }
    devices_.push_back(std::move(info));
  }
  lastError_.clear();
  return true;
}

DeviceReading AmdSmiProvider::readDevice(std::size_t index) const {
  DeviceReading r;
  r.index = static_cast<int>(index);
  const Handle p = processors_[index];
  const auto memory = [&](auto fn, int type) -> std::optional<std::uint64_t> {
    std::uint64_t bytes = 0;
    return fn(p, type, &bytes) == kSuccess ? std::optional(bytes) : std::nullopt;
  };
  r.vramTotalBytes = memory(api_.memoryTotal, kMemTypeVram);
  r.vramUsedBytes = memory(api_.memoryUsage, kMemTypeVram);
  r.visibleVramTotalBytes = memory(api_.memoryTotal, kMemTypeVisVram);
  r.visibleVramUsedBytes = memory(api_.memoryUsage, kMemTypeVisVram);
  r.gttTotalBytes = memory(api_.memoryTotal, kMemTypeGtt);
  r.gttUsedBytes = memory(api_.memoryUsage, kMemTypeGtt);
  EngineUsage usage{};
  if (api_.activity != nullptr && api_.activity(p, &usage) == kSuccess) {
    r.busyPercent = percent(usage.gfxActivity);
    r.memoryBusyPercent = percent(usage.umcActivity);
  }
  std::int64_t celsius = 0;
  if (api_.temperature != nullptr &&
      api_.temperature(p, kTempTypeEdge, kTempCurrent, &celsius) == kSuccess) {
    r.temperatureCelsius = static_cast<double>(celsius);
  }
  PowerInfo power{};
  if (api_.powerInfo != nullptr && api_.powerInfo(p, &power) == kSuccess) {
    // Current socket power where the GPU reports it (RDNA3 and later), else the average.
    if (power.currentSocketPower != 0 && power.currentSocketPower != kNotSupported32) {
      r.powerWatts = static_cast<double>(power.currentSocketPower);
    } else if (power.averageSocketPower != 0 && power.averageSocketPower != kNotSupported32) {
      r.powerWatts = static_cast<double>(power.averageSocketPower);
    }
  }
  const auto clockMhz = [&](int type) -> std::optional<double> {
    Frequencies f{};
    if (api_.clockFrequencies == nullptr || api_.clockFrequencies(p, type, &f) != kSuccess ||
        f.numSupported == 0 || f.numSupported > kMaxFrequencies || f.current >= f.numSupported) {
      return std::nullopt;
    }
    return static_cast<double>(f.frequency[f.current]) / 1e6;
  };
  r.graphicsClockMhz = clockMhz(kClockTypeSys);
  r.memoryClockMhz = clockMhz(kClockTypeMem);
  return r;
}

void AmdSmiProvider::readProcesses(std::size_t index, Snapshot& out) const {
  if (api_.processList == nullptr) {
    return;
  }
  std::vector<ProcInfo> listed(kMaxProcesses);
  std::uint32_t count = kMaxProcesses;
  if (api_.processList(processors_[index], &count, listed.data()) != kSuccess) {
    return;
  }
  listed.resize(std::min(count, kMaxProcesses));
  for (const ProcInfo& entry : listed) {
    ProcessReading p;
    p.pid = entry.pid;
    p.deviceIndex = static_cast<int>(index);
    p.name = readProcessName(kProcRoot, entry.pid);
    if (p.name.empty()) {
      p.name = std::string(entry.name, strnlen(entry.name, kMaxStringLength));
    }
    p.vramBytes = entry.memoryUsage.vramMem;
    p.gttBytes = entry.memoryUsage.gttMem;
    p.sdmaTimeUs = entry.sdmaUsage;
    if (entry.cuOccupancy <= 100) {
      p.cuOccupancyPercent = static_cast<double>(entry.cuOccupancy);
    }
    out.processes.push_back(std::move(p));
  }
}

bool AmdSmiProvider::refresh(Snapshot& out) {
  out.devices.clear();
  out.processes.clear();
  if (!initialised_ || processors_.empty()) {
    lastError_ = "amd-smi is not initialised";
    return false;
  }
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    out.devices.push_back(readDevice(i));
    readProcesses(i, out);
  }
  return true;
}

}  // namespace lorascope::telemetry
