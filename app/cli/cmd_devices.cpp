// cli/cmd_devices.cpp — `lorascope-train devices [--json] [--watch] [--count N]
// [--interval-ms MS]`: build facts, the GPUs the HIP runtime reports, the collective library of
// several GPUs (NCCL/RCCL, loaded or why not), and live readings from the
// telemetry providers (NVML, rocm-smi, amdgpu sysfs, host) with "who holds the VRAM". --watch
// redraws like a small nvtop until Ctrl-C or for --count samples; with --json it prints one JSON
// object per sample (JSON lines). No GPU is a normal answer (exit 0).
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/Commands.h"
#include "common/Format.h"
#include "common/Platform.h"
#include "compute/BuildInfo.h"
#include "group/NcclCollective.h"  // defines: probeCollectiveLibrary
#include "job/CliArgs.h"
#include "telemetry/HeldOutside.h"  // defines: diagnoseHeldOutside
#include "telemetry/Providers.h"    // defines: openProviders
#include "telemetry/Sampler.h"

namespace lorascope::cli {
namespace {

using nlohmann::json;
namespace tel = lorascope::telemetry;

// One provider's latest data and whether it is stale.
struct Reading {
  std::shared_ptr<tel::Provider> provider;
  std::optional<tel::Snapshot> snapshot;
  std::optional<tel::ProviderStatus> status;  // only while watching
};

json optionalJson(std::optional<double> value) {
  return value ? json(*value) : json(nullptr);
}

json metricsJson(const auto& reading) {
  json out = json::object();
  tel::forEachMetric(reading, [&](const char* name, std::optional<double> v) {
    const bool isBytes = std::string_view(name).ends_with("_bytes");
    out[name] = v && isBytes ? json(static_cast<std::uint64_t>(*v)) : optionalJson(v);
  });
  return out;
}

tel::HeldOutsideReport heldOutside(const Reading& r, const tel::DeviceReading& device) {
  tel::HeldOutsideInput in;
  in.device = device;
  in.processes = r.snapshot->processes;
  in.ourReservedBytes = 0;  // `devices` runs no training: our allocator holds nothing
  in.ourPids = {common::currentProcessId()};
  in.provider = r.provider->name();
  return tel::diagnoseHeldOutside(in);
}

json telemetryJson(const tel::ProviderSet& set, const std::vector<Reading>& readings) {
  json out = {{"unavailable", json::array()},
              {"devices", json::array()},
              {"processes", json::array()},
              {"host", nullptr}};
  for (const tel::UnavailableProvider& u : set.unavailable) {
    out["unavailable"].push_back({{"provider", u.name}, {"reason", u.reason}});
  }
  for (const Reading& r : readings) {
    if (!r.snapshot) {
      continue;
    }
    const std::vector<tel::DeviceInfo> infos = r.provider->devices();
    for (const tel::DeviceReading& d : r.snapshot->devices) {
      const tel::HeldOutsideReport held = heldOutside(r, d);
      const auto i = static_cast<std::size_t>(d.index);
      out["devices"].push_back(
          {{"provider", r.provider->name()},
           {"index", d.index},
           {"name", i < infos.size() ? infos[i].name : ""},
           {"bus_id", i < infos.size() ? infos[i].busId : ""},
           {"stale", r.status ? json(r.status->stale) : json(nullptr)},
           {"metrics", metricsJson(d)},
           {"held_outside",
            {{"held_outside_bytes", held.heldOutsideBytes ? json(*held.heldOutsideBytes) : json()},
             {"unattributed_bytes",
              held.unattributedBytes ? json(*held.unattributedBytes) : json()},
             {"summary", held.summary},
             {"advice", held.advice}}}});
    }
    for (const tel::ProcessReading& p : r.snapshot->processes) {
      out["processes"].push_back({{"provider", r.provider->name()},
                                  {"pid", p.pid},
                                  {"name", p.name},
                                  {"device_index", p.deviceIndex ? json(*p.deviceIndex) : json()},
                                  {"vram_bytes", p.vramBytes ? json(*p.vramBytes) : json()},
                                  {"gtt_bytes", p.gttBytes ? json(*p.gttBytes) : json()},
                                  {"sdma_time_us", p.sdmaTimeUs ? json(*p.sdmaTimeUs) : json()},
                                  {"cu_occupancy_percent", optionalJson(p.cuOccupancyPercent)}});
    }
    if (r.snapshot->host) {
      out["host"] = metricsJson(*r.snapshot->host);
    }
  }
  return out;
}

std::string bytes(const std::optional<std::uint64_t>& value) {
  return value ? common::formatBytes(*value) : "n/a";
}

std::string number(const std::optional<double>& value, const char* unit) {
  if (!value) {
    return "n/a";
  }
  std::ostringstream text;
  text << std::fixed << std::setprecision(*value < 100 ? 1 : 0) << *value << " " << unit;
  return text.str();
}

void printDevice(std::ostream& out, const Reading& r, const tel::DeviceReading& d) {
  const std::vector<tel::DeviceInfo> infos = r.provider->devices();
  const auto i = static_cast<std::size_t>(d.index);
  out << "GPU " << d.index << "  " << (i < infos.size() ? infos[i].name : "?") << "  ["
      << r.provider->name() << (r.status && r.status->stale ? ", STALE: no fresh reading" : "")
      << "]\n";
  out << "  VRAM     " << bytes(d.vramUsedBytes) << " used of " << bytes(d.vramTotalBytes);
  if (d.vramReservedBytes) {
    out << " (driver reserved " << bytes(d.vramReservedBytes) << ")";
  }
  out << "\n  visible  " << bytes(d.visibleVramUsedBytes) << " of "
      << bytes(d.visibleVramTotalBytes) << "    GTT " << bytes(d.gttUsedBytes) << " of "
      << bytes(d.gttTotalBytes) << "\n";
  out << "  busy " << number(d.busyPercent, "%") << "  memory busy "
      << number(d.memoryBusyPercent, "%") << "  " << number(d.temperatureCelsius, "C") << "  "
      << number(d.powerWatts, "W") << "  clocks " << number(d.graphicsClockMhz, "MHz") << " / "
      << number(d.memoryClockMhz, "MHz") << "\n";
  for (const tel::ProcessReading& p : r.snapshot->processes) {
    if (!p.deviceIndex || *p.deviceIndex == d.index) {
      out << "  pid " << std::setw(7) << p.pid << "  " << std::setw(16) << std::left
          << (p.name.empty() ? "?" : p.name) << std::right << "  VRAM " << bytes(p.vramBytes)
          << (p.gttBytes ? "  GTT " + bytes(p.gttBytes) : "")
          << (p.cuOccupancyPercent ? "  CU " + number(p.cuOccupancyPercent, "%") : "") << "\n";
    }
  }
  const tel::HeldOutsideReport held = heldOutside(r, d);
  out << "  who holds the VRAM: " << held.summary << "\n";
  for (const std::string& advice : held.advice) {
    out << "    try: " << advice << "\n";
  }
}

void printText(std::ostream& out, const tel::ProviderSet& set, const std::vector<Reading>& all) {
  bool anyGpu = false;
  for (const Reading& r : all) {
    if (r.snapshot && !r.snapshot->devices.empty()) {
      anyGpu = true;
      for (const tel::DeviceReading& d : r.snapshot->devices) {
        printDevice(out, r, d);
      }
    }
    if (r.snapshot && r.snapshot->host) {
      const tel::HostReading& h = *r.snapshot->host;
      out << "host  RAM " << bytes(h.ramAvailableBytes) << " available of "
          << bytes(h.ramTotalBytes) << "  swap " << bytes(h.swapFreeBytes) << " free of "
          << bytes(h.swapTotalBytes) << "  this process " << bytes(h.processRssBytes) << "\n";
    }
  }
  if (!anyGpu) {
    out << "GPU telemetry: none\n";
  } else if (!set.unavailable.empty()) {
    out << "providers not in use:\n";
  }
  for (const tel::UnavailableProvider& u : set.unavailable) {
    out << "  " << u.name << ": " << u.reason << "\n";
  }
}

std::vector<std::shared_ptr<tel::Provider>> allProviders(const tel::ProviderSet& set) {
  std::vector<std::shared_ptr<tel::Provider>> all = set.gpu;
  if (set.host) {
    all.push_back(set.host);
  }
  return all;
}

std::optional<long> positiveOption(const job::CliArgs& args, const std::string& name) {
  const std::optional<std::string> text = args.value(name);
  if (!text) {
    return std::nullopt;
  }
  try {
    std::size_t used = 0;
    const long value = std::stol(*text, &used);
    if (used == text->size() && value > 0) {
      return value;
    }
  } catch (const std::exception&) {
  }
  throw job::UsageError("--" + name + " needs a positive whole number (got '" + *text + "')");
}

// The collective library of training on several GPUs (--gpus): NCCL or RCCL, loaded at run time.
json collectiveJson() {
  const group::CollectiveLibrary library = group::probeCollectiveLibrary();
  json out = {{"library", library.name}, {"available", library.available}};
  if (library.available) {
    out["version"] = library.version;
  } else {
    out["reason"] = library.reason;
  }
  return out;
}

std::string collectiveText() {
  const group::CollectiveLibrary library = group::probeCollectiveLibrary();
  if (library.available) {
    return "Several GPUs: " + library.name + " " + library.version + " loaded\n";
  }
  return "Several GPUs: " + library.name + " unavailable: " + library.reason + "\n";
}

json inventoryJson(const compute::GpuInventory& inventory) {
  const compute::BuildInfo& info = compute::buildInfo();
  json out = {{"version", info.version},
              {"flavour", info.flavour},
              {"gpu_targets", info.gpuTargets},
              {"runtime", inventory.runtime},
              {"devices", json::array()}};
  if (inventory.devices.empty()) {
    out["unavailable_reason"] = inventory.unavailableReason;
  }
  for (const compute::GpuDeviceInfo& d : inventory.devices) {
    out["devices"].push_back({{"index", d.index},
                              {"name", d.name},
                              {"architecture", d.architecture},
                              {"total_bytes", d.totalBytes},
                              {"compute_units", d.computeUnits},
                              {"wave_size", d.waveSize}});
  }
  out["collective"] = collectiveJson();
  return out;
}

int watch(const tel::ProviderSet& set, bool asJson, std::optional<long> count,
          std::chrono::milliseconds interval) {
  const std::vector<std::shared_ptr<tel::Provider>> providers = allProviders(set);
  tel::SamplerOptions options;
  options.interval = interval;
  tel::Sampler sampler(providers, options);
  const common::InterruptCounter interrupts;
  sampler.start();
  const bool redraw = !asJson && common::isTerminal(common::StandardStream::Output);
  for (long shown = 0; interrupts.count() == 0 && (!count || shown < *count); ++shown) {
    // Wait for a round of samples, but never longer than two intervals: a hung provider must
    // not freeze the display (it shows as STALE instead).
    sampler.waitForSamples(sampler.totalSamples() + providers.size(), 2 * interval);
    std::vector<Reading> readings;
    const std::vector<tel::ProviderStatus> statuses = sampler.status();
    for (const auto& provider : providers) {
      Reading r{provider, sampler.latest(provider->name()), std::nullopt};
      for (const tel::ProviderStatus& s : statuses) {
        if (s.provider == provider->name()) {
          r.status = s;
        }
      }
      readings.push_back(std::move(r));
    }
    if (asJson) {
      json line = telemetryJson(set, readings);
      line["sample"] = shown + 1;
      std::cout << line.dump() << std::endl;
      continue;
    }
    std::ostringstream frame;
    printText(frame, set, readings);
    std::cout << (redraw ? "\x1b[H\x1b[2J" : "\n") << "sample " << shown + 1 << " every "
              << interval.count() << " ms (Ctrl-C stops)\n"
              << frame.str() << std::flush;
  }
  sampler.stop();
  return 0;
}

}  // namespace

const job::CommandSpec& devicesCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "devices",
      .operands = "",
      .summary =
          "GPUs, live readings (VRAM, GTT, busy, temperature, power, clocks), processes and who "
          "holds "
          "the VRAM.",
      .options =
          {
              {.name = "json",
               .type = OptionType::Bool,
               .help = "Print JSON.",
               .defaultText = "false"},
              {.name = "watch",
               .type = OptionType::Bool,
               .help = "Keep reading until Ctrl-C (or --count readings).",
               .defaultText = "false"},
              {.name = "count",
               .type = OptionType::Integer,
               .help = "Readings to take, then stop (implies --watch).",
               .min = 1,
               .max = 1e9},
              {.name = "interval-ms",
               .type = OptionType::Integer,
               .help = "Time between readings (implies --watch).",
               .defaultText = "250",
               .min = 1,
               .max = 3.6e6,
               .unit = "ms"},
          },
  };
  return command;
}

