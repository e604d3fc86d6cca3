// parity/cases_gemm.cpp — matmul on the GPU (vendor BLAS and built-in GEMM) against OpenBLAS.
//
// Every case runs once per GEMM implementation. Shapes: all four transpose combinations at
// awkward sizes (1, primes, one past a tile, k = 0), and every product of the LoRA trainer at the
// Qwen2.5-0.5B shapes (hidden 896, q/o 896, k/v 2 × 64 = 128, MLP 4864, LoRA rank 8, an lm-head
// vocabulary chunk and the chunk left over from 151936), with its dtypes: bf16 activations,
// frozen bf16 weights, f32 LoRA weights (b), f32 LoRA gradients (c, accumulated with beta = 1).
// Beside them, addLowRankProduct (lowrank_gemm): the LoRA up-projection and input gradient at the
// same widths (each pack width of Note [low-rank packs], token counts past a block of 32), awkward
// sizes, an f32 weight, a k of 33 to 64 and a k past the fused kernel. And loraOutputProducts
// (lora_output_gemm, Note [one pass over dy] in hip/lora_products.hip): the LoRA backward's dB
// and gᵀ from each site's dy, at the same widths, with token slabs and column slices to sum, and
// several sites in one call (more than one launch takes, one the GEMMs take among them) and the
// shapes its kernel leaves to the GEMMs. And projectionProducts (projection_products, Note [the
// LoRA term under the GEMM] in hip/HipBackendOpsGemm.cpp): a frozen projection with its bias and
// LoRA term, forward and input gradient, at the same widths, and the shapes left to the two ops.
#include <string>
#include <vector>

#include "ParityHarness.h"
#include "compute/Errors.h"

