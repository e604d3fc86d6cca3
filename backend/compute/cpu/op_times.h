// cpu/op_times.h — the timer the CPU ops open, feeding the per-op totals of compute/CpuControl.h
// (`lorascope-train bench --profile`).
#pragma once

#include <chrono>

#include "compute/CpuControl.h"  // defines: CpuOp, setOpTimesEnabled, takeOpTimes

namespace lorascope::compute::cpu {

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
