// cpu/op_times.cpp — per-op totals behind a mutex (ops run one at a time per backend; the lock
// only keeps concurrent backends, e.g. in tests, from tearing the sums).
#include "compute/cpu/op_times.h"

#include <atomic>
#include <mutex>

#include "common/EnumNames.h"

namespace lorascope::compute::cpu {
namespace {

std::atomic<bool> gEnabled{false};
std::mutex gMutex;
CpuOpTotals gTotals;
thread_local int tDepth = 0;  // ops enclosing the current one on this thread

}  // namespace

constexpr common::EnumName<CpuOp> kCpuOpNames[] = {{CpuOp::Matmul, "matmul"},
                                                   {CpuOp::AttentionForward, "attention fwd"},
                                                   {CpuOp::AttentionBackward, "attention bwd"},
                                                   {CpuOp::LmHeadLoss, "lm-head + CE"},
                                                   {CpuOp::RmsNorm, "rmsnorm"},
                                                   {CpuOp::Rope, "rope"},
                                                   {CpuOp::Swiglu, "swiglu"},
                                                   {CpuOp::Elementwise, "add/multiply"}};
static_assert(common::coversEnum(kCpuOpNames) && std::size(kCpuOpNames) == kCpuOpCount,
              "kCpuOpNames names every CpuOp in order");

const char* cpuOpName(CpuOp op) {
  return common::enumName(kCpuOpNames, op);
}

void setOpTimesEnabled(bool enabled) {
  gEnabled.store(enabled, std::memory_order_relaxed);
}

CpuOpTotals takeOpTimes() {
  const std::lock_guard lock(gMutex);
  const CpuOpTotals out = gTotals;
  gTotals = {};
  return out;
}

OpTimer::OpTimer(CpuOp op) : op_(op) {
  if (tDepth++ == 0 && gEnabled.load(std::memory_order_relaxed)) {
    timing_ = true;
    start_ = std::chrono::steady_clock::now();
  }
}

OpTimer::~OpTimer() {
  --tDepth;
  if (!timing_) {
    return;
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
  const std::lock_guard lock(gMutex);
  const auto i = static_cast<std::size_t>(op_);
  gTotals.seconds[i] += elapsed.count();
  ++gTotals.calls[i];
}

}  // namespace lorascope::compute::cpu
