// group/RankPlan.cpp — the GPU list, the ranks' shares of a step and their duties.
#include "group/RankPlan.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>

#include "common/Format.h"  // defines: trimBlanks

namespace lorascope::group {
namespace {

std::string machineHas(int available) {
  return available == 1 ? "this machine has 1 GPU (0)"
                        : "this machine has " + std::to_string(available) + " GPUs (0-" +
                              std::to_string(available - 1) + ")";
}

}  // namespace

std::vector<int> parseGpuList(std::string_view text, int available) {
  const std::string_view list = common::trimBlanks(text);
  const std::string quoted = "--gpus \"" + std::string(text) + "\"";
  if (available < 1) {
    throw std::invalid_argument(quoted + ": no GPU was found, so no GPU can be used");
  }
  if (list == "all") {
    std::vector<int> all(static_cast<std::size_t>(available));
    for (int i = 0; i < available; ++i) {
      all[static_cast<std::size_t>(i)] = i;
    }
    return all;
  }
  if (list.empty()) {
    throw std::invalid_argument(quoted + ": name the GPUs, e.g. 0,1, or all");
  }
  std::vector<int> devices;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view word = common::trimBlanks(list.substr(start, comma - start));
    int index = -1;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), index);
    if (word.empty() || error != std::errc() || end != word.data() + word.size() || index < 0) {
      throw std::invalid_argument(quoted + ": \"" + std::string(word) +
                                  "\" is not a GPU index (0, 1, ...); use e.g. 0,1 or all");
    }
    if (index >= available) {
      throw std::invalid_argument(quoted + ": GPU " + std::to_string(index) + " does not exist; " +
                                  machineHas(available));
    }
    if (std::find(devices.begin(), devices.end(), index) != devices.end()) {
      throw std::invalid_argument(quoted + ": GPU " + std::to_string(index) +
                                  " is named twice; each GPU runs one rank");
    }
    devices.push_back(index);
    start = comma + 1;
  }
  return devices;
}

std::string gpuListText(const std::vector<int>& devices) {
  std::string text;
  for (int d : devices) {
    text += (text.empty() ? "" : ",") + std::to_string(d);
  }
  return text;
}

std::string normalGpuList(std::string_view text) {
  const std::string_view list = common::trimBlanks(text);
  if (list.empty() || list == "all") {
    return std::string(list);
  }
  return gpuListText(parseGpuList(text, std::numeric_limits<int>::max()));
}

RankShare shareOfRank(std::int64_t microBatches, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " is outside a group of " +
                                std::to_string(size));
  }
  if (microBatches < 0) {
    throw std::invalid_argument("a step of " + std::to_string(microBatches) + " micro-batches");
  }
  const std::int64_t first = microBatches * rank / size;
  const std::int64_t end = microBatches * (rank + 1) / size;
  return {first, end - first};
}

RankDuties dutiesOf(int rank) {
  RankDuties duties;
  const bool first = rank == 0;
  duties.writesRunDirectory = first;
  duties.writesCheckpoints = first;
  duties.writesStateMirror = first;
  duties.reportsSteps = first;
  duties.reportsTelemetry = true;
  return duties;
}

}  // namespace lorascope::group
