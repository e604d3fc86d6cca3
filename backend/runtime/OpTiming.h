// OpTiming.h — optional per-op GPU timing for benchmarks: while on, the launch hooks
// (hip/GpuLaunch.cpp) bracket every kernel/BLAS launch with a pair of timing events on its
// stream, keyed by the op's name; takeOpTimes() sums the elapsed times per op. The cpu flavour
// launches nothing, so there it records nothing.
//
// Off by default and then free: the hooks read one relaxed atomic flag. On, each launch costs
// two hipEventRecord calls on the host, so time steps for throughput with it off and use the
// timed steps only for the breakdown. A bracket holds what the device spent between the two
// events: the op's kernels, and the idle gap before them when the host fell behind. Work that is
// not launched through the hooks (memcpy, memset) is in no bracket.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lorascope::runtime::gpu {

// The device time of one op name, summed over its launches.
struct OpTime {
  std::string op;
  std::int64_t launches = 0;
  double milliseconds = 0.0;
};

// Switches timing on or off for the launches that follow; safe between any two launches.
void setOpTiming(bool on);
bool opTimingEnabled();

// Waits for every launch bracketed since the last call, returns their times per op name (sorted
// by name) and forgets them; the events go back to a pool. Throws std::runtime_error naming the
// HIP call that failed.
std::vector<OpTime> takeOpTimes();

}  // namespace lorascope::runtime::gpu
