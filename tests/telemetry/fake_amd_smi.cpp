// fake_amd_smi.cpp — a fixture library for AmdSmiProvider's tests: the amdsmi_* entry points it
// calls, answering with the values of an RX 7900 XTX and an Instinct MI210 in one socket (plus a
// CPU processor the provider must skip), as amd-smi 27 (ROCm 6.4) reports them. Its types are
// AmdSmiAbi.h's, which smi_abi_check.cpp checks against the real amdsmi.h.
//   LORASCOPE_FAKE_AMDSMI_MAJOR=N   report library version N (the provider refuses unknown ones)
//   LORASCOPE_FAKE_AMDSMI_INIT=N    amdsmi_init returns status N
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "telemetry/AmdSmiAbi.h"

using namespace lorascope::telemetry::amdsmi;

namespace {

int gpuA = 0, cpu = 0, gpuB = 0;  // the processor handles are their addresses
int socket0 = 0;

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : fallback;
}

bool isGpu(Handle p) {
  return p == &gpuA || p == &gpuB;
}

}  // namespace

extern "C" {

int amdsmi_init(std::uint64_t flags) {
  return flags == kInitAmdGpus ? envInt("LORASCOPE_FAKE_AMDSMI_INIT", kSuccess) : 2;
}
int amdsmi_shut_down() {
  return kSuccess;
}
int amdsmi_get_lib_version(Version* v) {
  *v = {static_cast<std::uint32_t>(envInt("LORASCOPE_FAKE_AMDSMI_MAJOR", 27)), 1, 0, "fake"};
  return kSuccess;
}
int amdsmi_status_code_to_string(int status, const char** text) {
  *text = status == 8 ? "AMDSMI_STATUS_NO_PERM - Permission Denied" : "AMDSMI_STATUS_UNKNOWN";
  return kSuccess;
}
int amdsmi_get_socket_handles(std::uint32_t* count, Handle* sockets) {
  if (sockets != nullptr && *count >= 1) {
    sockets[0] = &socket0;
  }
  *count = 1;
  return kSuccess;
}
int amdsmi_get_processor_handles(Handle socket, std::uint32_t* count, Handle* processors) {
  if (socket != &socket0) {
    return 2;
  }
  if (processors != nullptr) {
    Handle all[3] = {&gpuA, &cpu, &gpuB};
    std::memcpy(processors, all, sizeof(Handle) * std::min<std::uint32_t>(*count, 3));
  }
  *count = 3;
  return kSuccess;
}
int amdsmi_get_processor_type(Handle p, int* type) {
  *type = isGpu(p) ? kProcessorTypeAmdGpu : 2;  // AMDSMI_PROCESSOR_TYPE_AMD_CPU
  return kSuccess;
}
int amdsmi_get_gpu_memory_total(Handle p, int type, std::uint64_t* bytes) {
  if (!isGpu(p)) {
    return 2;
  }
  const std::uint64_t vram = p == &gpuA ? 25753026560ull : 68702699520ull;
  *bytes = type == kMemTypeVram ? vram : type == kMemTypeVisVram ? vram : 33554432000ull;
  return kSuccess;
}
int amdsmi_get_gpu_memory_usage(Handle p, int type, std::uint64_t* bytes) {
  if (p == &gpuB && type == kMemTypeGtt) {
    return 2;  // AMDSMI_STATUS_NOT_SUPPORTED: left n/a
  }
  *bytes = type == kMemTypeVram ? (p == &gpuA ? 3221225472ull : 1048576ull) : 16777216ull;
  return kSuccess;
}
int amdsmi_get_gpu_asic_info(Handle p, AsicInfo* info) {
  std::memset(info, 0, sizeof(*info));
  std::strcpy(info->marketName, p == &gpuA ? "AMD Radeon RX 7900 XTX" : "AMD Instinct MI210");
  return kSuccess;
}
int amdsmi_get_gpu_device_bdf(Handle p, Bdf* bdf) {
  // 0000:03:00.0 and 0001:c3:00.1 (domain << 16 | bus << 8 | device << 3 | function).
  *bdf = p == &gpuA ? (0x03ull << 8) : ((0x1ull << 16) | (0xc3ull << 8) | 0x1);
  return kSuccess;
}
int amdsmi_get_gpu_activity(Handle p, EngineUsage* usage) {
  std::memset(usage, 0, sizeof(*usage));
  usage->gfxActivity = p == &gpuA ? 97 : kNotSupported32;
  usage->umcActivity = p == &gpuA ? 41 : 0;
  return kSuccess;
}
int amdsmi_get_temp_metric(Handle p, int sensor, int metric, std::int64_t* celsius) {
  if (sensor != kTempTypeEdge || metric != kTempCurrent) {
    return 2;
  }
  *celsius = p == &gpuA ? 71 : 38;
  return kSuccess;
}
int amdsmi_get_power_info(Handle p, PowerInfo* info) {
  std::memset(info, 0, sizeof(*info));
  info->currentSocketPower = p == &gpuA ? 0 : kNotSupported32;  // RDNA3 here: only the average
  info->averageSocketPower = p == &gpuA ? 312 : 0;
  return kSuccess;
}
int amdsmi_get_clk_freq(Handle p, int type, Frequencies* f) {
  std::memset(f, 0, sizeof(*f));
  f->hasDeepSleep = true;
  if (p == &gpuB) {
    f->numSupported = 2;
    f->current = 5;  // inconsistent: must be ignored
    return kSuccess;
  }
  f->numSupported = 3;
  f->current = type == kClockTypeSys ? 2 : 1;
  const std::uint64_t sys[3] = {500000000ull, 1500000000ull, 2498000000ull};
  const std::uint64_t mem[3] = {96000000ull, 1249000000ull, 2500000000ull};
  std::memcpy(f->frequency, type == kClockTypeSys ? sys : mem, sizeof(sys));
  return kSuccess;
}
int amdsmi_get_gpu_process_list(Handle p, std::uint32_t* count, ProcInfo* list) {
  if (p != &gpuA) {
    *count = 0;
    return kSuccess;
  }
  if (*count < 2) {
    *count = 2;
    return 2;
  }
  std::memset(list, 0, sizeof(ProcInfo) * 2);
  list[0].pid = static_cast<std::uint32_t>(::getpid());  // named from /proc
  std::strcpy(list[0].name, "not-this-name");
  list[0].memoryUsage.vramMem = 2147483648ull;
  list[0].memoryUsage.gttMem = 8388608ull;
  list[0].cuOccupancy = 60;
  list[0].sdmaUsage = 1500;
  list[1].pid = 4194301;  // no such process here: named from the library's record
  std::strcpy(list[1].name, "python3");
  list[1].memoryUsage.vramMem = 1073741824ull;
  list[1].cuOccupancy = 0xffffffffu;  // not reported
  *count = 2;
  return kSuccess;
}

}  // extern "C"
