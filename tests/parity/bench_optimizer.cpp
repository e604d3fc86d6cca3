// parity/bench_optimizer.cpp — milliseconds of one optimizer step over every LoRA tensor of the
// issue's benchmark shapes (r = 8 on all seven projections), done by the Backend optimizer ops
// (zero, squared norm, clip, AdamW: four launches) and done as the trainer did it before, a host
// round trip (download every gradient, clip and AdamW on the host, upload the adapter and zeroed
// gradients); and of one LoRA dropout mask drawn on the device against drawn on the host and
// uploaded. Qt-free; exit 77 without a GPU.
//   bench_optimizer [--iterations N]
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "BenchTiming.h"  // defines: benchIterations, millisecondsPerCall
#include "GpuOrSkip.h"
#include "parity/ParityHarness.h"  // defines: randomNormal
#include "train/LoraDropout.h"
#include "train/Optimizer.h"

using namespace lorascope;

namespace {

using compute::DType;
using compute::Tensor;

struct ModelShape {
  const char* name;
  std::int64_t layers, hidden, kvOut, intermediate;
};

// Host and device copies of one LoRA tensor (A or B) with its gradient and moments.
struct Trainable {
  std::vector<float> value, grad, first, second;
  Tensor deviceValue, deviceGrad, deviceFirst, deviceSecond;
};

std::vector<Trainable> loraTensors(compute::Backend& gpu, const ModelShape& s, std::mt19937& rng) {
  constexpr std::int64_t kRank = 8;
  const std::pair<std::int64_t, std::int64_t> projections[] = {
      {s.hidden, s.hidden},      {s.hidden, s.kvOut},        {s.hidden, s.kvOut},
      {s.hidden, s.hidden},      {s.hidden, s.intermediate}, {s.hidden, s.intermediate},
      {s.intermediate, s.hidden}};  // (in, out) of q, k, v, o, gate, up, down
  std::vector<Trainable> out;
  for (std::int64_t layer = 0; layer < s.layers; ++layer) {
    for (const auto& inOut : projections) {
      for (const std::int64_t count : {kRank * inOut.first, inOut.second * kRank}) {
        const auto n = static_cast<std::size_t>(count);
        Trainable t{parity::randomNormal(rng, n, 0, 0.02f),
                    parity::randomNormal(rng, n, 0, 1e-3f),
                    std::vector<float>(n),
                    std::vector<float>(n),
                    {},
                    {},
                    {},
                    {}};
        t.deviceValue = gpu.upload(t.value, DType::F32, {count});
        t.deviceGrad = gpu.upload(t.grad, DType::F32, {count});
        t.deviceFirst = gpu.upload(t.first, DType::F32, {count});
        t.deviceSecond = gpu.upload(t.second, DType::F32, {count});
        out.push_back(std::move(t));
      }
    }
  }
  return out;
}

void benchStep(compute::Backend& gpu, const ModelShape& s, int iterations, std::mt19937& rng) {
  std::vector<Trainable> tensors = loraTensors(gpu, s, rng);
  const train::AdamWConfig config;
  std::vector<Tensor*> grads;
  std::vector<compute::AdamWTensors> entries;
  std::size_t parameters = 0;
  for (Trainable& t : tensors) {
    grads.push_back(&t.deviceGrad);
    entries.push_back({&t.deviceValue, &t.deviceGrad, &t.deviceFirst, &t.deviceSecond});
    parameters += t.value.size();
  }
  const std::vector<const Tensor*> constGrads(grads.begin(), grads.end());
  const double deviceMs = parity::millisecondsPerCall(gpu, iterations, [&] {
    const double norm = std::sqrt(gpu.sumOfSquares(constGrads));
    if (const std::optional<float> factor = train::clipFactor(norm, 1.0)) {
      gpu.scaleInPlace(grads, *factor);
    }
    gpu.adamw(entries, train::adamwScalars(config, 2e-4, 1));
    gpu.fillZero(grads);
  });
  const double hostMs = parity::millisecondsPerCall(gpu, iterations, [&] {
    std::vector<std::span<float>> views;
    std::vector<train::AdamWParam> params;
    for (Trainable& t : tensors) {
      t.grad = gpu.download(t.deviceGrad);
      views.emplace_back(t.grad);
    }
    train::clipGradNorm(views, 1.0);
    for (Trainable& t : tensors) {
      params.push_back({t.value, t.grad, t.first, t.second});
    }
    train::adamwStep(config, 2e-4, 1, params);
    for (Trainable& t : tensors) {
      t.deviceValue = gpu.upload(t.value, DType::F32, t.deviceValue.shape());
      t.deviceGrad =
          gpu.upload(std::vector<float>(t.grad.size()), DType::F32, t.deviceGrad.shape());
    }
  });
  std::printf(
      "optimizer step %-14s %zu tensors, %.2fM parameters: device ops %.3f ms, host "
      "round trip %.3f ms (%.1fx)\n",
      s.name, tensors.size(), static_cast<double>(parameters) / 1e6, deviceMs, hostMs,
      hostMs / deviceMs);
}

void benchMask(compute::Backend& gpu, std::int64_t tokens, std::int64_t features, int iterations) {
  const train::DropoutKey key{42, 7, 0};
  const double p = 0.05;
  const DType act = gpu.capabilities().activationDType;
  Tensor mask = gpu.empty(act, {tokens, features});
  const double deviceMs = parity::millisecondsPerCall(gpu, iterations, [&] {
    gpu.dropoutMask(mask, key.seed, train::dropoutStream(key, 3, train::LoraModule::Up), p);
  });
  const double hostMs = parity::millisecondsPerCall(gpu, iterations, [&] {
    mask = gpu.upload(train::dropoutMask(key, 3, train::LoraModule::Up, p, tokens * features), act,
                      {tokens, features});
  });
  std::printf("dropout mask (%lld, %lld): device %.3f ms, host + upload %.3f ms (%.1fx)\n",
              static_cast<long long>(tokens), static_cast<long long>(features), deviceMs, hostMs,
              hostMs / deviceMs);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = parity::benchIterations(argc, argv);
  const std::unique_ptr<compute::Backend> gpu = test::gpuOrSkip("bench_optimizer");
  if (!gpu) {
    return test::kSkipExitCode;
  }
  std::printf("bench_optimizer on %s, %d iterations\n", gpu->capabilities().name.c_str(),
              iterations);
  std::mt19937 rng(7);
  benchStep(*gpu, {"qwen2.5-0.5b", 24, 896, 128, 4864}, iterations, rng);
  benchStep(*gpu, {"llama-3.2-1b", 16, 2048, 512, 8192}, iterations, rng);
  benchMask(*gpu, 4096, 896, iterations);   // B8×S512 tokens, input of q/k/v/gate/up
  benchMask(*gpu, 4096, 4864, iterations);  // input of Qwen2.5-0.5B's down projection
  return 0;
}
