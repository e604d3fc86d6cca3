// cpu/parallel.h — a plain parallel-for for the CPU ops that OpenBLAS does not run (attention):
// independent items on as many threads as OpenBLAS is set to use, so one setting
// (openblas_set_num_threads) governs the whole CPU backend. Each item's result does not depend on
// the thread that computes it, so results are bit-identical for any thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace lorascope::compute::cpu {

// The threads CPU ops may use: OpenBLAS' current setting, at least 1.
int cpuThreads();

// Calls body(i) for every i in [0, count), spread over min(count, cpuThreads()) threads.
// body must not throw.
void parallelFor(std::int64_t count, const std::function<void(std::int64_t)>& body);

}  // namespace lorascope::compute::cpu
