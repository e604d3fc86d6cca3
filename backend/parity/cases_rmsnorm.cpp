// parity/cases_rmsnorm.cpp — RMSNorm forward/backward: HIP (bf16) against CPU (fp32).
//
// Shapes cover the real hidden sizes (896 Qwen2.5-0.5B, 2048 Llama-3.2-1B, 4096, 4864 Qwen2.5
// MLP width), sizes below one block (13, 64), odd ones (1000, 4097) and row counts that are not
// multiples of anything.
#include "ParityHarness.h"

namespace lorascope::parity {
namespace {

using compute::Backend;
using compute::DType;
using compute::Tensor;

constexpr float kEps = 1e-6f;
// y and dx are rounded to bf16 once (relative error ≤ 2^-9 ≈ 2e-3); allow four times that.
constexpr Tolerance kBf16Output{4e-3, 8e-3};
// rstd stays fp32; only the summation order differs.
constexpr Tolerance kF32Output{1e-6, 1e-5};

struct RmsnormInputs {
  std::int64_t rows;
  std::int64_t dim;
  std::vector<float> x, weight, dy;
};

RmsnormInputs makeInputs(std::mt19937& rng, std::int64_t rows, std::int64_t dim, DType weightType) {
  const auto n = static_cast<std::size_t>(rows * dim);
  return {rows, dim, roundTo(DType::BF16, randomNormal(rng, n, 0.0f, 1.5f)),
          roundTo(weightType, randomNormal(rng, static_cast<std::size_t>(dim), 1.0f, 0.2f)),
          roundTo(DType::BF16, randomNormal(rng, n, 0.0f, 1.0f))};
}

std::vector<Comparison> runForward(Backend& cpu, Backend& gpu, const RmsnormInputs& in,
                                   DType weightType) {
  const compute::Shape rowsDim{in.rows, in.dim};
  std::vector<std::vector<float>> outputs[2];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    const DType act = be.capabilities().activationDType;
    const Tensor x = be.upload(in.x, act, rowsDim);
    const Tensor w = be.upload(in.weight, b == 0 ? DType::F32 : weightType, {in.dim});
    Tensor y = be.empty(act, rowsDim);
    Tensor rstd = be.empty(DType::F32, {in.rows});
    be.rmsnormForward(x, w, kEps, y, rstd);
    outputs[b] = {be.download(y), be.download(rstd)};
  }
  return {compareOutputs("y", outputs[0][0], outputs[1][0], kBf16Output),
          compareOutputs("rstd", outputs[0][1], outputs[1][1], kF32Output)};
}

// accumulate: dx starts as x (any bf16 values) and gains the gradient.
std::vector<Comparison> runBackward(Backend& cpu, Backend& gpu, const RmsnormInputs& in,
                                    DType weightType, bool accumulate) {
  const compute::Shape rowsDim{in.rows, in.dim};
  // Both backends get the CPU's rstd, so the comparison isolates the backward kernel.
  std::vector<float> rstdValues;
  {
    const Tensor x = cpu.upload(in.x, DType::F32, rowsDim);
    const Tensor w = cpu.upload(in.weight, DType::F32, {in.dim});
    Tensor y = cpu.empty(DType::F32, rowsDim);
    Tensor rstd = cpu.empty(DType::F32, {in.rows});
    cpu.rmsnormForward(x, w, kEps, y, rstd);
    rstdValues = cpu.download(rstd);
  }
  std::vector<float> dx[2];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    const DType act = be.capabilities().activationDType;
    const Tensor x = be.upload(in.x, act, rowsDim);
    const Tensor dy = be.upload(in.dy, act, rowsDim);
    const Tensor w = be.upload(in.weight, b == 0 ? DType::F32 : weightType, {in.dim});
    const Tensor rstd = be.upload(rstdValues, DType::F32, {in.rows});
    Tensor out = accumulate ? be.upload(in.x, act, rowsDim) : be.empty(act, rowsDim);
    be.rmsnormBackward(dy, x, w, rstd, out, accumulate);
    dx[b] = be.download(out);
  }
  return {compareOutputs("dx", dx[0], dx[1], kBf16Output)};
}

}  // namespace

std::vector<ParityCase> rmsnormCases() {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {
      {1, 13}, {3, 64}, {7, 896}, {33, 4864}, {5, 2048}, {130, 1000}, {2, 4097}, {300, 4096}};
  std::vector<ParityCase> cases;
  for (DType weightType : {DType::BF16, DType::F32}) {
    for (const auto& rowsDim : shapes) {
      const std::int64_t rows = rowsDim.first;  // named copies: lambdas cannot capture bindings
      const std::int64_t dim = rowsDim.second;
      const std::string shape = "rows=" + std::to_string(rows) + " dim=" + std::to_string(dim) +
                                " weight=" + compute::dtypeName(weightType);
      cases.push_back({"rmsnorm_forward", shape, kBf16Output,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         return runForward(cpu, gpu, makeInputs(rng, rows, dim, weightType),
                                           weightType);
                       }});
      for (const bool accumulate : {false, true}) {
        cases.push_back({"rmsnorm_backward", shape + (accumulate ? " accumulate" : ""), kBf16Output,
                         [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                           return runBackward(cpu, gpu, makeInputs(rng, rows, dim, weightType),
                                              weightType, accumulate);
                         }});
      }
    }
  }
  return cases;
}

}  // namespace lorascope::parity
