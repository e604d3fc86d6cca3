// parity/BenchTiming.h — the timing loop of the GPU op benchmarks (bench_attention, bench_gemm).
#pragma once

#include <chrono>

#include "compute/Backend.h"

namespace lorascope::parity {

// Mean wall time of `iterations` calls after two warm-up calls, the stream drained around them.
template <typename Op>
double millisecondsPerCall(compute::Backend& gpu, int iterations, Op op) {
  op();
  op();
  gpu.synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    op();
  }
  gpu.synchronize();
  const std::chrono::duration<double, std::milli> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / iterations;
}

}  // namespace lorascope::parity
