// cpu/op_times.h — optional wall-clock totals per CPU op, for the benchmark's profile
// (`lorascope-train bench --profile`). Off by default: then an op pays one relaxed atomic load.
// Only the outermost op on a thread counts, so the GEMMs inside the fused lm-head loss are part
// of the loss's time, not of "matmul".
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace lorascope::compute::cpu {

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

// Times the enclosing scope as `op` when timing is enabled and no other op encloses it.
class OpTimer {
 public:
  explicit OpTimer(CpuOp op);
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  CpuOp op_;
  bool timing_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lorascope::compute::cpu