namespace lorascope::parity {
namespace {

using compute::Backend;
using compute::DType;
using compute::GemmImplementation;
using compute::Tensor;

// Tolerances, as |gpu − cpu| ≤ atolOfRms·rms(cpu c) + rtol·|cpu c|. bf16 keeps 8 significant
// bits, so rounding to it changes a value by at most 2^-8 ≈ 3.9e-3 of itself.
// - bf16 c from operands the GPU reads exactly: c is rounded once (rtol 4e-3, the bound itself);
//   the fp32 sums differ only in order, far below 1e-3 of rms(c).
constexpr Tolerance kBf16Output{1e-3, 4e-3};
// - The vendor path with an f32 b: the vendor GEMMs have no bf16 × f32 product, so b is rounded
//   to a bf16 copy first (what PyTorch's autocast does to a LoRA weight). That adds up to
//   2^-8 · Σ_i |a_i·b_i| per element; at k = 8 (the LoRA rank) no averaging over k helps, and
//   Σ|a_i·b_i| reaches about 8 × rms(c) in the tails of 10^5 normal samples: atolOfRms 3e-2.
constexpr Tolerance kVendorBf16Copy{3e-2, 4e-3};
// - f32 c from bf16 operands: the products are exact in fp32 and only the order and rounding of
//   the fp32 sums differ (tensor cores may truncate rather than round each partial sum: at most
//   k·2^-24 of Σ|a·b|, about 2.4e-4 of rms(c) at k = 4096), so atolOfRms 1e-3.
constexpr Tolerance kF32Accumulated{1e-3, 1e-4};
// - A frozen projection with its bias or LoRA term (projectionProducts): y is rounded twice on the
//   GPU, the product (or the term, under the GEMM) and the sum, each by up to 2^-8 of the value
//   rounded: rtol 8e-3. Where the second part cancels some of the first, the first rounding is of
//   a larger value than y: atolOfRms 1e-2. A wrong term (scale, transposition, rows) is off by
//   |term| itself, ~0.3 rms(y) in these cases.
constexpr Tolerance kTwoRoundings{1e-2, 8e-3};

struct GemmShape {
  std::int64_t m, n, k;
  bool transposeA, transposeB;
  DType bType, cType;
  float alpha, beta;
  const char* use;  // which product of the trainer, or "" for the awkward sizes
};

Tolerance toleranceFor(const GemmShape& s, GemmImplementation impl) {
  if (impl == GemmImplementation::Vendor && s.bType == DType::F32) {
    return kVendorBf16Copy;
  }
  return s.cType == DType::F32 ? kF32Accumulated : kBf16Output;
}

std::string describe(const GemmShape& s) {
  std::string text = "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                     " k=" + std::to_string(s.k) + " " + (s.transposeA ? "T" : "N") +
                     (s.transposeB ? "T" : "N") + " b=" + compute::dtypeName(s.bType) +
                     " c=" + compute::dtypeName(s.cType);
  if (s.beta != 0.0f || s.alpha != 1.0f) {
    text += " alpha=" + std::to_string(s.alpha).substr(0, 4) +
            " beta=" + std::to_string(s.beta).substr(0, 4);
  }
  return *s.use != '\0' ? text + " (" + s.use + ")" : text;
}

std::vector<Comparison> runGemm(Backend& cpu, Backend& gpu, std::mt19937& rng, const GemmShape& s,
                                GemmImplementation impl) {
  const compute::Shape aShape = s.transposeA ? compute::Shape{s.k, s.m} : compute::Shape{s.m, s.k};
  const compute::Shape bShape = s.transposeB ? compute::Shape{s.n, s.k} : compute::Shape{s.k, s.n};
  const auto count = [](const compute::Shape& shape) {
    return static_cast<std::size_t>(compute::numelOf(shape));
  };
  const std::vector<float> a = roundTo(DType::BF16, randomNormal(rng, count(aShape), 0.0f, 1.0f));
  const std::vector<float> b = roundTo(s.bType, randomNormal(rng, count(bShape), 0.0f, 0.5f));
  const std::vector<float> c0 =
      roundTo(s.cType, randomNormal(rng, static_cast<std::size_t>(s.m * s.n), 0.0f, 2.0f));
  const GemmSelection selection(gpu, impl);
  return compareBackends(cpu, gpu, {"c"}, toleranceFor(s, impl), [&](Backend& be) {
    const bool onCpu = be.capabilities().device == compute::Device::Cpu;
    const DType act = be.capabilities().activationDType;
    const Tensor at = be.upload(a, act, aShape);
    const Tensor bt = be.upload(b, onCpu ? DType::F32 : s.bType, bShape);
    Tensor ct = be.upload(c0, onCpu ? DType::F32 : s.cType, {s.m, s.n});
    be.matmul(at, s.transposeA, bt, s.transposeB, ct, s.alpha, s.beta);
    return OpOutputs{be.download(ct)};
  });
}

// Backend::addLowRankProduct: y (t, n) += scale · lhsTᵀ · op(w), lhsT (k, t).
struct LowRankShape {
  std::int64_t k, t, n;
  bool transposeW;
  DType wType;
  float scale;
  const char* use;
};

std::string describe(const LowRankShape& s) {
  return "k=" + std::to_string(s.k) + " t=" + std::to_string(s.t) + " n=" + std::to_string(s.n) +
         (s.transposeW ? " w (n, k) " : " w (k, n) ") + compute::dtypeName(s.wType) +
         " scale=" + std::to_string(s.scale).substr(0, 4) + " (" + s.use + ")";
}

std::vector<Comparison> runLowRank(Backend& cpu, Backend& gpu, std::mt19937& rng,
                                   const LowRankShape& s, GemmImplementation impl) {
  const compute::Shape wShape = s.transposeW ? compute::Shape{s.n, s.k} : compute::Shape{s.k, s.n};
  const std::vector<float> lhs =
      roundTo(DType::BF16, randomNormal(rng, static_cast<std::size_t>(s.k * s.t), 0.0f, 1.0f));
  const std::vector<float> w = roundTo(
      s.wType, randomNormal(rng, static_cast<std::size_t>(compute::numelOf(wShape)), 0.0f, 0.5f));
  const std::vector<float> y0 =
      roundTo(DType::BF16, randomNormal(rng, static_cast<std::size_t>(s.t * s.n), 0.0f, 2.0f));
  const GemmSelection selection(gpu, impl);
  return compareBackends(cpu, gpu, {"y"}, kBf16Output, [&](Backend& be) {
    const bool onCpu = be.capabilities().device == compute::Device::Cpu;
    const DType act = be.capabilities().activationDType;
    const Tensor lt = be.upload(lhs, act, {s.k, s.t});
    const Tensor wt = be.upload(w, onCpu ? DType::F32 : s.wType, wShape);
    Tensor yt = be.upload(y0, act, {s.t, s.n});
    be.addLowRankProduct(lt, wt, s.transposeW, s.scale, yt);
    return OpOutputs{be.download(yt)};
  });
}

std::vector<LowRankShape> lowRankShapes() {
  constexpr DType bf16 = DType::BF16;
  return {
      {1, 7, 13, true, bf16, 1.0f, "awkward"},
      {5, 33, 65, false, DType::F32, 0.5f, "f32 weight"},
      {8, 300, 128, true, bf16, 2.0f, "lora y += s·u·Bᵀ, k/v"},
      {8, 300, 4864, true, bf16, 2.0f, "lora y += s·u·Bᵀ, gate/up"},
      {24, 300, 896, false, bf16, 1.0f, "lora dx += g·A, q/k/v group"},
      {16, 300, 896, false, bf16, 1.0f, "lora dx += g·A, gate/up group"},
      {8, 37, 2048, false, bf16, 1.0f, "lora dx += g·A, o / down"},
      {40, 45, 96, false, bf16, 1.0f, "k of 33 to 64"},
      {70, 5, 3, true, bf16, 1.0f, "k past the fused kernel: the GEMM"},
  };
}

// Backend::projectionProducts: y (t, out) = x·op(w) (+ bias) (+ scale·lhsTᵀ·op(low)), x (t, in).
// A forward projection takes w (out, in) transposed and the up-projection's term (low = B (out,
// k), transposed); an input gradient dx = dy·W takes w (in = dy's width, out) as stored and the
// term g·A (low = A (k, out)).
struct ProjectionShape {
  std::int64_t t, in, out, k;  // k = 0: no term
  bool forward;
  bool bias;
  const char* use;
};

std::string describe(const ProjectionShape& s) {
  return "t=" + std::to_string(s.t) + " in=" + std::to_string(s.in) +
         " out=" + std::to_string(s.out) + " k=" + std::to_string(s.k) + (s.bias ? " bias" : "") +
         " (" + s.use + ")";
}

std::vector<Comparison> runProjection(Backend& cpu, Backend& gpu, std::mt19937& rng,
                                      const ProjectionShape& s, GemmImplementation impl) {
  const compute::Shape wShape =
      s.forward ? compute::Shape{s.out, s.in} : compute::Shape{s.in, s.out};
  const compute::Shape lowShape =
      s.forward ? compute::Shape{s.out, s.k} : compute::Shape{s.k, s.out};
  const auto normal = [&](std::int64_t count, float stddev) {
    return roundTo(DType::BF16, randomNormal(rng, static_cast<std::size_t>(count), 0.0f, stddev));
  };
  const std::vector<float> x = normal(s.t * s.in, 1.0f);
  const std::vector<float> w = normal(s.in * s.out, 0.05f);
  const std::vector<float> bias = normal(s.out, 0.5f);
  const std::vector<float> lhs = normal(s.k * s.t, 1.0f);
  const std::vector<float> low = normal(s.k * s.out, 0.1f);
  const GemmSelection selection(gpu, impl);
  return compareBackends(cpu, gpu, {"y"}, kTwoRoundings, [&](Backend& be) {
    const DType act = be.capabilities().activationDType;
    const Tensor xt = be.upload(x, act, {s.t, s.in});
    const Tensor wt = be.upload(w, act, wShape);
    const Tensor bt = be.upload(bias, DType::F32, {s.out});
    const Tensor lt = be.upload(lhs, act, {s.k, s.t});
    const Tensor lowt = be.upload(low, act, lowShape);
    Tensor yt = be.empty(act, {s.t, s.out});
    compute::ProjectionProduct p{&xt, &wt, s.forward, &yt, s.bias ? &bt : nullptr};
    if (s.k > 0) {
      p.lhsT = &lt;
      p.low = &lowt;
      p.transposeLow = s.forward;
      p.scale = s.forward ? 2.0f : 1.0f;
    }
    be.projectionProducts(std::span(&p, 1));
    return OpOutputs{be.download(yt)};
  });
}

std::vector<ProjectionShape> projectionShapes() {
  return {
      {300, 896, 4864, 8, true, false, "gate/up forward"},
      {300, 896, 128, 8, true, true, "k/v forward, bias"},
      {4096, 896, 896, 16, true, false, "o forward, rank 16, 4096 tokens"},
      {300, 4864, 896, 8, false, false, "down dx = dy·W + g·A"},
      {300, 1152, 896, 24, false, false, "q/k/v dx, the group's g·A"},
      {37, 13, 29, 5, true, false, "awkward"},
      {45, 96, 64, 70, true, false, "k past the fused kernel"},
      {45, 96, 64, 0, true, true, "no term"},
  };
}

// Sites of one loraOutputProducts call: the same tokens t and rank r, each its own width n; with
// `stacked`, their dy are the column blocks of one (t, Σn) tensor, side by side (Note [stacked
// gate/up] in train/TrainGraph.cpp).
struct LoraOutputShape {
  std::int64_t t, r;
  std::vector<std::int64_t> n;
  const char* use;
  bool stacked = false;
};

std::vector<LoraOutputShape> loraOutputShapes() {
  return {
      {300, 8, {896}, "q/o"},
      {300, 8, {128}, "k/v"},
      {300, 8, {4864}, "gate/up"},
      {4096, 8, {896}, "4096 tokens, slabs summed"},
      {40, 8, {24}, "past the tokens and the columns"},
      {136, 16, {264}, "rank 16, past a slice"},
      {296, 8, {896, 128, 128, 20, 4864, 896}, "six sites: a launch of three, one GEMM site, two"},
      {45, 8, {24}, "tokens not a multiple of 8: the GEMMs"},
      {48, 8, {20}, "n not a multiple of 8: the GEMMs"},
      {48, 3, {64}, "a rank the kernel does not take: the GEMMs"},
      {48, 24, {64}, "a rank past the kernel: the GEMMs"},
      {300, 8, {4864, 4864}, "gate/up: the halves of one stacked dy", true},
      {4096, 8, {2048, 2048}, "4096 tokens, stacked halves", true},
      {48, 8, {20, 20}, "stacked halves off 16 bytes: the GEMMs on copied blocks", true},
  };
}

std::string describe(const LoraOutputShape& s) {
  std::string widths;
  for (const std::int64_t n : s.n) {
    widths += (widths.empty() ? "" : ",") + std::to_string(n);
  }
  return "t=" + std::to_string(s.t) + " n=" + widths + (s.stacked ? " stacked" : "") +
         " r=" + std::to_string(s.r) + " (" + s.use + ")";
}

// gT = s·Bᵀ·dyᵀ is rounded once to bf16; dB (f32) accumulates onto random values. Every site's
// outputs are compared.
std::vector<Comparison> runLoraOutput(Backend& cpu, Backend& gpu, std::mt19937& rng,
                                      const LoraOutputShape& s) {
  const auto count = [](std::int64_t a, std::int64_t b) { return static_cast<std::size_t>(a * b); };
  struct Values {
    std::vector<float> dy, b, u, gradB0;
  };
  std::vector<Values> values;
  for (const std::int64_t n : s.n) {
    values.push_back({roundTo(DType::BF16, randomNormal(rng, count(s.t, n), 0.0f, 1.0f)),
                      roundTo(DType::BF16, randomNormal(rng, count(n, s.r), 0.0f, 0.5f)),
                      roundTo(DType::BF16, randomNormal(rng, count(s.r, s.t), 0.0f, 1.0f)),
                      randomNormal(rng, count(n, s.r), 0.0f, 0.5f)});
  }
  constexpr float scale = 2.0f;
  const auto body = [&](Backend& be) {
    const DType act = be.capabilities().activationDType;
    const std::size_t sites = s.n.size();
    std::vector<Tensor> dy(sites), b(sites), u(sites), gradB(sites), gT(sites);
    std::vector<compute::LoraOutputSite> list;
    for (std::size_t i = 0; i < sites; ++i) {
      dy[i] = be.upload(values[i].dy, act, {s.t, s.n[i]});
      b[i] = be.upload(values[i].b, act, {s.n[i], s.r});
      u[i] = be.upload(values[i].u, act, {s.r, s.t});
      gradB[i] = be.upload(values[i].gradB0, DType::F32, {s.n[i], s.r});
      gT[i] = be.empty(act, {s.r, s.t});
    }
    Tensor stacked;  // with s.stacked: every site's dy side by side, each site a column block
    if (s.stacked) {
      std::int64_t width = 0;
      for (const std::int64_t n : s.n) {
        width += n;
      }
      stacked = be.empty(act, {s.t, width});
      std::vector<const Tensor*> parts;
      for (const Tensor& part : dy) {
        parts.push_back(&part);
      }
      be.stackColumns(parts, stacked);
    }
    std::int64_t column = 0;
    for (std::size_t i = 0; i < sites; ++i) {
      list.push_back(
          {s.stacked ? &stacked : &dy[i], &b[i], &u[i], &gradB[i], &gT[i], s.stacked ? column : 0});
      column += s.n[i];
    }
    be.loraOutputProducts(list, scale);
    OpOutputs out;
    for (std::size_t i = 0; i < sites; ++i) {
      out.push_back(be.download(gT[i]));
      out.push_back(be.download(gradB[i]));
    }
    return out;
  };
  const OpOutputs reference = body(cpu);
  const OpOutputs candidate = body(gpu);
  std::vector<Comparison> comparisons;
  for (std::size_t i = 0; i < s.n.size(); ++i) {
    const std::string site = s.n.size() > 1 ? " " + std::to_string(i) : "";
    comparisons.push_back(
        compareOutputs("gT" + site, reference[2 * i], candidate[2 * i], kBf16Output));
    comparisons.push_back(compareOutputs("gradB" + site, reference[2 * i + 1], candidate[2 * i + 1],
                                         kF32Accumulated));
  }
  return comparisons;
}

std::vector<GemmShape> gemmShapes() {
  constexpr DType bf16 = DType::BF16;
  constexpr DType f32 = DType::F32;
  std::vector<GemmShape> shapes;
  // Awkward sizes in all four transpose combinations: single elements, primes, sizes one past
  // the 64/128 tiles and the 16-deep k step, a single row or column, a long k over a tiny output
  // (the built-in GEMM splits it, with a short last split), and an empty k (c = beta·c).
  const std::int64_t sizes[][3] = {{1, 1, 1},    {7, 13, 5},     {33, 65, 129}, {130, 1, 257},
                                   {1, 200, 64}, {129, 127, 17}, {5, 3, 1000}};
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const auto& mnk : sizes) {
        shapes.push_back({mnk[0], mnk[1], mnk[2], ta, tb, bf16, bf16, 1.0f, 0.0f, ""});
      }
      shapes.push_back({67, 45, 31, ta, tb, f32, f32, 0.5f, 1.0f, ""});
      shapes.push_back({3, 5, 0, ta, tb, bf16, bf16, 1.0f, 0.5f, ""});
    }
  }
  // The trainer's products at Qwen2.5-0.5B widths; T tokens per micro-batch.
  for (const std::int64_t t : {std::int64_t{1}, std::int64_t{300}}) {
    shapes.push_back({t, 896, 896, false, true, bf16, bf16, 1.0f, 0.0f, "q/o proj"});
    shapes.push_back({t, 128, 896, false, true, bf16, bf16, 1.0f, 0.0f, "k/v proj"});
    shapes.push_back({t, 4864, 896, false, true, bf16, bf16, 1.0f, 0.0f, "gate/up proj"});
    shapes.push_back({t, 896, 4864, false, true, bf16, bf16, 1.0f, 0.0f, "down proj"});
    shapes.push_back({t, 896, 4864, false, false, bf16, bf16, 1.0f, 1.0f, "gate/up dx"});
    shapes.push_back({t, 4864, 896, false, false, bf16, bf16, 1.0f, 0.0f, "down dx"});
    shapes.push_back({t, 8, 896, false, true, f32, bf16, 1.0f, 0.0f, "lora u = x·Aᵀ"});
    shapes.push_back({t, 128, 8, false, true, f32, bf16, 2.0f, 1.0f, "lora y += s·u·Bᵀ"});
    shapes.push_back({896, 8, t, true, false, bf16, f32, 2.0f, 1.0f, "lora dB += s·dyᵀ·u"});
    shapes.push_back({t, 8, 4864, false, false, f32, bf16, 2.0f, 0.0f, "lora g = s·dy·B"});
    shapes.push_back({8, 896, t, true, false, bf16, f32, 1.0f, 1.0f, "lora dA += gᵀ·x"});
    shapes.push_back({t, 896, 8, false, false, f32, bf16, 1.0f, 1.0f, "lora dx += g·A"});
  }
  // A whole micro-batch of 4096 tokens where k is the token count (the LoRA gradients, the
  // longest fp32 sums of the step), and the lm-head over a 16384-row vocabulary chunk and the
  // 4480 rows left when 151936 is split into such chunks.
  shapes.push_back({8, 896, 4096, true, false, bf16, f32, 1.0f, 1.0f, "lora dA, 4096 tokens"});
  shapes.push_back({4864, 8, 4096, true, false, bf16, f32, 2.0f, 1.0f, "lora dB, 4096 tokens"});
  shapes.push_back({64, 16384, 896, false, true, bf16, bf16, 1.0f, 0.0f, "lm-head chunk"});
  shapes.push_back({64, 4480, 896, false, true, bf16, bf16, 1.0f, 0.0f, "lm-head last chunk"});
  return shapes;
}

}  // namespace

