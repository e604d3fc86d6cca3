// parity/BenchTiming.h — what the GPU op benchmarks (bench_attention, bench_gemm) share: the
// --iterations argument, the GPU backend or the reason to skip, and the timing loop.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "compute/Backend.h"
#include "compute/Errors.h"

namespace lorascope::parity {

// The benchmark's `--iterations N` (default 20, at least 1).
inline int benchIterations(int argc, char** argv) {
  int iterations = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--iterations") == 0) {
      iterations = std::max(1, std::atoi(argv[i + 1]));
    }
  }
  return iterations;
}

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
