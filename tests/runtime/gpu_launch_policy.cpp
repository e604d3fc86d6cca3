// gpu_launch_policy.cpp — on the real GPU (Qt-free, label gpu; exit 77 = no GPU): queue depth
// rises above 1 with queued work and falls to 0; `blocking` keeps it at most 1 and `serialize` at
// 0 after every launch; injected faults fire in the launch path. Prints step times per policy.
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "GpuOrSkip.h"
#include "compute/Backend.h"
#include "runtime/LaunchControl.h"

using namespace lorascope;
using runtime::LaunchPolicy;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  failures += ok ? 0 : 1;
}

std::uint64_t totalDepth(runtime::QueueTracker& queues) {
  std::uint64_t depth = 0;
  for (const auto& s : queues.sample()) {
    depth += s.depth;
  }
  return depth;
}

struct Run {
  double stepMs = 0;
  std::uint64_t maxDepth = 0;  // sampled right after each launch
};

// One "step": `launches` RMSNorm forwards of (rows, dim) bf16, then a stream sync.
Run step(compute::Backend& gpu, const compute::Tensor& x, const compute::Tensor& w,
         compute::Tensor& y, compute::Tensor& rstd, int launches) {
  runtime::QueueTracker& queues = runtime::launchControl().queues();
  Run run;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    gpu.rmsnormForward(x, w, 1e-5f, y, rstd);
    run.maxDepth = std::max(run.maxDepth, totalDepth(queues));
  }
  gpu.synchronize();
  run.stepMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace

int main() {
  const std::unique_ptr<compute::Backend> gpu = test::gpuOrSkip("gpu_launch_policy");
  if (!gpu) {
    return test::kSkipExitCode;
  }
  std::printf("device: %s\n", gpu->capabilities().name.c_str());
  constexpr std::int64_t kRows = 16384;
  constexpr std::int64_t kDim = 4096;  // 128 MiB of bf16 per tensor: ~0.1 ms per launch
  constexpr int kLaunches = 200;
  std::vector<float> values(static_cast<std::size_t>(kRows * kDim));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (float& v : values) {
    v = normal(rng);
  }
  const compute::Tensor x = gpu->upload(values, compute::DType::BF16, {kRows, kDim});
  const compute::Tensor w =
      gpu->upload(std::vector<float>(kDim, 1.0f), compute::DType::BF16, {kDim});
  compute::Tensor y = gpu->empty(compute::DType::BF16, {kRows, kDim});
  compute::Tensor rstd = gpu->empty(compute::DType::F32, {kRows});
  runtime::LaunchControl& control = runtime::launchControl();

  control.setPolicy({});
  step(*gpu, x, w, y, rstd, 20);  // warm-up: module load, clocks
  const Run normal1 = step(*gpu, x, w, y, rstd, kLaunches);
  const Run normal2 = step(*gpu, x, w, y, rstd, kLaunches);
  expect(normal1.maxDepth > 1, "normal launches queue up (depth > 1)");
  expect(totalDepth(control.queues()) == 0, "depth falls to 0 after the stream is drained");

  control.setPolicy({false, true});
  const Run blocking = step(*gpu, x, w, y, rstd, kLaunches);
  expect(blocking.maxDepth <= 1, "blocking keeps the depth at most 1");

  control.setPolicy({true, false});
  const Run serialize = step(*gpu, x, w, y, rstd, kLaunches);
  expect(serialize.maxDepth == 0, "serialize leaves nothing queued after a launch returns");

  control.setPolicy({});
  const Run normal3 = step(*gpu, x, w, y, rstd, kLaunches);
  std::printf("step of %d rmsnorm launches (%lldx%lld bf16):\n", kLaunches,
              static_cast<long long>(kRows), static_cast<long long>(kDim));
  std::printf("  normal     %8.2f ms  %8.2f ms  %8.2f ms  max depth %llu\n", normal1.stepMs,
              normal2.stepMs, normal3.stepMs, static_cast<unsigned long long>(normal1.maxDepth));
  std::printf("  blocking   %8.2f ms  max depth %llu\n", blocking.stepMs,
              static_cast<unsigned long long>(blocking.maxDepth));
  std::printf("  serialize  %8.2f ms  max depth %llu\n", serialize.stepMs,
              static_cast<unsigned long long>(serialize.maxDepth));
  std::printf("  pooled events: %zu\n", control.queues().pooledEventCount());

  // Injected faults come out of the real launch path, named after the op.
  control.faults().configure(runtime::parseFaultSpec("blas@rmsnorm_forward#3"));
  int thrownAt = 0;
  for (int i = 1; i <= 5; ++i) {
    try {
      gpu->rmsnormForward(x, w, 1e-5f, y, rstd);
    } catch (const runtime::InjectedFault& fault) {
      thrownAt = i;
      std::printf("  injected: %s\n", fault.what());
    }
  }
  control.faults().configure({});
  gpu->synchronize();
  expect(thrownAt == 3, "an injected BLAS error fires at the 3rd rmsnorm_forward launch");
  expect(!control.checkHang().has_value(), "the watchdog sees no hang after completed work");
  return failures == 0 ? 0 : 1;
}
