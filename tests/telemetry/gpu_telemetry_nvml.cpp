// gpu_telemetry_nvml.cpp — on an NVIDIA machine (label gpu, Qt-free): NVML's readings agree with
// `nvidia-smi --query-gpu=memory.total,memory.used,temperature.gpu,power.draw` within stated
// tolerances, and this process, after allocating 1 GiB through the HIP portability header,
// appears in NVML's process list with that memory (and leaves it after freeing). Also samples
// NVML through the Sampler at 4 Hz and prints the held-outside report with real numbers.
// Exit 77 = skipped (no NVML / no NVIDIA GPU), with the reason printed.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/Format.h"        // defines: formatBytes
#include "gpu/hip_portability.h"  // defines: hipMalloc, hipMemset, hipFree
#include "telemetry/HeldOutside.h"
#include "telemetry/NvmlProvider.h"
#include "telemetry/Sampler.h"

using namespace lorascope::telemetry;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr std::uint64_t kAllocationBytes = std::uint64_t{1} << 30;  // 1 GiB
// Tolerances: nvidia-smi rounds to MiB; used memory may move between the two reads; temperature
// and power are sampled at different instants (power by at least 1 W steps over ~100 ms).
constexpr double kTotalToleranceMiB = 1.0;
constexpr double kUsedToleranceMiB = 64.0;
constexpr double kTemperatureToleranceCelsius = 3.0;
constexpr double kPowerToleranceWatts = 30.0;
constexpr double kPowerToleranceFraction = 0.15;

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "PASS " : "FAIL ") << what << "\n";
  failures += ok ? 0 : 1;
}

std::vector<std::vector<std::string>> runNvidiaSmi() {
  std::vector<std::vector<std::string>> rows;
  FILE* pipe = popen(
      "nvidia-smi --query-gpu=memory.total,memory.used,temperature.gpu,power.draw "
      "--format=csv,noheader,nounits 2>/dev/null",
      "r");
  if (pipe == nullptr) {
    return rows;
  }
  char line[512];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    std::vector<std::string> fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, ',')) {
      fields.push_back(field);
    }
    if (fields.size() == 4) {
      rows.push_back(fields);
    }
  }
  pclose(pipe);
  return rows;
}

