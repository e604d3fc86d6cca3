// scenario_fragmentation.cpp — prints how plain caching, max_split_size and the planned arena
// fragment the simulated device on a training run with variable sequence lengths, under both
// placements of the simulated device (contiguous address space; paged virtual memory).
//   scenario_fragmentation [steps] [device GiB]
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "FragmentationScenario.h"
#include "common/Format.h"
#include "memory/SimulatedDevice.h"

using namespace lorascope::memory;
using namespace lorascope::memory::scenario;
using lorascope::common::formatBytes;

namespace {

void printTable(const ScenarioShape& shape, std::initializer_list<AllocatorPolicy> policies) {
  std::printf(
      "\n%s device of %s, %d layers, d=%lld, sequences %lld..%lld tokens, %d steps, "
      "seed %u\n",
      shape.placement == SimulatedDevice::Placement::Paged ? "paged" : "contiguous",
      formatBytes(shape.deviceBytes).c_str(), shape.layers, static_cast<long long>(shape.hidden),
      static_cast<long long>(shape.minSequence), static_cast<long long>(shape.maxSequence),
      shape.steps, shape.seed);
  std::printf("%-8s %-10s %10s %10s %8s %8s %11s %8s %7s %7s %5s %8s\n", "mode", "max_split",
              "peak_rsv", "peak_alloc", "frag_avg", "frag_max", "cached_avg", "dev_allc", "steady",
              "retries", "ooms", "overflow");
  for (const AllocatorPolicy& policy : policies) {
    const ScenarioResult r = runScenario(shape, policy);
    const std::string split =
        policy.maxSplitBytes == kUnlimitedSplit ? "unlimited" : formatBytes(policy.maxSplitBytes);
    std::printf("%-8s %-10s %10s %10s %8.3f %8.3f %11s %8llu %7llu %7llu %5llu %8llu\n",
                modeName(policy.mode), split.c_str(), formatBytes(r.peakReservedBytes).c_str(),
                formatBytes(r.peakAllocatedBytes).c_str(), r.meanFragmentationAtPeak,
                r.maxFragmentationAtPeak,
                formatBytes(static_cast<std::size_t>(r.meanCachedFreeBytesAtPeak)).c_str(),
                static_cast<unsigned long long>(r.deviceAllocs),
                static_cast<unsigned long long>(r.steadyStateDeviceAllocs),
                static_cast<unsigned long long>(r.allocRetries),
                static_cast<unsigned long long>(r.ooms),
                static_cast<unsigned long long>(r.arenaOverflows));
  }
}

}  // namespace

int main(int argc, char** argv) {
  ScenarioShape shape;
  if (argc > 1) {
    shape.steps = std::atoi(argv[1]);
  }
  if (argc > 2) {
    shape.deviceBytes = static_cast<std::size_t>(std::atoll(argv[2])) << 30;
  }
  if (shape.steps <= 0 || shape.deviceBytes == 0) {
    std::fprintf(stderr, "usage: scenario_fragmentation [steps > 0] [device GiB > 0]\n");
    return 2;
  }
  AllocatorPolicy plain;
  AllocatorPolicy split;
  split.maxSplitBytes = std::size_t{64} << 20;
  const AllocatorPolicy arena = arenaPolicyFor(shape);
  std::printf(
      "columns: peak reserved/allocated; external fragmentation (1 - largest free block /"
      " cached free) and reserved-but-unallocated at each step's high point; device"
      " allocations in all and in the second half (steady); retries; steps lost to OOM;"
      " activation blocks that missed the arena\n");
  for (const auto placement :
       {SimulatedDevice::Placement::Contiguous, SimulatedDevice::Placement::Paged}) {
    shape.placement = placement;
    printTable(shape, {plain, split, arena});
  }
  return 0;
}
