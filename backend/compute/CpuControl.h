// CpuControl.h — the CPU backend's public knobs, for `lorascope-train bench`: its thread count,
// the OpenBLAS in use, and optional wall-clock totals per op (`bench --profile`). Off by default:
// then an op pays one relaxed atomic load. Only the outermost op on a thread counts, so the GEMMs
// inside the fused lm-head loss are part of the loss's time, not of "matmul". Implemented in
// cpu/parallel.cpp, cpu/op_times.cpp and cpu/simd.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace lorascope::compute::cpu {

// The threads CPU ops use, at least 1. Until setCpuThreads is called: OpenBLAS' setting when the
// backend first ran (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, else every core).
int cpuThreads();
// Sets the threads CPU ops use (clamped to ≥ 1). Not to be called while an op runs.
void setCpuThreads(int threads);

// The OpenBLAS library in use, for benchmark reports: its build config, core and threading model.
std::string blasDescription();

// The vector instruction set of the CPU ops' own loops (cpu/simd.h): "generic", "avx2" or
// "avx512", chosen at run time from the CPU (LORASCOPE_CPU_SIMD caps it).
const char* simdLevelInUse();

enum class CpuOp {
  Matmul,
  AttentionForward,
  AttentionBackward,
  LmHeadLoss,
  RmsNorm,
  Rope,
  Swiglu,
  Elementwise,
  Count
};
inline constexpr std::size_t kCpuOpCount = static_cast<std::size_t>(CpuOp::Count);

const char* cpuOpName(CpuOp op);

struct CpuOpTotals {
  std::array<double, kCpuOpCount> seconds{};
  std::array<std::int64_t, kCpuOpCount> calls{};
};

void setOpTimesEnabled(bool enabled);
// The totals since the last call (or since timing was enabled), then zero.
CpuOpTotals takeOpTimes();

}  // namespace lorascope::compute::cpu