int runDevices(const Args& args) {
  const job::CliArgs parsed(args, devicesCommand());
  const std::optional<long> count = positiveOption(parsed, "count");
  const std::optional<long> intervalMs = positiveOption(parsed, "interval-ms");
  const bool watching = parsed.has("watch") || count || intervalMs;
  const compute::GpuInventory inventory = compute::queryGpuInventory();
  const tel::ProviderSet set = tel::openProviders();
  if (!parsed.has("json")) {
    std::cout << compute::describeBuildAndDevices(inventory) << collectiveText();
  } else if (watching) {
    std::cout << json{{"inventory", inventoryJson(inventory)}}.dump() << std::endl;
  }
  if (watching) {
    return watch(set, parsed.has("json"), count,
                 std::chrono::milliseconds(intervalMs.value_or(250)));
  }
  std::vector<Reading> readings;
  for (const auto& provider : allProviders(set)) {
    tel::Snapshot snapshot;
    provider->refresh(snapshot);  // a failed refresh leaves its metrics n/a
    readings.push_back(Reading{provider, std::move(snapshot), std::nullopt});
  }
  if (parsed.has("json")) {
    json out = inventoryJson(inventory);
    out["telemetry"] = telemetryJson(set, readings);
    std::cout << out.dump(2) << "\n";
  } else {
    printText(std::cout, set, readings);
  }
  return 0;
}

}  // namespace lorascope::cli
