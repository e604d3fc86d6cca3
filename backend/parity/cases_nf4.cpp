// parity/cases_nf4.cpp — NF4 weights on the GPU (hip/nf4.hip, and matmul through its bf16
// workspace on the vendor and the built-in GEMM) against the CPU's f32 reference
// (compute/Nf4.cpp, cpu/matmul.cpp).
//
// Both backends quantise the same host floats with the same host code (Backend::upload to NF4),
// so they hold identical bytes; what differs is the GPU's bf16 rounding:
// - dequantize: the GPU rounds the CPU's f32 value once to bf16 (rtol 2^-8 ≈ 3.9e-3 bounds it).
// - matmul: the GPU's operand is the dequantised weight rounded to bf16 (up to 2^-9 of each
//   weight), so c moves by up to 2^-9 · Σ_k |a_k·w_k| ≈ 2^-9 · √k-scaled rms(c) for random signs,
//   a few 1e-3 of rms(c) in the tails, plus the output's own bf16 rounding (rtol 4e-3):
//   atolOfRms 1e-2.
// Shapes: counts that end inside a block and inside a group, one exact group, the trainer's
// projections at Qwen2.5-0.5B widths (y = x·Wᵀ and dx += dy·W), and Llama-3.1-8B's MLP width.
#include <string>

#include "ParityHarness.h"

namespace lorascope::parity {
namespace {

using compute::Backend;
using compute::DType;
using compute::GemmImplementation;
using compute::Tensor;

constexpr Tolerance kDequantize{1e-6, 4e-3};
constexpr Tolerance kNf4Matmul{1e-2, 4e-3};

struct Nf4Matmul {
  std::int64_t tokens, out, in;
  bool inputGradient;  // dx (T, in) += dy (T, out) · W; else y (T, out) = x (T, in) · Wᵀ
  const char* use;
};

std::vector<Comparison> runDequantize(Backend& cpu, Backend& gpu, std::mt19937& rng,
                                      const compute::Shape& shape) {
  const std::vector<float> w =
      randomNormal(rng, static_cast<std::size_t>(compute::numelOf(shape)), 0.0f, 0.02f);
  return compareBackends(cpu, gpu, {"out"}, kDequantize, [&](Backend& be) {
    const Tensor packed = be.upload(w, DType::NF4, shape);
    Tensor out = be.empty(be.capabilities().activationDType, shape);
    be.dequantize(packed, out);
    return OpOutputs{be.download(out)};
  });
}

std::vector<Comparison> runMatmul(Backend& cpu, Backend& gpu, std::mt19937& rng, const Nf4Matmul& s,
                                  GemmImplementation impl) {
  const std::int64_t aCols = s.inputGradient ? s.out : s.in;
  const std::int64_t cCols = s.inputGradient ? s.in : s.out;
  const std::vector<float> a = roundTo(
      DType::BF16, randomNormal(rng, static_cast<std::size_t>(s.tokens * aCols), 0.0f, 1.0f));
  const std::vector<float> w =
      randomNormal(rng, static_cast<std::size_t>(s.out * s.in), 0.0f, 0.05f);
  const std::vector<float> c0 = roundTo(
      DType::BF16, randomNormal(rng, static_cast<std::size_t>(s.tokens * cCols), 0.0f, 1.0f));
  const float beta = s.inputGradient ? 1.0f : 0.0f;
  const GemmSelection selection(gpu, impl);
  return compareBackends(cpu, gpu, {"c"}, kNf4Matmul, [&](Backend& be) {
    const DType act = be.capabilities().activationDType;
    const Tensor at = be.upload(a, act, {s.tokens, aCols});
    const Tensor packed = be.upload(w, DType::NF4, {s.out, s.in});
    Tensor ct = be.upload(c0, act, {s.tokens, cCols});
    be.matmul(at, false, packed, !s.inputGradient, ct, 1.0f, beta);
    return OpOutputs{be.download(ct)};
  });
}

std::string describe(const Nf4Matmul& s) {
  return "T=" + std::to_string(s.tokens) + " out=" + std::to_string(s.out) +
         " in=" + std::to_string(s.in) + (s.inputGradient ? " dx += dy·W" : " y = x·Wᵀ") + " (" +
         s.use + ")";
}

}  // namespace

std::vector<ParityCase> nf4Cases(bool vendorGemm) {
  std::vector<ParityCase> cases;
  for (const compute::Shape& shape :
       {compute::Shape{1, 37}, compute::Shape{64, 256}, compute::Shape{3, 16384 + 64 * 5 + 17},
        compute::Shape{4864, 896}}) {
    cases.push_back({"nf4_dequantize", "shape=" + compute::shapeToString(shape), kDequantize,
                     [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       return runDequantize(cpu, gpu, rng, shape);
                     }});
  }
  const Nf4Matmul shapes[] = {
      {7, 37, 100, false, "odd sizes"},           {7, 37, 100, true, "odd sizes"},
      {300, 896, 896, false, "q/o proj"},         {300, 128, 896, false, "k/v proj"},
      {300, 4864, 896, false, "gate/up proj"},    {300, 896, 4864, false, "down proj"},
      {300, 4864, 896, true, "gate/up dx"},       {300, 896, 4864, true, "down dx"},
      {16, 14336, 4096, false, "8B gate/up proj"}};
  std::vector<std::pair<GemmImplementation, const char*>> impls{
      {GemmImplementation::BuiltIn, "matmul_nf4_builtin"}};
  if (vendorGemm) {
    impls.insert(impls.begin(), {GemmImplementation::Vendor, "matmul_nf4_vendor"});
  }
  for (const auto& implOp : impls) {
    const GemmImplementation impl = implOp.first;  // named copy: lambdas cannot capture bindings
    for (const Nf4Matmul& s : shapes) {
      cases.push_back({implOp.second, describe(s), kNf4Matmul,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         return runMatmul(cpu, gpu, rng, s, impl);
                       }});
    }
  }
  return cases;
}

}  // namespace lorascope::parity
