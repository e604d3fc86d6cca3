// parity/cases_lm_head.cpp — fused lm-head + cross-entropy: HIP (bf16 h, GEMMs with fp32
// accumulation, online softmax over vocabulary chunks of ≤ 32 Mi f32 logits) against CPU (fp32).
//
// Shapes cover the Qwen2.5 vocabulary (151936) at 1, 3 and 300 rows (one chunk, and two chunks
// of which the last is partial) and at 1024 rows (five chunks, the vocabulary not a multiple of
// the chunk), a small vocabulary with the Qwen2.5-0.5B hidden size, a vocabulary of one, bf16 and
// f32 weights, ignored targets (−100) mixed in and a batch where every target is ignored, and
// evaluation (no dh). A last case checks that both backends reject an out-of-range target by name.
//
// Tolerances: losses stay fp32 on both sides; the logits differ only by the GEMMs' summation
// order (≈ 1e-6 relative), so 1e-4 of the RMS plus 1e-4 relative. dh is rounded to bf16 once
// and built from softmax weights rounded to bf16 (2^-9 relative each, independent, summed over
// the vocabulary), so it gets the bf16 output bound of the other ops: 4e-3 of the RMS plus 8e-3.
#include <cmath>

#include "ParityHarness.h"

namespace lorascope::parity {
namespace {

using compute::Backend;
using compute::DType;
using compute::Tensor;

constexpr Tolerance kLosses{1e-4, 1e-4};
constexpr Tolerance kBf16Output{4e-3, 8e-3};

struct LmHeadCase {
  std::int64_t rows, hidden, vocab;
  DType weightType;
  int ignoreEvery;  // every n-th target is −100 (0: none, 1: all)
  bool withGradient;
  float softcap = 0.0f;  // Gemma 2's final_logit_softcapping; 0 = off
};

struct LmHeadInputs {
  std::vector<float> h, weight;
  std::vector<std::int32_t> targets;
  float gradScale = 0.0f;
};

LmHeadInputs makeInputs(std::mt19937& rng, const LmHeadCase& c) {
  LmHeadInputs in;
  in.h = roundTo(DType::BF16, randomNormal(rng, static_cast<std::size_t>(c.rows * c.hidden), 0, 1));
  // Logits of standard deviation 2, as a trained model's are of order a few.
  const float weightStddev = 2.0f / std::sqrt(static_cast<float>(c.hidden));
  // bf16-representable even for the f32 cases: the vendor GEMM multiplies an f32 weight in bf16
  // (as autocast does; HipBackend::matmul), a rounding that belongs to matmul's parity, not to
  // this op's. The f32 cases still run the f32 storage path (chunk slicing, the target's row).
  in.weight = roundTo(DType::BF16, randomNormal(rng, static_cast<std::size_t>(c.vocab * c.hidden),
                                                0, weightStddev));
  std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(c.vocab - 1));
  int predicted = 0;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const bool ignored = c.ignoreEvery > 0 && r % c.ignoreEvery == 0;
    in.targets.push_back(ignored ? compute::kIgnoreTarget : pick(rng));
    predicted += ignored ? 0 : 1;
  }
  in.gradScale = 1.0f / static_cast<float>(std::max(predicted, 1));
  return in;
}

std::vector<Comparison> runCase(Backend& cpu, Backend& gpu, const LmHeadCase& c,
                                const LmHeadInputs& in) {
  std::vector<float> losses[2];
  std::vector<float> dh[2];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    const DType act = be.capabilities().activationDType;
    const Tensor h = be.upload(in.h, act, {c.rows, c.hidden});
    const Tensor w = be.upload(in.weight, b == 0 ? DType::F32 : c.weightType, {c.vocab, c.hidden});
    Tensor loss = be.empty(DType::F32, {c.rows});
    Tensor grad = c.withGradient ? be.empty(act, {c.rows, c.hidden}) : Tensor();
    be.lmHeadCrossEntropy(h, w, in.targets, in.gradScale, loss, grad, c.softcap);
    losses[b] = be.download(loss);
    if (c.withGradient) {
      dh[b] = be.download(grad);
    }
  }
  std::vector<Comparison> results{compareOutputs("losses", losses[0], losses[1], kLosses)};
  if (c.withGradient) {
    results.push_back(compareOutputs("dh", dh[0], dh[1], kBf16Output));
  }
  return results;
}

// Both backends refuse a target outside the vocabulary before computing anything, naming the
// op, the row and the target.
Comparison runRejectsTarget(Backend& cpu, Backend& gpu) {
  return compareShapeErrors(
      cpu, gpu, "lm_head_cross_entropy: target 1000 of row 2", [](Backend& be) {
        constexpr std::int64_t rows = 4, hidden = 8, vocab = 1000;
        const DType act = be.capabilities().activationDType;
        const Tensor h = be.upload(std::vector<float>(rows * hidden, 0.5f), act, {rows, hidden});
        const Tensor w = be.upload(std::vector<float>(vocab * hidden, 0.25f), act, {vocab, hidden});
        Tensor loss = be.empty(DType::F32, {rows});
        Tensor grad = be.empty(act, {rows, hidden});
        const std::vector<std::int32_t> targets{3, compute::kIgnoreTarget, 1000, 7};
        be.lmHeadCrossEntropy(h, w, targets, 1.0f, loss, grad);
      });
}

}  // namespace

std::vector<ParityCase> lmHeadCases() {
  const LmHeadCase shapes[] = {
      {1, 896, 151936, DType::BF16, 0, true},
      {3, 64, 151936, DType::BF16, 0, true},
      {300, 64, 151936, DType::F32, 3, true},
      {1024, 64, 151936, DType::BF16, 5, true},
      {7, 896, 1000, DType::BF16, 2, true},
      {5, 32, 1, DType::BF16, 0, true},
      {4, 64, 500, DType::BF16, 1, true},
      {33, 128, 32000, DType::BF16, 4, false},
      {300, 64, 151936, DType::BF16, 3, true, 3.0f},  // capped: tanh bends the logits
  };
  std::vector<ParityCase> cases;
  for (const LmHeadCase& c : shapes) {
    std::string shape = "rows=" + std::to_string(c.rows) + " H=" + std::to_string(c.hidden) +
                        " vocab=" + std::to_string(c.vocab) + " w=" + dtypeName(c.weightType);
    if (c.ignoreEvery > 0) {
      shape += " ignore=1/" + std::to_string(c.ignoreEvery);
    }
    if (!c.withGradient) {
      shape += " eval";
    }
    if (c.softcap > 0.0f) {
      shape += " softcap=" + std::to_string(static_cast<int>(c.softcap));
    }
    cases.push_back({"lm_head_cross_entropy", shape, kBf16Output,
                     [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       return runCase(cpu, gpu, c, makeInputs(rng, c));
                     }});
  }
  cases.push_back({"lm_head_cross_entropy", "rows=4 vocab=1000 bad target", Tolerance{},
                   [](Backend& cpu, Backend& gpu, std::mt19937&) {
                     return std::vector<Comparison>{runRejectsTarget(cpu, gpu)};
                   }});
  return cases;
}

}  // namespace lorascope::parity