std::vector<ParityCase> gemmCases(bool vendorGemm) {
  std::vector<ParityCase> cases;
  std::vector<std::pair<GemmImplementation, const char*>> impls{
      {GemmImplementation::BuiltIn, "matmul_builtin"}};
  if (vendorGemm) {
    impls.insert(impls.begin(), {GemmImplementation::Vendor, "matmul_vendor"});
  }
  for (const auto& implOp : impls) {
    const GemmImplementation impl = implOp.first;  // named copy: lambdas cannot capture bindings
    for (const GemmShape& shape : gemmShapes()) {
      cases.push_back({implOp.second, describe(shape), toleranceFor(shape, impl),
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         return runGemm(cpu, gpu, rng, shape, impl);
                       }});
    }
    for (const LowRankShape& shape : lowRankShapes()) {
      cases.push_back({"lowrank_gemm", describe(shape) + " " + implOp.second, kBf16Output,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         return runLowRank(cpu, gpu, rng, shape, impl);
                       }});
    }
    for (const ProjectionShape& shape : projectionShapes()) {
      cases.push_back({"projection_products", describe(shape) + " " + implOp.second, kTwoRoundings,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         return runProjection(cpu, gpu, rng, shape, impl);
                       }});
    }
    // Inner dimensions that differ are refused by both backends before anything runs.
    cases.push_back({implOp.second, "m=4 n=5 k=6 vs 7 (mismatch)", kBf16Output,
                     [=](Backend& cpu, Backend& gpu, std::mt19937&) {
                       const GemmSelection selection(gpu, impl);
                       return std::vector<Comparison>{
                           compareShapeErrors(cpu, gpu, "inner dimensions differ", [](Backend& be) {
                             const DType act = be.capabilities().activationDType;
                             const Tensor a = be.empty(act, {4, 6});
                             const Tensor b = be.empty(act, {7, 5});
                             Tensor c = be.empty(act, {4, 5});
                             be.matmul(a, false, b, false, c, 1.0f, 0.0f);
                           })};
                     }});
  }
  for (const LoraOutputShape& shape : loraOutputShapes()) {
    cases.push_back({"lora_output_gemm", describe(shape), kBf16Output,
                     [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       return runLoraOutput(cpu, gpu, rng, shape);
                     }});
  }
  // A gradient of the wrong shape is refused by both backends before anything runs.
  cases.push_back({"lora_output_gemm", "dB (9, 8) for n = 8 (mismatch)", kBf16Output,
                   [](Backend& cpu, Backend& gpu, std::mt19937&) {
                     return std::vector<Comparison>{
                         compareShapeErrors(cpu, gpu, "[9, 8]", [](Backend& be) {
                           const DType act = be.capabilities().activationDType;
                           const Tensor dy = be.empty(act, {16, 8});
                           const Tensor b = be.empty(act, {8, 8});
                           const Tensor u = be.empty(act, {8, 16});
                           Tensor gradB = be.empty(DType::F32, {9, 8});
                           Tensor gT = be.empty(act, {8, 16});
                           const compute::LoraOutputSite site{&dy, &b, &u, &gradB, &gT};
                           be.loraOutputProducts(std::span(&site, 1), 1.0f);
                         })};
                   }});
  return cases;
}

}  // namespace lorascope::parity
