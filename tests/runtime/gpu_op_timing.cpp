// gpu_op_timing.cpp — on the real GPU (Qt-free, label gpu; exit 77 = no GPU): per-op timing of
// the launch hooks. Off, nothing is recorded; on, every launch of every op is counted under its
// name, each op's device time is positive and their sum fits inside the host's wall-clock time
// of the same work; a second take starts from zero; scopes file launches under "scope/op";
// switching it off stops the recording.
#include <chrono>
#include <cstdio>
#include <vector>

#include "GpuOrSkip.h"
#include "compute/Backend.h"
#include "runtime/OpTiming.h"

using namespace lorascope;
namespace gpu = runtime::gpu;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  failures += ok ? 0 : 1;
}

const gpu::OpTime* find(const std::vector<gpu::OpTime>& times, const char* op) {
  for (const gpu::OpTime& t : times) {
    if (t.op == op) {
      return &t;
    }
  }
  return nullptr;
}

}  // namespace

int main() {
  const std::unique_ptr<compute::Backend> backend = test::gpuOrSkip("gpu_op_timing");
  if (!backend) {
    return test::kSkipExitCode;
  }
  constexpr std::int64_t kRows = 8192;
  constexpr std::int64_t kDim = 4096;
  constexpr int kForwards = 30;
  constexpr int kBackwards = 20;
  const std::vector<float> values(static_cast<std::size_t>(kRows * kDim), 0.5f);
  const compute::Tensor x = backend->upload(values, compute::DType::BF16, {kRows, kDim});
  const compute::Tensor w =
      backend->upload(std::vector<float>(kDim, 1.0f), compute::DType::BF16, {kDim});
  compute::Tensor y = backend->empty(compute::DType::BF16, {kRows, kDim});
  compute::Tensor dx = backend->empty(compute::DType::BF16, {kRows, kDim});
  compute::Tensor rstd = backend->empty(compute::DType::F32, {kRows});
  const auto work = [&] {
    for (int i = 0; i < kForwards; ++i) {
      backend->rmsnormForward(x, w, 1e-5f, y, rstd);
    }
    for (int i = 0; i < kBackwards; ++i) {
      backend->rmsnormBackward(y, x, w, rstd, dx, false);
    }
  };

  work();  // warm-up, timing off
  backend->synchronize();
  expect(!gpu::opTimingEnabled(), "timing is off by default");
  expect(gpu::takeOpTimes().empty(), "launches made with timing off are not recorded");

  gpu::setOpTiming(true);
  const auto start = std::chrono::steady_clock::now();
  work();
  backend->synchronize();
  const double wallMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::vector<gpu::OpTime> times = gpu::takeOpTimes();
  const gpu::OpTime* forward = find(times, "rmsnorm_forward");
  const gpu::OpTime* backward = find(times, "rmsnorm_backward");
  expect(times.size() == 2 && forward != nullptr && backward != nullptr,
         "two ops recorded, under their launch names");
  if (forward != nullptr && backward != nullptr) {
    std::printf("  rmsnorm_forward  %lld launches %8.3f ms\n",
                static_cast<long long>(forward->launches), forward->milliseconds);
    std::printf("  rmsnorm_backward %lld launches %8.3f ms\n",
                static_cast<long long>(backward->launches), backward->milliseconds);
    std::printf("  host wall-clock  %8.3f ms\n", wallMs);
    expect(forward->launches == kForwards && backward->launches == kBackwards,
           "every launch is counted once");
    expect(forward->milliseconds > 0 && backward->milliseconds > 0,
           "each op has a positive device time");
    expect(forward->milliseconds + backward->milliseconds <= wallMs,
           "the ops' device time fits inside the wall-clock time of the same work");
    // Each launch reads and writes 64 MiB: a microsecond-scale bracket would mean the events
    // did not surround the kernels.
    expect(forward->milliseconds / kForwards > 0.005, "a bracket holds its kernel's run time");
  }
  expect(gpu::takeOpTimes().empty(), "a second take starts from zero");

  {
    const gpu::OpTimingScope outer("fused");
    backend->rmsnormForward(x, w, 1e-5f, y, rstd);
    {
      const gpu::OpTimingScope inner("inner");
      backend->rmsnormForward(x, w, 1e-5f, y, rstd);
    }
    backend->rmsnormForward(x, w, 1e-5f, y, rstd);
  }
  backend->rmsnormForward(x, w, 1e-5f, y, rstd);
  const std::vector<gpu::OpTime> scoped = gpu::takeOpTimes();
  const gpu::OpTime* inFused = find(scoped, "fused/rmsnorm_forward");
  const gpu::OpTime* inInner = find(scoped, "inner/rmsnorm_forward");
  const gpu::OpTime* outside = find(scoped, "rmsnorm_forward");
  expect(scoped.size() == 3 && inFused != nullptr && inFused->launches == 2 && inInner != nullptr &&
             inInner->launches == 1 && outside != nullptr && outside->launches == 1,
         "launches inside a scope are filed under scope/op, the innermost scope naming them");

  gpu::setOpTiming(false);
  work();
  backend->synchronize();
  expect(gpu::takeOpTimes().empty(), "switched off, launches are no longer recorded");
  return failures == 0 ? 0 : 1;
}
