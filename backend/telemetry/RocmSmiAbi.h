// telemetry/RocmSmiAbi.h — the part of rocm-smi's C API (rocm_smi/rocm_smi.h) that
// RocmSmiProvider calls, declared by hand so that the build needs no ROCm headers and one binary
// runs against ROCm 5.2 to 6.4. Enum values, struct layouts and function signatures are checked
// at compile time against the real header of ROCm 6.4 (tests/telemetry/smi_abi_check.cpp, built
// in CI's ROCm 6.4 chroot).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lorascope::telemetry::rsmi {

constexpr int kSuccess = 0;                    // RSMI_STATUS_SUCCESS
constexpr int kMemTypeVram = 0;                // RSMI_MEM_TYPE_VRAM
constexpr int kMemTypeVisVram = 1;             // RSMI_MEM_TYPE_VIS_VRAM
constexpr int kMemTypeGtt = 2;                 // RSMI_MEM_TYPE_GTT
constexpr std::uint32_t kTempTypeEdge = 0;     // RSMI_TEMP_TYPE_EDGE
constexpr int kTempCurrent = 0;                // RSMI_TEMP_CURRENT
constexpr int kClockTypeSys = 0;               // RSMI_CLK_TYPE_SYS
constexpr int kClockTypeMem = 4;               // RSMI_CLK_TYPE_MEM
constexpr std::uint32_t kMaxFrequencies = 33;  // RSMI_MAX_NUM_FREQUENCIES (32 before ROCm 6.x)
// rsmi_frequencies_t: ROCm 5 {u32 num_supported; u32 current; u64 frequency[32]} (264 bytes);
// ROCm 6 {bool has_deep_sleep; u32 num_supported; u32 current; u64 frequency[33]} (280 bytes).
// Read into a buffer big enough for either and decoded by layout (decodeRsmiCurrentFrequencyHz).
constexpr std::size_t kFrequencyBufferBytes = 512;
constexpr std::size_t kRocm6FrequencyCountOffset = 4;
constexpr std::size_t kRocm6FrequencyArrayOffset = 16;

// rsmi_process_info_t (unchanged from ROCm 5.2 to 6.4).
struct ProcessInfo {
  std::uint32_t processId;
  std::uint32_t pasid;
  std::uint64_t vramUsageBytes;
  std::uint64_t sdmaUsageUs;
  std::uint32_t cuOccupancyPercent;
};

// The entry points used; rsmi_status_t and the enums are C enums (int-sized).
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
  int (*processInfoByDevice)(std::uint32_t pid, std::uint32_t device, ProcessInfo* info) = nullptr;
};

}  // namespace lorascope::telemetry::rsmi
