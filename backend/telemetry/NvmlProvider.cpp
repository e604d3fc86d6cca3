// NvmlProvider.cpp — libnvidia-ml through a symbol table: device metrics and compute processes.
#include "telemetry/NvmlProvider.h"
#include "common/Platform.h"  // defines: kOsFamily

#include "telemetry/TextFiles.h"  // defines: readProcessName

namespace lorascope::telemetry {
namespace {

// Constants from nvml.h.
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;                  // NVML_ERROR_INSUFFICIENT_SIZE
constexpr int kTemperatureGpu = 0;                        // NVML_TEMPERATURE_GPU
constexpr int kClockGraphics = 0;                         // NVML_CLOCK_GRAPHICS
constexpr int kClockMemory = 2;                           // NVML_CLOCK_MEM
constexpr unsigned long long kValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
// NVML_STRUCT_VERSION(Memory, 2): the struct's size with the version in the top byte.
constexpr unsigned int kMemoryV2Version =
    static_cast<unsigned int>(sizeof(NvmlProvider::MemoryV2)) | (2u << 24);
constexpr unsigned int kInitialProcessSlots = 64;
const char* const kProcRoot = "/proc";

}  // namespace

std::vector<std::string> NvmlProvider::defaultLibraryNames() {
  if (common::kOsFamily == common::OsFamily::Windows) {
    return {"nvml.dll", "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvml.dll"};
  }
  return {"libnvidia-ml.so.1", "libnvidia-ml.so"};
}

NvmlProvider::NvmlProvider(std::vector<std::string> libraryNames)
    : libraryNames_(std::move(libraryNames)) {}

NvmlProvider::~NvmlProvider() {
  if (initialised_ && api_.shutdown != nullptr) {
    api_.shutdown();
  }
}

std::vector<SymbolSpec> NvmlProvider::symbolTable() {
  return {
      {{"nvmlInit_v2", "nvmlInit"}, slotFor(api_.init), true},
      {{"nvmlShutdown"}, slotFor(api_.shutdown), true},
      {{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, slotFor(api_.deviceCount), true},
      {{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
       slotFor(api_.handleByIndex),
       true},
      {{"nvmlDeviceGetMemoryInfo"}, slotFor(api_.memoryInfo), true},
      {{"nvmlErrorString"}, slotFor(api_.errorString), false},
      {{"nvmlDeviceGetName"}, slotFor(api_.deviceName), false},
      {{"nvmlSystemGetDriverVersion"}, slotFor(api_.driverVersion), false},
      {{"nvmlDeviceGetMemoryInfo_v2"}, slotFor(api_.memoryInfoV2), false},
      {{"nvmlDeviceGetBAR1MemoryInfo"}, slotFor(api_.bar1Memory), false},
      {{"nvmlDeviceGetUtilizationRates"}, slotFor(api_.utilization), false},
      {{"nvmlDeviceGetTemperature"}, slotFor(api_.temperature), false},
      {{"nvmlDeviceGetPowerUsage"}, slotFor(api_.powerUsage), false},
      {{"nvmlDeviceGetClockInfo"}, slotFor(api_.clockInfo), false},
      {{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
       slotFor(api_.computeProcesses),
       false},
  };
}

std::string NvmlProvider::resultText(int result) const {
  if (api_.errorString != nullptr) {
    if (const char* text = api_.errorString(result)) {
      return text;
    }
  }
  return "nvml result " + std::to_string(result);
}

bool NvmlProvider::init() {
  load_ = library_.open(libraryNames_, symbolTable());
  if (!load_.loaded) {
    lastError_ = "NVML unavailable: " + load_.error;
    return false;
  }
  const int result = api_.init();
  if (result != kNvmlSuccess) {
    lastError_ = "nvmlInit failed: " + resultText(result) + " (is the NVIDIA driver loaded?)";
    return false;
  }
  initialised_ = true;
  char version[96] = {};
  if (api_.driverVersion != nullptr &&
      api_.driverVersion(version, sizeof(version)) == kNvmlSuccess) {
    driverVersion_ = version;
  }
  unsigned int count = 0;
  if (api_.deviceCount(&count) != kNvmlSuccess || count == 0) {
    lastError_ = "NVML found no NVIDIA GPU";
    return false;
  }
  handles_.clear();
  devices_.clear();
  for (unsigned int i = 0; i < count; ++i) {
    Device device = nullptr;
    if (api_.handleByIndex(i, &device) != kNvmlSuccess) {
      continue;  // e.g. a GPU the driver lost; the others still count
    }
    DeviceInfo info{static_cast<int>(handles_.size()), "NVIDIA GPU " + std::to_string(i), "",
                    name()};
    char text[96] = {};
    if (api_.deviceName != nullptr && api_.deviceName(device, text, sizeof(text)) == kNvmlSuccess) {
      info.name = text;
    }
    handles_.push_back(device);
    devices_.push_back(std::move(info));
  }
  if (handles_.empty()) {
    lastError_ = "NVML lists GPUs but none could be opened";
    return false;
  }
  lastError_.clear();
  return true;
}

DeviceReading NvmlProvider::readDevice(int index, Device device) const {
  DeviceReading r;
  r.index = index;
  MemoryV2 memoryV2{};
  memoryV2.version = kMemoryV2Version;
  Memory memory{};
  if (api_.memoryInfoV2 != nullptr && api_.memoryInfoV2(device, &memoryV2) == kNvmlSuccess) {
    r.vramTotalBytes = memoryV2.totalBytes;
    r.vramUsedBytes = memoryV2.usedBytes;
    r.vramReservedBytes = memoryV2.reservedBytes;
  } else if (api_.memoryInfo(device, &memory) == kNvmlSuccess) {
    r.vramTotalBytes = memory.totalBytes;
    r.vramUsedBytes = memory.usedBytes;
  }
  Bar1Memory bar1{};
  if (api_.bar1Memory != nullptr && api_.bar1Memory(device, &bar1) == kNvmlSuccess) {
    r.visibleVramTotalBytes = bar1.totalBytes;
    r.visibleVramUsedBytes = bar1.usedBytes;
  }
  Utilization utilization{};
  if (api_.utilization != nullptr && api_.utilization(device, &utilization) == kNvmlSuccess) {
    r.busyPercent = static_cast<double>(utilization.gpuPercent);
    r.memoryBusyPercent = static_cast<double>(utilization.memoryPercent);
  }
  unsigned int value = 0;
  if (api_.temperature != nullptr &&
      api_.temperature(device, kTemperatureGpu, &value) == kNvmlSuccess) {
    r.temperatureCelsius = static_cast<double>(value);
  }
  if (api_.powerUsage != nullptr && api_.powerUsage(device, &value) == kNvmlSuccess) {
    r.powerWatts = static_cast<double>(value) / 1000.0;  // milliwatts
  }
  if (api_.clockInfo != nullptr && api_.clockInfo(device, kClockGraphics, &value) == kNvmlSuccess) {
    r.graphicsClockMhz = static_cast<double>(value);
  }
  if (api_.clockInfo != nullptr && api_.clockInfo(device, kClockMemory, &value) == kNvmlSuccess) {
    r.memoryClockMhz = static_cast<double>(value);
  }
  return r;
}

void NvmlProvider::readProcesses(int index, Device device, Snapshot& out) const {
  if (api_.computeProcesses == nullptr) {
    return;
  }
  std::vector<ProcessInfoV2> infos(kInitialProcessSlots);
  unsigned int count = kInitialProcessSlots;
  int result = api_.computeProcesses(device, &count, infos.data());
  if (result == kNvmlInsufficientSize) {  // `count` now holds what is needed; leave headroom
    infos.resize(count + kInitialProcessSlots);
    count = static_cast<unsigned int>(infos.size());
    result = api_.computeProcesses(device, &count, infos.data());
  }
  if (result != kNvmlSuccess) {
    return;
  }
  infos.resize(std::min<std::size_t>(count, infos.size()));
  for (const ProcessInfoV2& info : infos) {
    ProcessReading p;
    p.pid = info.pid;
    p.deviceIndex = index;
    p.name = readProcessName(kProcRoot, info.pid);
    if (info.usedGpuMemoryBytes != kValueNotAvailable) {
      p.vramBytes = info.usedGpuMemoryBytes;
    }
    out.processes.push_back(std::move(p));
  }
}

bool NvmlProvider::refresh(Snapshot& out) {
  out.devices.clear();
  out.processes.clear();
  if (!initialised_ || handles_.empty()) {
    lastError_ = "NVML is not initialised";
    return false;
  }
  for (std::size_t i = 0; i < handles_.size(); ++i) {
    out.devices.push_back(readDevice(static_cast<int>(i), handles_[i]));
    readProcesses(static_cast<int>(i), handles_[i], out);
  }
  return true;
}

}  // namespace lorascope::telemetry
