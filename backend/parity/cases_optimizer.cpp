// parity/cases_optimizer.cpp — the optimizer ops: multi-tensor AdamW over several steps, the
// squared global norm, scaling and zeroing of tensor lists, and the Philox dropout mask.
//
// Lists mix a single element, sizes below and across the GPU's 16384-element chunks and LoRA
// A/B sizes of Qwen2.5-0.5B at r = 8 (8×896, 4864×8). The mask must be identical element for
// element (Philox is integer math; the GPU's bf16 mask is the CPU's rounded to nearest even).
#include <cmath>

#include "ParityHarness.h"

namespace lorascope::parity {
namespace {

using compute::AdamWTensors;
using compute::Backend;
using compute::DType;
using compute::Tensor;

// Both sides compute in fp32 from the same scalars; only fused multiply-adds and the square
// root's rounding may differ, a few ulp per step.
constexpr Tolerance kAdamw{1e-6, 1e-5};
// Doubles summed in another order: far below the 1e-5 relative the trainer's metrics need.
constexpr Tolerance kNorm{0.0, 1e-5};
// Zeroing, one correctly rounded multiply, integer-derived masks: no difference allowed.
constexpr Tolerance kExact{0.0, 0.0};

const std::vector<std::int64_t> kListSizes = {1, 7, 7168, 16385, 38912, 3 * 16384};

std::string listShape(const std::vector<std::int64_t>& sizes) {
  std::string text = "tensors=";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    text += (i == 0 ? "" : ",") + std::to_string(sizes[i]);
  }
  return text;
}

std::vector<Tensor*> pointersTo(std::vector<Tensor>& tensors) {
  std::vector<Tensor*> out;
  for (Tensor& t : tensors) {
    out.push_back(&t);
  }
  return out;
}

// Every tensor of a list, concatenated.
std::vector<float> downloadAll(Backend& backend, const std::vector<Tensor>& tensors) {
  std::vector<float> out;
  for (const Tensor& t : tensors) {
    const std::vector<float> values = backend.download(t);
    out.insert(out.end(), values.begin(), values.end());
  }
  return out;
}

std::vector<Comparison> runAdamw(Backend& cpu, Backend& gpu, std::mt19937& rng, int steps) {
  const std::size_t n = kListSizes.size();
  std::vector<std::vector<float>> params, firsts, seconds;
  for (std::int64_t size : kListSizes) {
    const auto count = static_cast<std::size_t>(size);
    params.push_back(randomNormal(rng, count, 0.0f, 0.05f));
    firsts.push_back(randomNormal(rng, count, 0.0f, 1e-3f));
    std::vector<float> v = randomNormal(rng, count, 0.0f, 1e-4f);
    for (float& x : v) {
      x = std::fabs(x);
    }
    seconds.push_back(std::move(v));
  }
  std::vector<std::vector<std::vector<float>>> grads(static_cast<std::size_t>(steps));
  for (auto& step : grads) {
    for (std::int64_t size : kListSizes) {
      step.push_back(randomNormal(rng, static_cast<std::size_t>(size), 0.0f, 0.02f));
    }
  }
  // Scalars of steps 1..steps of a decaying learning rate with weight decay (train::adamwScalars
  // for lr 2e-4·(1 − t/10), wd 0.01).
  auto scalarsOf = [](int t) {
    const double lr = 2e-4 * (1.0 - t / 10.0);
    compute::AdamWScalars s;
    s.decay = static_cast<float>(1.0 - lr * 0.01);
    s.stepSize = static_cast<float>(lr / (1.0 - std::pow(0.9, t)));
    s.sqrtBias2 = static_cast<float>(std::sqrt(1.0 - std::pow(0.999, t)));
    return s;
  };
  std::vector<float> out[2][3];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    std::vector<Tensor> p, m, v;
    for (std::size_t i = 0; i < n; ++i) {
      p.push_back(be.upload(params[i], DType::F32, {kListSizes[i]}));
      m.push_back(be.upload(firsts[i], DType::F32, {kListSizes[i]}));
      v.push_back(be.upload(seconds[i], DType::F32, {kListSizes[i]}));
    }
    for (int t = 1; t <= steps; ++t) {
      std::vector<Tensor> g;
      std::vector<AdamWTensors> list;
      for (std::size_t i = 0; i < n; ++i) {
        g.push_back(
            be.upload(grads[static_cast<std::size_t>(t - 1)][i], DType::F32, {kListSizes[i]}));
      }
      for (std::size_t i = 0; i < n; ++i) {
        list.push_back({&p[i], &g[i], &m[i], &v[i]});
      }
      be.adamw(list, scalarsOf(t));
    }
    out[b][0] = downloadAll(be, p);
    out[b][1] = downloadAll(be, m);
    out[b][2] = downloadAll(be, v);
  }
  return {compareOutputs("param", out[0][0], out[1][0], kAdamw),
          compareOutputs("m", out[0][1], out[1][1], kAdamw),
          compareOutputs("v", out[0][2], out[1][2], kAdamw)};
}

