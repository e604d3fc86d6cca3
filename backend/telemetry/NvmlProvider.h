// NvmlProvider.h — NVIDIA GPUs through libnvidia-ml, opened at run time (libnvidia-ml.so.1, then
// libnvidia-ml.so). The few NVML types used are declared here from the NVML API reference;
// `_v2`/`_v3` entry points are tried before the older ones.
//
// Per device: VRAM total/used/reserved (nvmlDeviceGetMemoryInfo_v2, else v1), BAR1 as the
// CPU-visible VRAM, GPU and memory utilisation, GPU temperature, power, graphics and memory
// clocks. Per process: PID and used memory from nvmlDeviceGetComputeRunningProcesses_v3/_v2
// where the driver reports it (NVML gives host PIDs; inside a container they may not match).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/DynamicLibrary.h"
#include "telemetry/Provider.h"

namespace lorascope::telemetry {

class NvmlProvider : public Provider {
 public:
  // libnvidia-ml.so.1, libnvidia-ml.so; on Windows nvml.dll (System32 since driver 436, or
  // NVSMI's folder on older drivers).
  static std::vector<std::string> defaultLibraryNames();
  explicit NvmlProvider(std::vector<std::string> libraryNames = defaultLibraryNames());
  ~NvmlProvider() override;

  std::string name() const override { return "nvml"; }
  bool init() override;
  std::vector<DeviceInfo> devices() const override { return devices_; }
  bool refresh(Snapshot& out) override;
  std::string lastError() const override { return lastError_; }
  const LoadResult& loadResult() const { return load_; }
  const std::string& driverVersion() const { return driverVersion_; }

  // NVML's structs (nvml.h), declared here so that no NVIDIA header is needed to build.
  struct Memory {
    unsigned long long totalBytes, freeBytes, usedBytes;
  };
  struct MemoryV2 {
    unsigned int version;
    unsigned long long totalBytes, reservedBytes, freeBytes, usedBytes;
  };
  struct Bar1Memory {
    unsigned long long totalBytes, freeBytes, usedBytes;
  };
  struct Utilization {
    unsigned int gpuPercent, memoryPercent;
  };
  struct ProcessInfoV2 {  // nvmlProcessInfo_v2_t, also what the _v3 entry point fills
    unsigned int pid;
    unsigned long long usedGpuMemoryBytes;
    unsigned int gpuInstanceId, computeInstanceId;
  };

 private:
  using Device = void*;  // nvmlDevice_t, an opaque handle
  struct Api {
    int (*init)() = nullptr;
    int (*shutdown)() = nullptr;
    const char* (*errorString)(int result) = nullptr;
    int (*deviceCount)(unsigned int* count) = nullptr;
    int (*handleByIndex)(unsigned int index, Device* device) = nullptr;
    int (*deviceName)(Device device, char* name, unsigned int length) = nullptr;
    int (*driverVersion)(char* version, unsigned int length) = nullptr;
    int (*memoryInfo)(Device device, Memory* memory) = nullptr;
    int (*memoryInfoV2)(Device device, MemoryV2* memory) = nullptr;
    int (*bar1Memory)(Device device, Bar1Memory* memory) = nullptr;
    int (*utilization)(Device device, Utilization* utilization) = nullptr;
    int (*temperature)(Device device, int sensor, unsigned int* celsius) = nullptr;
    int (*powerUsage)(Device device, unsigned int* milliwatts) = nullptr;
    int (*clockInfo)(Device device, int clockType, unsigned int* mhz) = nullptr;
    int (*computeProcesses)(Device device, unsigned int* count, ProcessInfoV2* infos) = nullptr;
  };
  std::vector<SymbolSpec> symbolTable();
  std::string resultText(int result) const;
  DeviceReading readDevice(int index, Device device) const;
  void readProcesses(int index, Device device, Snapshot& out) const;

  std::vector<std::string> libraryNames_;
  DynamicLibrary library_;
  LoadResult load_;
  Api api_;
  std::vector<Device> handles_;
  std::vector<DeviceInfo> devices_;
  std::string driverVersion_;
  std::string lastError_;
  bool initialised_ = false;
};

}  // namespace lorascope::telemetry
