// Metrics.cpp — the one list of metric names shared by the sampler, the CLI and JSON output.
#include "telemetry/Metrics.h"

namespace lorascope::telemetry {
namespace {

template <typename T>
std::optional<double> asDouble(const std::optional<T>& value) {
  if (!value) {
    return std::nullopt;
  }
  return static_cast<double>(*value);
}

}  // namespace

void forEachMetric(const DeviceReading& r, const MetricVisitor& visit) {
  visit("vram_total_bytes", asDouble(r.vramTotalBytes));
  visit("vram_used_bytes", asDouble(r.vramUsedBytes));
  visit("vram_reserved_bytes", asDouble(r.vramReservedBytes));
  visit("visible_vram_total_bytes", asDouble(r.visibleVramTotalBytes));
  visit("visible_vram_used_bytes", asDouble(r.visibleVramUsedBytes));
  visit("gtt_total_bytes", asDouble(r.gttTotalBytes));
  visit("gtt_used_bytes", asDouble(r.gttUsedBytes));
  visit("busy_percent", r.busyPercent);
  visit("memory_busy_percent", r.memoryBusyPercent);
  visit("temperature_celsius", r.temperatureCelsius);
  visit("power_watts", r.powerWatts);
  visit("graphics_clock_mhz", r.graphicsClockMhz);
  visit("memory_clock_mhz", r.memoryClockMhz);
  visit("process_vram_budget_bytes", asDouble(r.processVramBudgetBytes));
  visit("process_vram_usage_bytes", asDouble(r.processVramUsageBytes));
}

void forEachMetric(const HostReading& r, const MetricVisitor& visit) {
  visit("ram_total_bytes", asDouble(r.ramTotalBytes));
  visit("ram_available_bytes", asDouble(r.ramAvailableBytes));
  visit("swap_total_bytes", asDouble(r.swapTotalBytes));
  visit("swap_free_bytes", asDouble(r.swapFreeBytes));
  visit("process_rss_bytes", asDouble(r.processRssBytes));
}

}  // namespace lorascope::telemetry
