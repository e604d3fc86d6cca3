// RocmSmiProvider.h — AMD GPUs through librocm_smi64, opened at run time (no build-time
// dependency on rocm_smi.h: the few types and constants used are declared in the .cpp from the
// ROCm SMI API, rocm_smi.h of ROCm 5.2 to 6.x).
//
// Per device: VRAM, CPU-visible VRAM and GTT total/used, busy %, memory busy %, edge
// temperature, power, system and memory clocks. Per process (KFD compute processes): PID, VRAM,
// SDMA time, CU occupancy.
//
// Tested here: loading with the library absent, the symbol table against the real
// librocm_smi64.so.1 of ROCm 5.2, init on a machine without an AMD GPU, and the decoding of the
// clock struct. Live values are UNTESTED: no AMD GPU is available to this project's machines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/DynamicLibrary.h"
#include "telemetry/Provider.h"

namespace lorascope::telemetry {

// rsmi_frequencies_t changed layout in ROCm 6 (a leading `bool has_deep_sleep`). Given the raw
// bytes the library filled, returns the current frequency in Hz under whichever layout is
// self-consistent (1 <= num_supported <= 32, current < num_supported), or nullopt.
std::optional<std::uint64_t> decodeRsmiCurrentFrequencyHz(const unsigned char* bytes,
                                                          std::size_t size);

class RocmSmiProvider : public Provider {
 public:
  // `libraryNames`: the file names tried in order; the default is the versioned names of ROCm
  // 7 down to 5, then the unversioned one and /opt/rocm/lib.
  explicit RocmSmiProvider(std::vector<std::string> libraryNames = defaultLibraryNames());
  ~RocmSmiProvider() override;

  static std::vector<std::string> defaultLibraryNames();

  std::string name() const override { return "rocm-smi"; }
  bool init() override;
  std::vector<DeviceInfo> devices() const override { return devices_; }
  bool refresh(Snapshot& out) override;
  std::string lastError() const override { return lastError_; }

  // After init(): the library that opened and the optional symbols it lacks (for `devices`).
  const LoadResult& loadResult() const { return load_; }

 private:
  // rocm_smi.h's process record (unchanged from ROCm 5.2 to 6.x).
  struct ProcessInfo {
    std::uint32_t processId;
    std::uint32_t pasid;
    std::uint64_t vramUsageBytes;
    std::uint64_t sdmaUsageUs;
    std::uint32_t cuOccupancyPercent;
  };
  // The entry points used; rsmi_status_t is a C enum (int). Filled from the symbol table.
  struct Api {
    int (*init)(std::uint64_t flags) = nullptr;
    int (*shutDown)() = nullptr;
    int (*numMonitorDevices)(std::uint32_t* count) = nullptr;
    int (*memoryTotal)(std::uint32_t device, int memoryType, std::uint64_t* bytes) = nullptr;
    int (*memoryUsage)(std::uint32_t device, int memoryType, std::uint64_t* bytes) = nullptr;
    int (*statusString)(int status, const char** text) = nullptr;
    int (*deviceName)(std::uint32_t device, char* name, std::size_t length) = nullptr;
    int (*pciId)(std::uint32_t device, std::uint64_t* bdfid) = nullptr;
    int (*busyPercent)(std::uint32_t device, std::uint32_t* percent) = nullptr;
    int (*memoryBusyPercent)(std::uint32_t device, std::uint32_t* percent) = nullptr;
    int (*temperature)(std::uint32_t device, std::uint32_t sensor, int metric,
                       std::int64_t* millicelsius) = nullptr;
    int (*socketPower)(std::uint32_t device, std::uint64_t* microwatts) = nullptr;
    int (*averagePower)(std::uint32_t device, std::uint32_t sensor,
                        std::uint64_t* microwatts) = nullptr;
    int (*clockFrequencies)(std::uint32_t device, int clockType, void* frequencies) = nullptr;
    int (*processInfo)(ProcessInfo* processes, std::uint32_t* count) = nullptr;
    int (*processGpus)(std::uint32_t pid, std::uint32_t* devices, std::uint32_t* count) = nullptr;
    int (*processInfoByPid)(std::uint32_t pid, ProcessInfo* info) = nullptr;
    int (*processInfoByDevice)(std::uint32_t pid, std::uint32_t device,
                               ProcessInfo* info) = nullptr;
  };
  std::vector<SymbolSpec> symbolTable();
  std::string statusText(int status) const;
  DeviceReading readDevice(std::uint32_t index) const;
  void readProcesses(Snapshot& out) const;
  std::vector<std::uint32_t> processDevices(std::uint32_t pid) const;

  std::vector<std::string> libraryNames_;
  DynamicLibrary library_;
  LoadResult load_;
  Api api_;
  std::vector<DeviceInfo> devices_;
  std::string lastError_;
  bool initialised_ = false;
};

}  // namespace lorascope::telemetry
