// cpu/parallel.cpp — parallelFor over std::thread: item i goes to thread i mod threads (a fixed
// assignment; the attention items are equal in cost).
#include "compute/cpu/parallel.h"

#include <algorithm>
#include <thread>
#include <vector>

#include <cblas.h>  // defines: openblas_get_num_threads

namespace lorascope::compute::cpu {

int cpuThreads() {
  return std::max(1, openblas_get_num_threads());
}

void parallelFor(std::int64_t count, const std::function<void(std::int64_t)>& body) {
  const auto threads = static_cast<std::int64_t>(std::min<std::int64_t>(cpuThreads(), count));
  if (threads <= 1) {
    for (std::int64_t i = 0; i < count; ++i) {
      body(i);
    }
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  auto run = [&](std::int64_t first) {
    for (std::int64_t i = first; i < count; i += threads) {
      body(i);
    }
  };
  for (std::int64_t t = 1; t < threads; ++t) {
    workers.emplace_back(run, t);
  }
  run(0);
  for (std::thread& w : workers) {
    w.join();
  }
}

}  // namespace lorascope::compute::cpu