// nvidia-smi prints "[N/A]" or "[Not Supported]" for what it cannot read.
std::optional<double> number(const std::string& field) {
  try {
    return std::stod(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void compare(const char* what, std::optional<double> nvml, std::optional<double> smi,
             double tolerance) {
  if (!nvml || !smi) {
    std::cout << "SKIP " << what << ": nvml " << (nvml ? std::to_string(*nvml) : "n/a")
              << ", nvidia-smi " << (smi ? std::to_string(*smi) : "n/a") << "\n";
    return;
  }
  std::ostringstream text;
  text << what << ": nvml " << *nvml << ", nvidia-smi " << *smi << " (tolerance " << tolerance
       << ")";
  check(std::fabs(*nvml - *smi) <= tolerance, text.str());
}

std::optional<double> mib(std::optional<std::uint64_t> bytes) {
  return bytes ? std::optional(static_cast<double>(*bytes) / kMiB) : std::nullopt;
}

const ProcessReading* findProcess(const Snapshot& s, std::uint32_t pid) {
  for (const ProcessReading& p : s.processes) {
    if (p.pid == pid && p.deviceIndex == 0) {
      return &p;
    }
  }
  return nullptr;
}

Snapshot refreshed(NvmlProvider& nvml) {
  Snapshot s;
  if (!nvml.refresh(s)) {
    throw std::runtime_error("NVML refresh failed: " + nvml.lastError());
  }
  return s;
}

void checkAgainstNvidiaSmi(NvmlProvider& nvml) {
  const auto smiRows = runNvidiaSmi();
  const Snapshot s = refreshed(nvml);
  check(!smiRows.empty(), "nvidia-smi printed " + std::to_string(smiRows.size()) + " GPU rows");
  check(smiRows.size() == s.devices.size(),
        "NVML lists as many GPUs as nvidia-smi (" + std::to_string(s.devices.size()) + ")");
  for (std::size_t i = 0; i < std::min(smiRows.size(), s.devices.size()); ++i) {
    const DeviceReading& d = s.devices[i];
    const auto& row = smiRows[i];
    std::cout << "GPU " << i << " (" << nvml.devices()[i].name << ")\n";
    compare("memory.total MiB", mib(d.vramTotalBytes), number(row[0]), kTotalToleranceMiB);
    compare("memory.used MiB", mib(d.vramUsedBytes), number(row[1]), kUsedToleranceMiB);
    compare("temperature.gpu C", d.temperatureCelsius, number(row[2]),
            kTemperatureToleranceCelsius);
    const double powerTolerance =
        std::max(kPowerToleranceWatts, kPowerToleranceFraction * number(row[3]).value_or(0.0));
    compare("power.draw W", d.powerWatts, number(row[3]), powerTolerance);
  }
}

void checkOwnProcessIsListed(NvmlProvider& nvml) {
  const auto ourPid = static_cast<std::uint32_t>(getpid());
  (void)hipSetDevice(0);
  (void)hipFree(nullptr);  // creates the context, so the baseline includes it
  const Snapshot before = refreshed(nvml);
  void* block = nullptr;
  if (hipMalloc(&block, kAllocationBytes) != hipSuccess ||
      hipMemset(block, 0x5a, kAllocationBytes) != hipSuccess ||
      hipDeviceSynchronize() != hipSuccess) {
    check(false, "allocate and touch 1 GiB on GPU 0");
    return;
  }
  const Snapshot during = refreshed(nvml);
  const double grewMiB = (static_cast<double>(during.devices[0].vramUsedBytes.value_or(0)) -
                          static_cast<double>(before.devices[0].vramUsedBytes.value_or(0))) /
                         kMiB;
  check(grewMiB >= 1024.0 - kUsedToleranceMiB,
        "GPU 0 used memory grew by the 1 GiB allocation (" + std::to_string(grewMiB) + " MiB)");
  std::cout << "NVML process list on GPU 0 while holding 1 GiB (our PID " << ourPid << "):\n";
  for (const ProcessReading& p : during.processes) {
    std::cout << "  pid " << p.pid << " '" << p.name << "' "
              << (p.vramBytes ? lorascope::common::formatBytes(*p.vramBytes) : "n/a") << "\n";
  }
  const ProcessReading* ours = findProcess(during, ourPid);
  check(ours != nullptr, "this process (PID " + std::to_string(ourPid) + ") is listed by NVML");
  if (ours != nullptr) {
    check(ours->vramBytes.value_or(0) >= kAllocationBytes,
          "its listed memory (" +
              (ours->vramBytes ? lorascope::common::formatBytes(*ours->vramBytes) : "n/a") +
              ") covers the 1 GiB allocation");
  }
  HeldOutsideInput in;
  in.device = during.devices[0];
  in.processes = during.processes;
  in.ourReservedBytes = kAllocationBytes;
  in.ourPids = {ourPid};
  in.provider = "nvml";
  const HeldOutsideReport report = diagnoseHeldOutside(in);
  std::cout << "held-outside report: " << report.summary << "\n";
  check(report.ourRuntimeOverheadBytes.has_value() == (ours != nullptr && ours->vramBytes),
        "held-outside report accounts for this process's runtime overhead");
  // Plain values, not optionals: GCC 12 warns (maybe-uninitialized) on the optional here.
  const bool oursListedWithBytes = ours != nullptr && ours->vramBytes.has_value();
  const std::uint64_t oursBytes = oursListedWithBytes ? *ours->vramBytes : 0;
  (void)hipFree(block);
  const Snapshot after = refreshed(nvml);
  if (oursListedWithBytes) {
    const ProcessReading* oursAfter = findProcess(after, ourPid);
    const std::uint64_t afterBytes = oursAfter != nullptr ? oursAfter->vramBytes.value_or(0) : 0;
    check(afterBytes + kAllocationBytes / 2 <= oursBytes,
          "after hipFree the listed memory dropped by the allocation (" +
              lorascope::common::formatBytes(afterBytes) + " now)");
  }
}

void checkSamplerAtFourHertz(const std::shared_ptr<NvmlProvider>& nvml) {
  Sampler sampler({nvml});  // default options: 4 Hz
  const auto start = std::chrono::steady_clock::now();
  sampler.start();
  const bool got = sampler.waitForSamples(5, std::chrono::milliseconds(5000));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sampler.stop();
  check(got, "sampler collected 5 NVML samples in " + std::to_string(seconds) + " s at 4 Hz");
  const auto history = sampler.history("nvml/0/vram_used_bytes");
  check(history.size() >= 5 && history.back().value.has_value(),
        "the nvml/0/vram_used_bytes ring holds the samples");
}

}  // namespace

int main() {
  auto nvml = std::make_shared<NvmlProvider>();
  if (!nvml->init()) {
    std::cout << "SKIPPED: " << nvml->lastError() << "\n";
    return 77;
  }
  std::cout << "NVML " << nvml->loadResult().libraryName << ", driver " << nvml->driverVersion()
            << ", " << nvml->devices().size() << " GPU(s)\n";
  for (const std::string& missing : nvml->loadResult().missingOptional) {
    std::cout << "optional NVML symbol absent: " << missing << "\n";
  }
  try {
    const auto t0 = std::chrono::steady_clock::now();
    constexpr int kTimedRefreshes = 20;
    for (int i = 0; i < kTimedRefreshes; ++i) {
      refreshed(*nvml);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "NVML refresh (all devices and processes): " << ms / kTimedRefreshes
              << " ms each (mean of " << kTimedRefreshes << ")\n";
    checkAgainstNvidiaSmi(*nvml);
    checkOwnProcessIsListed(*nvml);
    checkSamplerAtFourHertz(nvml);
  } catch (const std::exception& e) {
    check(false, e.what());
  }
  std::cout << (failures == 0 ? "all NVML checks passed" : "NVML checks failed: ")
            << (failures == 0 ? "" : std::to_string(failures)) << "\n";
  return failures == 0 ? 0 : 1;
}
