// telemetry/AmdSmiAbi.h — the part of AMD SMI's C API (amd_smi/amdsmi.h, libamd_smi.so; AMD's
// successor to rocm-smi) that AmdSmiProvider calls, declared by hand so that the build needs no
// ROCm headers. Enum values, struct sizes and offsets and function signatures are checked at
// compile time against the real header of ROCm 6.4 (libamd_smi.so.27; tests/telemetry/
// smi_abi_check.cpp, built in CI's ROCm 6.4 chroot). Other library versions are opened only
// when they report the same major version (amdsmi_get_lib_version), since the structs may differ.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lorascope::telemetry::amdsmi {

using Handle = void*;  // amdsmi_socket_handle, amdsmi_processor_handle

constexpr std::uint32_t kCheckedLibraryMajor = 27;  // amdsmi_version_t.major of ROCm 6.4
constexpr int kSuccess = 0;                         // AMDSMI_STATUS_SUCCESS
constexpr std::uint64_t kInitAmdGpus = 1u << 1;     // AMDSMI_INIT_AMD_GPUS
constexpr int kProcessorTypeAmdGpu = 1;             // AMDSMI_PROCESSOR_TYPE_AMD_GPU
constexpr int kMemTypeVram = 0;                     // AMDSMI_MEM_TYPE_VRAM
constexpr int kMemTypeVisVram = 1;                  // AMDSMI_MEM_TYPE_VIS_VRAM
constexpr int kMemTypeGtt = 2;                      // AMDSMI_MEM_TYPE_GTT
constexpr int kTempTypeEdge = 0;                    // AMDSMI_TEMPERATURE_TYPE_EDGE
constexpr int kTempCurrent = 0;                     // AMDSMI_TEMP_CURRENT
constexpr int kClockTypeSys = 0;                    // AMDSMI_CLK_TYPE_SYS (graphics)
constexpr int kClockTypeMem = 4;                    // AMDSMI_CLK_TYPE_MEM
constexpr std::size_t kMaxStringLength = 256;       // AMDSMI_MAX_STRING_LENGTH
constexpr std::uint32_t kMaxFrequencies = 33;       // AMDSMI_MAX_NUM_FREQUENCIES
constexpr std::uint32_t kNotSupported32 = 0xffffffffu;

struct Version {  // amdsmi_version_t
  std::uint32_t major;
  std::uint32_t minor;
  std::uint32_t release;
  const char* build;
};

struct EngineUsage {  // amdsmi_engine_usage_t: percentages
  std::uint32_t gfxActivity;
  std::uint32_t umcActivity;
  std::uint32_t mmActivity;
  std::uint32_t reserved[13];
};

struct PowerInfo {  // amdsmi_power_info_t: watts, except the voltages (mV)
  std::uint64_t socketPower;
  std::uint32_t currentSocketPower;
  std::uint32_t averageSocketPower;
  std::uint64_t gfxVoltage;
  std::uint64_t socVoltage;
  std::uint64_t memVoltage;
  std::uint32_t powerLimit;
  std::uint32_t ubbPower;
  std::uint64_t reserved[18];
};

struct Frequencies {  // amdsmi_frequencies_t: Hz
  bool hasDeepSleep;
  std::uint32_t numSupported;
  std::uint32_t current;
  std::uint64_t frequency[kMaxFrequencies];
};

// amdsmi_asic_info_t: only the market name (its first field) is read; the rest is kept opaque at
// the header's size.
constexpr std::size_t kAsicInfoBytes = 896;
struct AsicInfo {
  char marketName[kMaxStringLength];
  unsigned char rest[kAsicInfoBytes - kMaxStringLength];
};

struct ProcInfo {  // amdsmi_proc_info_t: bytes, nanoseconds of engine time, microseconds of SDMA
  char name[kMaxStringLength];
  std::uint32_t pid;
  std::uint64_t mem;
  struct {
    std::uint64_t gfx;
    std::uint64_t enc;
    std::uint32_t reserved[12];
  } engineUsage;
  struct {
    std::uint64_t gttMem;
    std::uint64_t cpuMem;
    std::uint64_t vramMem;
    std::uint32_t reserved[10];
  } memoryUsage;
  char containerName[kMaxStringLength];
  std::uint32_t cuOccupancy;
  std::uint32_t evictedTime;
  std::uint64_t sdmaUsage;
  std::uint32_t reserved[8];
};

// amdsmi_bdf_t is a union over one uint64_t: function bits 0–2, device 3–7, bus 8–15, domain
// 16–63.
using Bdf = std::uint64_t;

// The entry points used; amdsmi_status_t and the enums are C enums (int-sized).
struct Api {
  int (*init)(std::uint64_t flags) = nullptr;
  int (*shutDown)() = nullptr;
  int (*libVersion)(Version* version) = nullptr;
  int (*socketHandles)(std::uint32_t* count, Handle* sockets) = nullptr;
  int (*processorHandles)(Handle socket, std::uint32_t* count, Handle* processors) = nullptr;
  int (*processorType)(Handle processor, int* type) = nullptr;
  int (*statusString)(int status, const char** text) = nullptr;
  int (*memoryTotal)(Handle processor, int memoryType, std::uint64_t* bytes) = nullptr;
  int (*memoryUsage)(Handle processor, int memoryType, std::uint64_t* bytes) = nullptr;
  int (*asicInfo)(Handle processor, AsicInfo* info) = nullptr;
  int (*deviceBdf)(Handle processor, Bdf* bdf) = nullptr;
  int (*activity)(Handle processor, EngineUsage* usage) = nullptr;
  int (*temperature)(Handle processor, int sensor, int metric, std::int64_t* celsius) = nullptr;
  int (*powerInfo)(Handle processor, PowerInfo* info) = nullptr;
  int (*clockFrequencies)(Handle processor, int clockType, Frequencies* frequencies) = nullptr;
  int (*processList)(Handle processor, std::uint32_t* count, ProcInfo* list) = nullptr;
};

}  // namespace lorascope::telemetry::amdsmi
