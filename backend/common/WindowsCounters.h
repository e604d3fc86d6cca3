// common/WindowsCounters.h — what Windows tells about GPUs and memory without a vendor library:
// the DXGI adapters with this process's video-memory budget and usage
// (IDXGIAdapter3::QueryVideoMemoryInfo), PDH counter arrays (the "GPU Engine", "GPU Adapter
// Memory" and "GPU Process Memory" sets that Task Manager reads), GlobalMemoryStatusEx, and a
// process's image name. WindowsCountersWin32.cpp asks the system; WindowsCountersPosix.cpp
// answers that these exist on Windows only. telemetry/WindowsGpuProvider reads them through an
// injectable source, so tests feed it recorded answers instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lorascope::common {

// DXGI_QUERY_VIDEO_MEMORY_INFO: this process's view of one memory segment group.
struct VideoMemoryInfo {
  std::uint64_t budgetBytes = 0;  // what the OS lets this process use now
  std::uint64_t currentUsageBytes = 0;
  std::uint64_t availableForReservationBytes = 0;
  std::uint64_t currentReservationBytes = 0;
};

// DXGI_ADAPTER_DESC1 plus QueryVideoMemoryInfo.
struct DxgiAdapterInfo {
  std::string description;     // "AMD Radeon RX 7900 XTX"
  std::uint32_t vendorId = 0;  // PCI: 0x1002 AMD, 0x10DE NVIDIA, 0x8086 Intel, 0x1414 Microsoft
  std::uint32_t deviceId = 0;
  std::uint64_t luid = 0;  // (HighPart << 32) | LowPart: how PDH's instance names name it
  std::uint64_t dedicatedVideoMemoryBytes = 0;
  std::uint64_t dedicatedSystemMemoryBytes = 0;
  std::uint64_t sharedSystemMemoryBytes = 0;
  bool software = false;                    // DXGI_ADAPTER_FLAG_SOFTWARE (the Basic Render Driver)
  std::optional<VideoMemoryInfo> local;     // the adapter's own memory (VRAM)
  std::optional<VideoMemoryInfo> nonLocal;  // system memory it maps; nullopt: no IDXGIAdapter3
};

// Every adapter DXGI enumerates; empty with *error when DXGI cannot be asked.
std::vector<DxgiAdapterInfo> listDxgiAdapters(std::string* error);

struct CounterSample {
  std::string instance;  // "pid_1234_luid_0x00000000_0x0000D4B4_phys_0_eng_0_engtype_3D"
  double value = 0;
};

// A PDH query over counter paths in English ("\\GPU Engine(*)\\Utilization Percentage"), kept
// open between reads: rate counters (utilisation) need two samples, so the first read of a rate
// counter gives no values.
class PdhCounterQuery {
 public:
  // Throws std::runtime_error naming the counter when PDH refuses it (no GPU counters: Windows
  // before 10 1709, or PDH absent).
  explicit PdhCounterQuery(const std::vector<std::string>& counterPaths);
  ~PdhCounterQuery();
  PdhCounterQuery(const PdhCounterQuery&) = delete;
  PdhCounterQuery& operator=(const PdhCounterQuery&) = delete;

  // One sample: for each counter path (in order), every instance's value. False with *error when
  // the sample cannot be taken.
  bool read(std::vector<std::vector<CounterSample>>* values, std::string* error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// GlobalMemoryStatusEx.
struct MemoryStatus {
  std::uint64_t totalPhysicalBytes = 0;
  std::uint64_t availablePhysicalBytes = 0;
  std::uint64_t commitLimitBytes = 0;  // ullTotalPageFile: RAM plus paging files
  std::uint64_t commitAvailableBytes = 0;
};
std::optional<MemoryStatus> globalMemoryStatus(std::string* error);

// This process's working set now (GetProcessMemoryInfo), nullopt where not told.
std::optional<std::uint64_t> currentWorkingSetBytes();

// The executable's file name of process `pid` ("python.exe"), "" when it cannot be read (gone,
// or another user's without the rights).
std::string processImageName(std::uint32_t pid);

}  // namespace lorascope::common
