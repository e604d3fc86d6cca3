// DrmFdinfo.h — per-process GPU memory from /proc/<pid>/fdinfo, the kernel's DRM client usage
// stats (Documentation/gpu/drm-usage-stats.rst). Works without rocm-smi; amdgpu prints
//   drm-driver:	amdgpu
//   drm-client-id:	13
//   drm-pdev:	0000:03:00.0
//   drm-memory-vram:	1048576 KiB        (Linux 5.19 .. 6.x, kept by amdgpu for compatibility)
//   drm-resident-vram:	1048576 KiB        (Linux 6.11+ generic keys; used when the above is absent)
// One client (one open of the render node) can appear under several fds and processes (dup,
// fork, fd passing): usage is counted once per (drm-pdev, drm-client-id).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::telemetry {

struct DrmClientUsage {
  std::string driver;  // "amdgpu"
  std::string pdev;    // PCI slot "0000:03:00.0", "" when not printed
  std::uint64_t clientId = 0;
  std::optional<std::uint64_t> vramBytes;
  std::optional<std::uint64_t> gttBytes;
};

// One fdinfo file's text. nullopt when it is not a DRM client (no drm-driver or drm-client-id).
std::optional<DrmClientUsage> parseDrmFdinfo(std::string_view text);

struct DrmProcessUsage {
  std::uint32_t pid = 0;
  std::string name;  // comm
  std::string pdev;
  std::optional<std::uint64_t> vramBytes;  // summed over the process's distinct clients
  std::optional<std::uint64_t> gttBytes;
};

struct DrmScanResult {
  std::vector<DrmProcessUsage> processes;  // one row per (pid, pdev), ordered by pid
  int unreadableProcesses = 0;  // fd lists we may not read (other users' processes without root)
};

// Walks <procRoot>/<pid>/fd/* whose link points at /dev/dri/ and parses the matching fdinfo.
// Only clients of `driver` are kept.
DrmScanResult scanDrmClients(const std::filesystem::path& procRoot, std::string_view driver);

}  // namespace lorascope::telemetry
