// HeldOutside.cpp — the held-outside arithmetic, its attribution and its advice.
#include "telemetry/HeldOutside.h"

#include <algorithm>

#include "common/Format.h"

namespace lorascope::telemetry {
using common::formatBytes;
namespace {

// What the provider cannot see, said with every report that uses it; "" when nothing to add.
std::string blindSpotOf(const std::string& provider) {
  if (provider == "dxgi-pdh") {
    return " On Windows the GPU counters cannot see memory the kernel-mode driver keeps for "
           "itself, and list everything inside WSL2 as the one process of its virtual machine "
           "(vmmem or vmmemWSL).";
  }
  return "";
}

std::vector<std::string> adviceFor(const std::string& provider) {
  if (provider == "dxgi-pdh") {
    return {
        "Task Manager's Details tab with the \"Dedicated GPU memory\" column shows the same "
        "per-process numbers; close the largest holders (browsers and games keep VRAM).",
        "If vmmem or vmmemWSL holds it, a WSL2 process does: `wsl --shutdown` frees it.",
        "After a crashed run or a driver timeout (TDR) the driver can keep VRAM until it "
        "restarts: Win+Ctrl+Shift+B restarts the display driver, else reboot."};
  }
  if (provider == "nvml") {
    return {
        "On the host, run `nvidia-smi --query-compute-apps=pid,process_name,used_memory "
        "--format=csv`: inside a container NVML lists only this container's processes, or "
        "none.",
        "`sudo fuser -v /dev/nvidia*` shows every process that holds the GPU open.",
        "A crashed run can leave a zombie that keeps its memory until it is reaped: look for "
        "state Z in `ps -eo pid,stat,comm`."};
  }
  return {
      "`rocm-smi --showpids` and `sudo fuser -v /dev/kfd /dev/dri/renderD*` list the "
      "processes using the GPU; run them as root to see other users' processes.",
      "Another container that shares /dev/kfd is invisible from here: check on the host.",
      "After a GPU reset or a crashed run the driver can keep VRAM until the amdgpu module "
      "is reloaded or the machine restarts."};
}

std::string bytesOrNa(const std::optional<std::uint64_t>& bytes) {
  return bytes ? formatBytes(*bytes) : "n/a";
}

}  // namespace

HeldOutsideReport diagnoseHeldOutside(const HeldOutsideInput& in) {
  HeldOutsideReport r;
  r.driverUsedBytes = in.device.vramUsedBytes;
  r.ourReservedBytes = in.ourReservedBytes;
  std::uint64_t othersListedBytes = 0;
  for (const ProcessReading& p : in.processes) {
    if (p.deviceIndex && *p.deviceIndex != in.device.index) {
      continue;
    }
    if (std::find(in.ourPids.begin(), in.ourPids.end(), p.pid) != in.ourPids.end()) {
      if (p.vramBytes)
        r.ourProcessListedBytes = r.ourProcessListedBytes.value_or(0) + *p.vramBytes;
      continue;
    }
    r.otherProcesses.push_back(HeldBy{p.pid, p.name, p.vramBytes});
    othersListedBytes += p.vramBytes.value_or(0);
  }
  r.nobodyElseListed = r.otherProcesses.empty();
  std::sort(r.otherProcesses.begin(), r.otherProcesses.end(), [](const HeldBy& a, const HeldBy& b) {
    return a.bytes.value_or(0) > b.bytes.value_or(0);
  });
  if (r.ourProcessListedBytes) {
    r.ourRuntimeOverheadBytes =
        *r.ourProcessListedBytes - std::min(*r.ourProcessListedBytes, in.ourReservedBytes);
  }
  if (!r.driverUsedBytes) {
    r.summary =
        "The driver's used VRAM could not be read (n/a), so what is held outside this run "
        "is unknown.";
    return r;
  }
  const std::uint64_t used = *r.driverUsedBytes;
  r.heldOutsideBytes = used - std::min(used, in.ourReservedBytes);
  const std::uint64_t explained = othersListedBytes + r.ourRuntimeOverheadBytes.value_or(0);
  r.unattributedBytes = *r.heldOutsideBytes - std::min(*r.heldOutsideBytes, explained);
  r.summary = "The driver reports " + formatBytes(used) + " used; this run's allocator has " +
              formatBytes(in.ourReservedBytes) + " reserved, so " +
              formatBytes(*r.heldOutsideBytes) + " are held outside this run.";
  if (in.ourReservedBytes > used) {
    r.summary +=
        " Our allocator reserves more than the driver shows used: the reading lags or "
        "belongs to another device.";
  }
  if (r.ourRuntimeOverheadBytes) {
    r.summary += " This run's processes hold " + formatBytes(*r.ourRuntimeOverheadBytes) +
                 " beyond the allocator (runtime context, kernels, library workspaces).";
  }
  if (!r.otherProcesses.empty()) {
    r.summary +=
        " Other processes listed: " + std::to_string(r.otherProcesses.size()) + ", " +
        formatBytes(othersListedBytes) + " together (largest: PID " +
        std::to_string(r.otherProcesses.front().pid) +
        (r.otherProcesses.front().name.empty() ? "" : " " + r.otherProcesses.front().name) + ", " +
        bytesOrNa(r.otherProcesses.front().bytes) + ").";
  }
  if (*r.unattributedBytes <= kDriverOverheadBytes) {
    if (r.otherProcesses.empty()) {
      r.summary += " No other process is listed; the remaining " +
                   formatBytes(*r.unattributedBytes) +
                   " is within what the driver usually keeps for itself.";
    }
    r.summary += blindSpotOf(in.provider);
    return r;
  }
  r.summary += " " + formatBytes(*r.unattributedBytes) +
               (r.otherProcesses.empty() ? " are used but no other process is listed"
                                         : " are not explained by the processes listed") +
               ": the driver itself holds them, or a process this system cannot see (another "
               "container or PID namespace, another user's process without the rights to read "
               "it)." +
               blindSpotOf(in.provider);
  r.advice = adviceFor(in.provider);
  return r;
}

}  // namespace lorascope::telemetry
