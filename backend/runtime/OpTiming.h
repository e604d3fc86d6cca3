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

// Files the launches this thread makes while it lives under "scope/op", so that the GEMMs a fused
// op runs through matmul count as that op's time ("lm_head_cross_entropy/matmul"). Scopes nest;
// the innermost names the launch. `name` must be a string literal. Costs a thread-local store.
class OpTimingScope {
 public:
  explicit OpTimingScope(const char* name);
  ~OpTimingScope();
  OpTimingScope(const OpTimingScope&) = delete;
  OpTimingScope& operator=(const OpTimingScope&) = delete;

 private:
  const char* previous_;
};
// The innermost OpTimingScope's name on this thread, or nullptr.
const char* currentOpTimingScope();

// Waits for every launch bracketed since the last call, returns their times per op name (sorted
// by name) and forgets them; the events go back to a pool. Throws std::runtime_error naming the
// HIP call that failed.
std::vector<OpTime> takeOpTimes();

}  // namespace lorascope::runtime::gpu
