// HostProvider.cpp — /proc/meminfo and /proc/self/status into a HostReading.
#include "telemetry/HostProvider.h"

#include "telemetry/TextFiles.h"  // defines: readTextFile, parseSizeBytes, trimmed

namespace lorascope::telemetry {
namespace {

// The size after "Key:" on its own line, e.g. "MemTotal:       32768000 kB" -> bytes.
std::optional<std::uint64_t> sizeField(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && line.substr(0, colon) == key) {
      return parseSizeBytes(line.substr(colon + 1));
    }
  }
  return std::nullopt;
}

}  // namespace

HostReading parseHostMemory(std::string_view meminfo, std::string_view selfStatus) {
  HostReading r;
  r.ramTotalBytes = sizeField(meminfo, "MemTotal");
  r.ramAvailableBytes = sizeField(meminfo, "MemAvailable");
  r.swapTotalBytes = sizeField(meminfo, "SwapTotal");
  r.swapFreeBytes = sizeField(meminfo, "SwapFree");
  r.processRssBytes = sizeField(selfStatus, "VmRSS");
  return r;
}

HostProvider::HostProvider(std::filesystem::path procRoot) : procRoot_(std::move(procRoot)) {}

bool HostProvider::init() {
  Snapshot probe;
  return refresh(probe);
}

bool HostProvider::refresh(Snapshot& out) {
  const std::optional<std::string> meminfo = readTextFile(procRoot_ / "meminfo", 64 * 1024);
  const std::optional<std::string> status = readTextFile(procRoot_ / "self" / "status", 64 * 1024);
  if (!meminfo) {
    lastError_ = "cannot read " + (procRoot_ / "meminfo").string();
    out.host.reset();
    return false;
  }
  out.host = parseHostMemory(*meminfo, status.value_or(""));
  lastError_.clear();
  return true;
}

}  // namespace lorascope::telemetry
