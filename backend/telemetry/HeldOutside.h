// HeldOutside.h — "who holds my VRAM": the driver's used bytes minus what our allocator has
// reserved, attributed to the processes the platform lists. When nobody is listed the report
// says so plainly (the driver itself, or a process in another container / PID namespace) and
// gives what to try. Pure arithmetic on readings, so it is tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/Metrics.h"

namespace lorascope::telemetry {

// Up to this much used VRAM with no process attached is what drivers commonly keep for
// themselves (firmware, page tables, display buffers); more is worth explaining.
inline constexpr std::uint64_t kDriverOverheadBytes = std::uint64_t{512} << 20;  // 512 MiB

struct HeldOutsideInput {
  DeviceReading device;                   // the driver's view of one device
  std::vector<ProcessReading> processes;  // what the provider lists (any device)
  std::uint64_t ourReservedBytes = 0;     // our allocator's reserved bytes on this device
  // This run's processes: the engine (and, in the window, the window itself and every engine it
  // started: common::processTree). What they hold is this run's, not held by another process.
  std::vector<std::uint32_t> ourPids;
  std::string provider;  // "nvml", "rocm-smi", "amdgpu-sysfs": picks the advice
};

struct HeldBy {
  std::uint32_t pid = 0;
  std::string name;
  std::optional<std::uint64_t> bytes;  // nullopt: listed, but the platform gives no number
};

struct HeldOutsideReport {
  std::optional<std::uint64_t> driverUsedBytes;
  std::uint64_t ourReservedBytes = 0;
  std::optional<std::uint64_t> heldOutsideBytes;  // driver used − our reserved (≥ 0)
  // What the platform lists for this run's processes, and the part of it outside our allocator
  // (the runtime's context, kernels, library workspaces).
  std::optional<std::uint64_t> ourProcessListedBytes;
  std::optional<std::uint64_t> ourRuntimeOverheadBytes;
  std::vector<HeldBy> otherProcesses;              // largest first
  std::optional<std::uint64_t> unattributedBytes;  // held outside, minus everything listed
  bool nobodyElseListed = true;
  std::string summary;              // one or two plain sentences with the numbers
  std::vector<std::string> advice;  // what to try, most useful first; empty when all is explained
};

HeldOutsideReport diagnoseHeldOutside(const HeldOutsideInput& input);

}  // namespace lorascope::telemetry
