// DrmFdinfo.cpp — parsing of DRM fdinfo and the /proc walk that attributes VRAM to processes.
#include "telemetry/DrmFdinfo.h"

#include <algorithm>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "telemetry/TextFiles.h"  // defines: readTextFile, parseSizeBytes, trimmed

namespace lorascope::telemetry {
namespace {

namespace fs = std::filesystem;

// Memory keys in order of preference: the legacy amdgpu key, then the generic ones.
struct RegionValue {
  int rank = 99;  // lower wins
  std::optional<std::uint64_t> bytes;
};

void offerRegion(RegionValue& region, int rank, std::string_view value) {
  if (rank >= region.rank) {
    return;
  }
  if (const std::optional<std::uint64_t> bytes = parseSizeBytes(value)) {
    region.rank = rank;
    region.bytes = bytes;
  }
}

int memoryKeyRank(std::string_view keyPrefix) {
  if (keyPrefix == "drm-memory-") {
    return 0;
  }
  if (keyPrefix == "drm-resident-") {
    return 1;
  }
  if (keyPrefix == "drm-total-") {
    return 2;
  }
  return 99;
}

std::optional<std::uint64_t> addOptional(std::optional<std::uint64_t> sum,
                                         std::optional<std::uint64_t> value) {
  if (!value) {
    return sum;
  }
  return sum.value_or(0) + *value;
}

bool pointsAtDri(const fs::path& fdLink) {
  std::error_code error;
  const fs::path target = fs::read_symlink(fdLink, error);
  return !error && target.string().rfind("/dev/dri/", 0) == 0;
}

}  // namespace

std::optional<DrmClientUsage> parseDrmFdinfo(std::string_view text) {
  DrmClientUsage usage;
  bool haveDriver = false;
  bool haveClient = false;
  RegionValue vram;
  RegionValue gtt;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    const std::string_view key = trimmed(line.substr(0, colon));
    const std::string_view value = trimmed(line.substr(colon + 1));
    if (key == "drm-driver") {
      usage.driver = std::string(value);
      haveDriver = !value.empty();
    } else if (key == "drm-client-id") {
      const std::optional<std::uint64_t> id = parseUnsigned(value);
      haveClient = id.has_value();
      usage.clientId = id.value_or(0);
    } else if (key == "drm-pdev") {
      usage.pdev = std::string(value);
    } else if (key.rfind("drm-", 0) == 0) {
      const std::size_t dash = key.rfind('-');
      const std::string_view region = key.substr(dash + 1);
      const int rank = memoryKeyRank(key.substr(0, dash + 1));
      if (region == "vram") {
        offerRegion(vram, rank, value);
      } else if (region == "gtt") {
        offerRegion(gtt, rank, value);
      }
    }
  }
  if (!haveDriver || !haveClient) {
    return std::nullopt;
  }
  usage.vramBytes = vram.bytes;
  usage.gttBytes = gtt.bytes;
  return usage;
}

DrmScanResult scanDrmClients(const fs::path& procRoot, std::string_view driver) {
  DrmScanResult result;
  std::set<std::pair<std::string, std::uint64_t>> seenClients;  // (pdev, client id)
  std::map<std::pair<std::uint32_t, std::string>, DrmProcessUsage> rows;
  std::error_code error;
  std::vector<std::uint32_t> pids;
  for (const fs::directory_entry& entry : fs::directory_iterator(procRoot, error)) {
    if (const std::optional<std::uint64_t> pid = parseUnsigned(entry.path().filename().string());
        pid && *pid <= UINT32_MAX) {
      pids.push_back(static_cast<std::uint32_t>(*pid));
    }
  }
  std::sort(pids.begin(), pids.end());  // the lowest PID sharing a client is the one shown
  for (const std::uint32_t pid : pids) {
    const fs::path processDir = procRoot / std::to_string(pid);
    std::error_code listError;
    fs::directory_iterator fds(processDir / "fd", listError);
    if (listError) {
      ++result.unreadableProcesses;
      continue;
    }
    for (const fs::directory_entry& fd : fds) {
      if (!pointsAtDri(fd.path())) {
        continue;
      }
      const std::optional<std::string> text =
          readTextFile(processDir / "fdinfo" / fd.path().filename(), 64 * 1024);
      const std::optional<DrmClientUsage> client = text ? parseDrmFdinfo(*text) : std::nullopt;
      if (!client || client->driver != driver ||
          !seenClients.insert({client->pdev, client->clientId}).second) {
        continue;
      }
      DrmProcessUsage& row = rows[{pid, client->pdev}];
      if (row.pid == 0) {
        row.pid = pid;
        row.pdev = client->pdev;
        row.name = readProcessName(procRoot, pid);
      }
      row.vramBytes = addOptional(row.vramBytes, client->vramBytes);
      row.gttBytes = addOptional(row.gttBytes, client->gttBytes);
    }
  }
  for (auto& [key, row] : rows) {
    result.processes.push_back(std::move(row));
  }
  return result;
}

}  // namespace lorascope::telemetry
