// WindowsGpuProvider.cpp — DXGI adapters and PDH GPU counters into a Snapshot.
#include "telemetry/WindowsGpuProvider.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <stdexcept>

namespace lorascope::telemetry {
namespace {

constexpr std::uint32_t kMicrosoftVendorId = 0x1414;  // the Basic Render Driver (software)

// Reads "<prefix><number>" at the front of `text` (the number in `base`); advances past it.
template <typename T>
bool take(std::string_view& text, std::string_view prefix, T* value, int base = 10) {
  if (text.substr(0, prefix.size()) != prefix) {
    return false;
  }
  text.remove_prefix(prefix.size());
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value, base);
  if (ec != std::errc() || end == text.data()) {
    return false;
  }
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return true;
}

class SystemSource : public WindowsGpuSource {
 public:
  std::vector<common::DxgiAdapterInfo> adapters(std::string* error) override {
    return common::listDxgiAdapters(error);
  }
  bool openCounters(std::string* error) override {
    try {
      query_ = std::make_unique<common::PdhCounterQuery>(
          std::vector<std::string>(std::begin(kWindowsGpuCounters), std::end(kWindowsGpuCounters)));
      return true;
    } catch (const std::runtime_error& e) {
      *error = e.what();
      return false;
    }
  }
  bool readCounters(std::vector<std::vector<common::CounterSample>>* values,
                    std::string* error) override {
    return query_ != nullptr && query_->read(values, error);
  }
  std::string processName(std::uint32_t pid) override { return common::processImageName(pid); }

 private:
  std::unique_ptr<common::PdhCounterQuery> query_;
};

enum CounterIndex { AdapterDedicated, AdapterShared, ProcessDedicated, ProcessShared, Engine };

std::uint64_t asBytes(double value) {
  return value > 0 ? static_cast<std::uint64_t>(value) : 0;
}

}  // namespace

std::optional<GpuInstanceName> parseGpuInstanceName(std::string_view text) {
  GpuInstanceName name;
  std::uint32_t pid = 0;
  if (take(text, "pid_", &pid)) {
    name.pid = pid;
    if (!text.starts_with("_")) {
      return std::nullopt;
    }
    text.remove_prefix(1);
  }
  std::uint32_t high = 0;
  std::uint32_t low = 0;
  if (!take(text, "luid_0x", &high, 16) || !take(text, "_0x", &low, 16) ||
      !take(text, "_phys_", &name.physicalAdapter)) {
    return std::nullopt;
  }
  name.luid = (static_cast<std::uint64_t>(high) << 32) | low;
  int engine = 0;
  if (take(text, "_eng_", &engine)) {
    if (!text.starts_with("_engtype_")) {
      return std::nullopt;
    }
    name.engineType = std::string(text.substr(9));
  } else if (!text.empty()) {
    return std::nullopt;
  }
  return name;
}

std::unique_ptr<WindowsGpuSource> systemWindowsGpuSource() {
  return std::make_unique<SystemSource>();
}

WindowsGpuProvider::WindowsGpuProvider(std::unique_ptr<WindowsGpuSource> source)
    : source_(std::move(source)) {}

bool WindowsGpuProvider::init() {
  std::string error;
  std::vector<common::DxgiAdapterInfo> all = source_->adapters(&error);
  if (all.empty()) {
    lastError_ = error.empty() ? "DXGI lists no adapter" : error;
    return false;
  }
  adapters_.clear();
  devices_.clear();
  for (common::DxgiAdapterInfo& adapter : all) {
    if (adapter.software || adapter.vendorId == kMicrosoftVendorId) {
      continue;
    }
    devices_.push_back({static_cast<int>(devices_.size()), adapter.description, "", name()});
    adapters_.push_back(std::move(adapter));
  }
  if (adapters_.empty()) {
    lastError_ = "DXGI lists only the software Basic Render Driver: no GPU driver is installed";
    return false;
  }
  countersOpen_ = source_->openCounters(&countersError_);
  return true;
}

bool WindowsGpuProvider::refresh(Snapshot& out) {
  std::string error;
  const std::vector<common::DxgiAdapterInfo> now = source_->adapters(&error);
  std::vector<std::vector<common::CounterSample>> counters;
  const bool haveCounters = countersOpen_ && source_->readCounters(&counters, &countersError_) &&
                            counters.size() == std::size(kWindowsGpuCounters);
  std::map<std::uint64_t, int> indexOfLuid;
  for (const common::DxgiAdapterInfo& adapter : adapters_) {
    indexOfLuid[adapter.luid] = static_cast<int>(indexOfLuid.size());
  }
  // (luid → sum) for the adapter-wide counters; (pid, luid) → process; (luid, engine type) → sum.
  std::map<std::uint64_t, double> dedicatedUsed, sharedUsed;
  std::map<std::pair<std::uint32_t, std::uint64_t>, ProcessReading> processes;
  std::map<std::pair<std::uint64_t, std::string>, double> engineBusy;
  if (haveCounters) {
    for (int c = AdapterDedicated; c <= Engine; ++c) {
      for (const common::CounterSample& sample : counters[static_cast<std::size_t>(c)]) {
        const auto instance = parseGpuInstanceName(sample.instance);
        if (!instance || !indexOfLuid.contains(instance->luid)) {
          continue;
        }
        if (c == AdapterDedicated || c == AdapterShared) {
          (c == AdapterDedicated ? dedicatedUsed : sharedUsed)[instance->luid] += sample.value;
        } else if (c == Engine) {
          engineBusy[{instance->luid, instance->engineType}] += sample.value;
        } else if (instance->pid) {
          ProcessReading& p = processes[{*instance->pid, instance->luid}];
          p.pid = *instance->pid;
          p.deviceIndex = indexOfLuid[instance->luid];
          const std::uint64_t bytes = asBytes(sample.value);
          if (c == ProcessDedicated) {
            p.vramBytes = p.vramBytes.value_or(0) + bytes;
          } else {
            p.gttBytes = p.gttBytes.value_or(0) + bytes;
          }
        }
      }
    }
  }
  for (const common::DxgiAdapterInfo& adapter : adapters_) {
    DeviceReading r;
    r.index = indexOfLuid[adapter.luid];
    r.vramTotalBytes = adapter.dedicatedVideoMemoryBytes;
    r.gttTotalBytes = adapter.sharedSystemMemoryBytes;
    const auto current =
        std::find_if(now.begin(), now.end(), [&](const auto& a) { return a.luid == adapter.luid; });
    if (current != now.end() && current->local) {
      r.processVramBudgetBytes = current->local->budgetBytes;
      r.processVramUsageBytes = current->local->currentUsageBytes;
    }
    if (haveCounters) {
      r.vramUsedBytes = asBytes(dedicatedUsed[adapter.luid]);
      r.gttUsedBytes = asBytes(sharedUsed[adapter.luid]);
      std::optional<double> busiest;
      for (const auto& [key, percent] : engineBusy) {
        if (key.first == adapter.luid) {
          busiest = std::max(busiest.value_or(0.0), std::min(percent, 100.0));
        }
      }
      r.busyPercent = busiest;  // empty on the first sample: a rate needs two
    }
    out.devices.push_back(r);
  }
  for (auto& [key, process] : processes) {
    process.name = source_->processName(process.pid);
    out.processes.push_back(std::move(process));
  }
  lastError_ = haveCounters ? "" : "PDH GPU counters unavailable (" + countersError_ + ")";
  return true;
}

}  // namespace lorascope::telemetry
