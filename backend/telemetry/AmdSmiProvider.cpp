// AmdSmiProvider.cpp — libamd_smi through a symbol table: sockets → processors (AMD GPUs only),
// device metrics and the processes on each.
#include "telemetry/AmdSmiProvider.h"

#include <cstring>

#include "telemetry/TextFiles.h"  // defines: readProcessName

namespace lorascope::telemetry {
namespace {

using namespace amdsmi;  // the constants of amdsmi.h (AmdSmiAbi.h)

constexpr std::uint32_t kMaxSockets = 64;
constexpr std::uint32_t kMaxProcesses = 1024;
const char* const kProcRoot = "/proc";

std::optional<double> percent(std::uint32_t value) {
  return value <= 100 ? std::optional(static_cast<double>(value)) : std::nullopt;
}

}  // namespace

std::vector<std::string> AmdSmiProvider::defaultLibraryNames() {
  return {"libamd_smi.so.27", "libamd_smi.so", "/opt/rocm/lib/libamd_smi.so"};
}

AmdSmiProvider::AmdSmiProvider(std::vector<std::string> libraryNames, std::string kfdNode)
    : SmiProvider({"amd-smi", "amdsmi_init", "amdsmi status"}, std::move(libraryNames),
                  std::move(kfdNode)) {}

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

std::string AmdSmiProvider::versionProblem() const {
  Version version{};
  if (api_.libVersion(&version) == kSuccess && version.major == kCheckedLibraryMajor) {
    return {};
  }
  return loadResult().libraryName + " is version " + std::to_string(version.major) + "." +
         std::to_string(version.minor) + ", whose structs were not checked (this build knows " +
         "version " + std::to_string(kCheckedLibraryMajor) + ", ROCm 6.4)";
}

bool AmdSmiProvider::init() {
  if (!openLibrary(symbolTable(), kInitAmdGpus, [this] { return versionProblem(); })) {
    return false;
  }
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
  listDevices(processors_.size(), [this](std::size_t i, DeviceInfo& info) {
    AsicInfo asic{};
    if (api_.asicInfo != nullptr && api_.asicInfo(processors_[i], &asic) == kSuccess) {
      asic.marketName[kMaxStringLength - 1] = '\0';
      if (asic.marketName[0] != '\0') {
        info.name = asic.marketName;
      }
    }
    Bdf bdf = 0;  // amdsmi_bdf_t: function 3 bits, device 5, bus 8, domain 48
    if (api_.deviceBdf != nullptr && api_.deviceBdf(processors_[i], &bdf) == kSuccess) {
      info.busId = pciBusId(bdf >> 16, bdf >> 8, bdf >> 3, bdf);
    }
  });
  return true;
}

DeviceReading AmdSmiProvider::readDevice(std::size_t index) const {
  const Handle p = processors_[index];
  DeviceReading r = readMemory(index, p, {kMemTypeVram, kMemTypeVisVram, kMemTypeGtt});
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
  if (!beginRefresh(out)) {
    return false;
  }
  for (std::size_t i = 0; i < processors_.size(); ++i) {
    out.devices.push_back(readDevice(i));
    readProcesses(i, out);
  }
  return true;
}

}  // namespace lorascope::telemetry