// The squared norm, then the list scaled by a clipping factor, then zeroed: each compared.
std::vector<Comparison> runListOps(Backend& cpu, Backend& gpu, std::mt19937& rng,
                                   const std::vector<std::int64_t>& sizes) {
  std::vector<std::vector<float>> values;
  for (std::int64_t size : sizes) {
    values.push_back(randomNormal(rng, static_cast<std::size_t>(size), 0.0f, 0.3f));
  }
  std::vector<float> norm[2], scaled[2], zeroed[2];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    std::vector<Tensor> tensors;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      tensors.push_back(be.upload(values[i], DType::F32, {sizes[i]}));
    }
    const std::vector<Tensor*> list = pointersTo(tensors);
    const std::vector<const Tensor*> constList(list.begin(), list.end());
    norm[b] = {static_cast<float>(std::sqrt(be.sumOfSquares(constList)))};
    be.scaleInPlace(list, 0.37f);
    scaled[b] = downloadAll(be, tensors);
    be.fillZero(list);
    zeroed[b] = downloadAll(be, tensors);
  }
  return {compareOutputs("norm", norm[0], norm[1], kNorm),
          compareOutputs("scaled", scaled[0], scaled[1], kExact),
          compareOutputs("zeroed", zeroed[0], zeroed[1], kExact)};
}

std::vector<Comparison> runDropoutMask(Backend& cpu, Backend& gpu, std::int64_t rows,
                                       std::int64_t cols, std::uint64_t stream, double p) {
  constexpr std::uint64_t kSeed = 1234;
  std::vector<float> masks[2];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    Tensor mask = be.empty(be.capabilities().activationDType, {rows, cols});
    be.dropoutMask(mask, kSeed, stream, p);
    masks[b] = be.download(mask);
  }
  // The CPU mask as the GPU stores it (bf16), so equality is exact.
  const std::vector<float> reference = roundTo(gpu.capabilities().activationDType, masks[0]);
  return {compareOutputs("mask", reference, masks[1], kExact)};
}

}  // namespace

std::vector<ParityCase> optimizerCases() {
  std::vector<ParityCase> cases;
  for (int steps : {1, 5}) {
    cases.push_back({"adamw", listShape(kListSizes) + " steps=" + std::to_string(steps), kAdamw,
                     [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       return runAdamw(cpu, gpu, rng, steps);
                     }});
  }
  const std::vector<std::vector<std::int64_t>> lists = {{13}, kListSizes, {16384, 16384, 1}};
  for (const std::vector<std::int64_t>& sizes : lists) {
    cases.push_back({"sum_sq/scale/zero", listShape(sizes), kNorm,
                     [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       return runListOps(cpu, gpu, rng, sizes);
                     }});
  }
  struct MaskShape {
    std::int64_t rows, cols;
    double p;
  };
  // Token × feature masks of real projections, a count that is not a multiple of 4, and a
  // stream with the high bit set (the LoRA dropout tag) and large step bits.
  const MaskShape masks[] = {
      {1, 13, 0.1}, {7, 896, 0.05}, {33, 4864, 0.1}, {512, 896, 0.5}, {4096, 4864, 0.05}};
  std::uint64_t stream = (std::uint64_t{1} << 63) | (std::uint64_t{123456} << 32);
  for (const MaskShape& m : masks) {
    const std::string shape = "rows=" + std::to_string(m.rows) + " cols=" + std::to_string(m.cols) +
                              " p=" + std::to_string(m.p);
    cases.push_back({"dropout_mask", shape, kExact, [=](Backend& cpu, Backend& gpu, std::mt19937&) {
                       return runDropoutMask(cpu, gpu, m.rows, m.cols, stream, m.p);
                     }});
    stream += 0x11;
  }
  return cases;
}

}  // namespace lorascope::parity
