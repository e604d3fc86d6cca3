// cpu/parallel.h — the CPU backend's threads: one persistent pool that runs every parallel op
// (GEMMs split into tiles, attention items, elementwise rows), with OpenBLAS itself held at one
// thread so that its own pool never competes with ours for the cores.
//
// Each item's result does not depend on the thread that computes it (items are independent and
// computed the same way on any thread), so results are bit-identical from run to run at a given
// thread count. GEMMs are split along rows/columns only, never along the reduction, but OpenBLAS
// may pick other kernels for other tile sizes, so other thread counts may round differently.
#pragma once

#include <cstdint>
#include <functional>

#include "compute/CpuControl.h"  // defines: cpuThreads, setCpuThreads, blasDescription

namespace lorascope::compute::cpu {

// The threads a parallel call made from this thread gets: 1 inside a parallelFor body (nested
// calls run serially), else cpuThreads().
int cpuThreadsHere();

// Holds OpenBLAS at one thread for calls made from this thread (once per thread: with an OpenMP
// build of OpenBLAS the setting is per thread; with the pthread build it is global). The
// backend's GEMMs call it before each sgemm.
void keepBlasSingleThreaded();

// Calls body(i) for every i in [0, count), items handed out one at a time to min(count,
// cpuThreads()) threads (the caller included). A call made from inside a body, or while another
// thread's call is running, runs serially on the calling thread. body must not throw.
void parallelFor(std::int64_t count, const std::function<void(std::int64_t)>& body);

// Calls body(begin, end) over consecutive ranges of [0, count) of `grain` items (the last one
// shorter), in parallel as parallelFor. For elementwise loops: a range is a cache-friendly unit.
void parallelRanges(std::int64_t count, std::int64_t grain,
                    const std::function<void(std::int64_t, std::int64_t)>& body);

// Per-thread scratch buffers, kept between calls (no allocation per tile or product). Each user
// has its own slots: attention's tiles hold theirs across the sgemm calls that may need the skinny
// products' (cpu/skinny_gemm.h).
enum class ScratchSlot : std::uint8_t {
  AttentionProbabilities,
  AttentionSecond,  // the forward's inverse sums, the backward's dP then dS
  SkinnyLeft,
  SkinnyRight,
  SkinnyTransposedOutput,
};
inline constexpr int kScratchSlots = 5;

// This thread's buffer `slot`, grown to at least `floats` (its old contents are not kept).
float* threadScratch(ScratchSlot slot, std::int64_t floats);

}  // namespace lorascope::compute::cpu
