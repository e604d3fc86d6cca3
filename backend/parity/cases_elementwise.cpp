// parity/cases_elementwise.cpp — embedding gather, RoPE, SwiGLU, add/multiply/bias and
// cross-entropy: HIP (bf16 activations) against CPU (fp32).
//
// Shapes: single elements, sizes that are not multiples of a block (256) or a wave, the
// Qwen2.5-0.5B widths (hidden 896, 14 heads × 64, 2 KV heads, MLP 4864, vocabulary 151936) and
// sizes large enough to need the grid-stride loops. Bad ids and targets must be refused with the
// same ShapeError on both backends.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "ParityHarness.h"
#include "compute/Errors.h"

namespace lorascope::parity {
namespace {

using compute::Backend;
using compute::DType;
using compute::Shape;
using compute::Tensor;

// bf16 outputs are the fp32 result rounded once: bf16 keeps 8 significant bits, so the relative
// error is at most 2^-8 ≈ 3.9e-3, and rtol 4e-3 is that bound (a second rounding would break it).
// Gathers and sums of bf16 inputs are otherwise exact, so no absolute term.
constexpr Tolerance kRoundedOnce{0.0, 4e-3};
// RoPE and SwiGLU also differ by a few fp32 ulps of sin/cos/exp before the rounding, which matters
// only where the result cancels to near 0: 1e-4 of the output's RMS covers it.
constexpr Tolerance kRoundedMath{1e-4, 4e-3};
// Cross-entropy outputs stay f32; only the order of the fp32 sum over the vocabulary differs
// (relative 1e-6 at 151936 terms); losses = lse − logit cancel to about 10, hence atolOfRms.
constexpr Tolerance kF32Reduction{1e-5, 1e-5};

std::size_t count(const Shape& shape) {
  return static_cast<std::size_t>(compute::numelOf(shape));
}

std::vector<float> bf16Normal(std::mt19937& rng, const Shape& shape, float stddev) {
  return roundTo(DType::BF16, randomNormal(rng, count(shape), 0.0f, stddev));
}

std::vector<std::int32_t> randomInts(std::mt19937& rng, std::size_t n, std::int32_t below) {
  std::uniform_int_distribution<std::int32_t> dist(0, below - 1);
  std::vector<std::int32_t> out(n);
  for (std::int32_t& v : out) {
    v = dist(rng);
  }
  return out;
}

std::string dims(std::initializer_list<std::pair<const char*, std::int64_t>> named) {
  std::string text;
  for (const auto& [name, value] : named) {
    text += (text.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(value);
  }
  return text;
}

void addEmbeddingCases(std::vector<ParityCase>& cases) {
  const std::int64_t shapes[][3] = {{5, 1, 1}, {1000, 896, 7}, {32000, 64, 513}, {300, 4097, 33}};
  for (const DType tableType : {DType::BF16, DType::F32}) {
    for (const auto& vdt : shapes) {
      const std::int64_t vocab = vdt[0];
      const std::int64_t dim = vdt[1];
      const std::int64_t tokens = vdt[2];
      cases.push_back(
          {"embedding_forward",
           dims({{"vocab", vocab}, {"dim", dim}, {"tokens", tokens}}) +
               " table=" + compute::dtypeName(tableType),
           kRoundedOnce, [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
             const std::vector<float> table = roundTo(
                 tableType, randomNormal(rng, static_cast<std::size_t>(vocab * dim), 0.0f, 1.0f));
             std::vector<std::int32_t> ids = randomInts(rng, static_cast<std::size_t>(tokens),
                                                        static_cast<std::int32_t>(vocab));
             ids.back() = static_cast<std::int32_t>(vocab - 1);  // the last row of the table
             return compareBackends(cpu, gpu, {"out"}, kRoundedOnce, [&](Backend& be) {
               const Tensor t = be.upload(table, tableType, {vocab, dim});
               Tensor out = be.empty(be.capabilities().activationDType, {tokens, dim});
               be.embeddingForward(t, ids, out);
               return OpOutputs{be.download(out)};
             });
           }});
    }
  }
  cases.push_back({"embedding_forward", "vocab=10 id=10 (out of range)", kRoundedOnce,
                   [](Backend& cpu, Backend& gpu, std::mt19937&) {
                     return std::vector<Comparison>{
                         compareShapeErrors(cpu, gpu, "token id 10 at position 1", [](Backend& be) {
                           const Tensor t = be.upload(std::vector<float>(40), DType::F32, {10, 4});
                           Tensor out = be.empty(be.capabilities().activationDType, {2, 4});
                           const std::int32_t ids[] = {3, 10};
                           be.embeddingForward(t, ids, out);
                         })};
                   }});
}

void addRopeCases(std::vector<ParityCase>& cases) {
  // (tokens, heads, head_dim): Qwen2.5-0.5B's q (14 × 64) and k (2 × 64), the smallest head, an
  // odd head count with head_dim 128, and a long sequence.
  const std::int64_t shapes[][3] = {
      {7, 14, 64}, {5, 2, 64}, {1, 1, 2}, {33, 3, 128}, {2048, 14, 64}};
  for (const double theta : {1e6, 1e4}) {
    for (const bool inverse : {false, true}) {
      for (const auto& thd : shapes) {
        const std::int64_t tokens = thd[0];
        const std::int64_t heads = thd[1];
        const std::int64_t headDim = thd[2];
        cases.push_back({"rope",
                         dims({{"tokens", tokens}, {"heads", heads}, {"hd", headDim}}) + " theta=" +
                             (theta > 1e5 ? "1e6" : "1e4") + (inverse ? " inverse" : ""),
                         kRoundedMath, [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                           const Shape shape{tokens, heads, headDim};
                           const std::vector<float> x = bf16Normal(rng, shape, 1.0f);
                           // Positions up to 32K: large angles are where a careless sin/cos goes
                           // wrong.
                           const std::vector<std::int32_t> positions =
                               randomInts(rng, static_cast<std::size_t>(tokens), 32768);
                           std::vector<float> invFreq(static_cast<std::size_t>(headDim / 2));
                           for (std::size_t i = 0; i < invFreq.size(); ++i) {
                             invFreq[i] = static_cast<float>(
                                 1.0 / std::pow(theta, 2.0 * static_cast<double>(i) / headDim));
                           }
                           return compareBackends(cpu, gpu, {"x"}, kRoundedMath, [&](Backend& be) {
                             Tensor xt = be.upload(x, be.capabilities().activationDType, shape);
                             const Tensor f = be.upload(invFreq, DType::F32, {headDim / 2});
                             be.rope(xt, positions, f, inverse);
                             return OpOutputs{be.download(xt)};
                           });
                         }});
      }
    }
  }
  // rope_backward_stacked: (tokens, heads, kvHeads, head_dim) of Llama-3.2-1B (32 and 8 heads of
  // 64), Qwen2.5-0.5B (14 and 2), an odd half (one value a thread), into dqkv as a column view of
  // a matrix `extra` columns wider: 48 (the LoRA fold's, 16-byte rows) and 3 (two-byte rows).
  const std::int64_t stackedShapes[][5] = {
      {64, 32, 8, 64, 48}, {33, 14, 2, 64, 3}, {5, 3, 1, 6, 48}};
  for (const auto& shape : stackedShapes) {
    // Plain copies, not a structured binding: clang before 16 cannot capture one in a lambda.
    const std::int64_t tokens = shape[0];
    const std::int64_t heads = shape[1];
    const std::int64_t kvHeads = shape[2];
    const std::int64_t headDim = shape[3];
    const std::int64_t extra = shape[4];
    cases.push_back(
        {"rope_backward_stacked",
         dims({{"tokens", tokens}, {"heads", heads}, {"kv", kvHeads}, {"hd", headDim}}) +
             " extra=" + std::to_string(extra),
         kRoundedMath, [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
           const Shape qShape{tokens, heads, headDim};
           const Shape kvShape{tokens, kvHeads, headDim};
           const std::vector<float> dq = bf16Normal(rng, qShape, 1.0f);
           const std::vector<float> dk = bf16Normal(rng, kvShape, 1.0f);
           const std::vector<float> dv = bf16Normal(rng, kvShape, 1.0f);
           const std::vector<std::int32_t> positions =
               randomInts(rng, static_cast<std::size_t>(tokens), 32768);
           std::vector<float> invFreq(static_cast<std::size_t>(headDim / 2));
           for (std::size_t i = 0; i < invFreq.size(); ++i) {
             invFreq[i] =
                 static_cast<float>(1.0 / std::pow(5e5, 2.0 * static_cast<double>(i) / headDim));
           }
           const std::int64_t width = (heads + 2 * kvHeads) * headDim;
           const std::vector<float> wide = bf16Normal(rng, {tokens, width + extra}, 1.0f);
           return compareBackends(cpu, gpu, {"dqkv"}, kRoundedMath, [&](Backend& be) {
             const DType act = be.capabilities().activationDType;
             Tensor q = be.upload(dq, act, qShape);
             Tensor k = be.upload(dk, act, kvShape);
             const Tensor v = be.upload(dv, act, kvShape);
             const Tensor f = be.upload(invFreq, DType::F32, {headDim / 2});
             Tensor all = be.upload(wide, act, {tokens, width + extra});
             Tensor dqkv = all.columns(0, width);
             be.ropeBackwardStacked(q, k, v, positions, f, dqkv);
             return OpOutputs{be.download(all)};
           });
         }});
  }
}

// Shapes (rows, dim) of the activation-sized elementwise ops.
constexpr std::int64_t kRowsDims[][2] = {{1, 1}, {7, 896}, {33, 1000}, {3, 4097}, {512, 4864}};

void addSwigluCases(std::vector<ParityCase>& cases) {
  for (const auto& rd : kRowsDims) {
    const Shape shape{rd[0], rd[1]};
    const std::string text = dims({{"rows", rd[0]}, {"dim", rd[1]}});
    for (const bool gelu : {false, true}) {  // SwiGLU (Llama) and GeGLU (Gemma)
      const std::string name = gelu ? "geglu" : "swiglu";
      cases.push_back({name + "_forward", text, kRoundedMath,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         const std::vector<float> gate = bf16Normal(rng, shape, 3.0f);
                         const std::vector<float> up = bf16Normal(rng, shape, 1.0f);
                         return compareBackends(cpu, gpu, {"out"}, kRoundedMath, [&](Backend& be) {
                           const DType act = be.capabilities().activationDType;
                           const Tensor g = be.upload(gate, act, shape);
                           const Tensor u = be.upload(up, act, shape);
                           Tensor out = be.empty(act, shape);
                           if (gelu) {
                             be.gegluForward(g, u, out);
                           } else {
                             be.swigluForward(g, u, out);
                           }
                           return OpOutputs{be.download(out)};
                         });
                       }});
      cases.push_back({name + "_backward", text, kRoundedMath,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         const std::vector<float> dout = bf16Normal(rng, shape, 1.0f);
                         const std::vector<float> gate = bf16Normal(rng, shape, 3.0f);
                         const std::vector<float> up = bf16Normal(rng, shape, 1.0f);
                         return compareBackends(
                             cpu, gpu, {"dgate", "dup"}, kRoundedMath, [&](Backend& be) {
                               const DType act = be.capabilities().activationDType;
                               const Tensor d = be.upload(dout, act, shape);
                               const Tensor g = be.upload(gate, act, shape);
                               const Tensor u = be.upload(up, act, shape);
                               Tensor dgate = be.empty(act, shape);
                               Tensor dup = be.empty(act, shape);
                               if (gelu) {
                                 be.gegluBackward(d, g, u, dgate, dup);
                               } else {
                                 be.swigluBackward(d, g, u, dgate, dup);
                               }
                               return OpOutputs{be.download(dgate), be.download(dup)};
                             });
                       }});
    }
    // SwiGLU's gradients side by side, the stacked gate/up weights' input (Note [stacked
    // gate/up]); odd dims take the element-wise stores. `spare` more columns: the result a column
    // view, its rows wider (Note [the LoRA term in the inner dimension]), the spare ones kept.
    for (const std::int64_t spare : {0, 16}) {
      cases.push_back({"swiglu_backward_stacked", text + (spare > 0 ? " strided" : ""),
                       kRoundedMath, [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         const std::vector<float> dout = bf16Normal(rng, shape, 1.0f);
                         const std::vector<float> gate = bf16Normal(rng, shape, 3.0f);
                         const std::vector<float> up = bf16Normal(rng, shape, 1.0f);
                         const Shape wide{shape[0], 2 * shape[1] + spare};
                         const std::vector<float> before = bf16Normal(rng, wide, 1.0f);
                         return compareBackends(
                             cpu, gpu, {"dGateUp"}, kRoundedMath, [&](Backend& be) {
                               const DType act = be.capabilities().activationDType;
                               const Tensor d = be.upload(dout, act, shape);
                               const Tensor g = be.upload(gate, act, shape);
                               const Tensor u = be.upload(up, act, shape);
                               const Tensor all = be.upload(before, act, wide);
                               Tensor both = all.columns(0, 2 * shape[1]);
                               be.swigluBackwardStacked(d, g, u, both);
                               return OpOutputs{be.download(all)};
                             });
                       }});
    }
    for (const bool softcap : {false, true}) {  // Gemma's embedding scale and logit soft-cap
      cases.push_back({softcap ? "softcap" : "scale", text, kRoundedMath,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         const std::vector<float> x = bf16Normal(rng, shape, 10.0f);
                         return compareBackends(cpu, gpu, {"x"}, kRoundedMath, [&](Backend& be) {
                           Tensor xt = be.upload(x, be.capabilities().activationDType, shape);
                           if (softcap) {
                             be.softcapInPlace(xt, 8.0f);
                           } else {
                             be.scaleActivations(xt, 45.254833f);  // √2048
                           }
                           return OpOutputs{be.download(xt)};
                         });
                       }});
    }
  }
}

void addInPlaceCases(std::vector<ParityCase>& cases) {
  for (const auto& rd : kRowsDims) {
    const Shape shape{rd[0], rd[1]};
    const std::string text = dims({{"rows", rd[0]}, {"dim", rd[1]}});
    for (const bool multiply : {false, true}) {
      cases.push_back({multiply ? "multiply" : "add", text, kRoundedOnce,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         const std::vector<float> x = bf16Normal(rng, shape, 1.0f);
                         const std::vector<float> y = bf16Normal(rng, shape, 1.0f);
                         return compareBackends(cpu, gpu, {"x"}, kRoundedOnce, [&](Backend& be) {
                           const DType act = be.capabilities().activationDType;
                           Tensor xt = be.upload(x, act, shape);
                           const Tensor yt = be.upload(y, act, shape);
                           if (multiply) {
                             be.multiplyInPlace(xt, yt);
                           } else {
                             be.addInPlace(xt, yt);
                           }
                           return OpOutputs{be.download(xt)};
                         });
                       }});
    }
    // stack_columns: parts of dim, a quarter of dim (16-byte rows where dim allows) and 3 columns
    // (two-byte copies), as q's, k's and v's input gradients meet it (Note [stacked q/k/v]).
    cases.push_back(
        {"stack_columns", text, kRoundedOnce, [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
           const std::int64_t rows = shape[0];
           const std::array<Shape, 3> parts{
               {{rows, shape[1]}, {rows, std::max<std::int64_t>(shape[1] / 4, 1)}, {rows, 3}}};
           std::array<std::vector<float>, 3> values;
           for (std::size_t i = 0; i < parts.size(); ++i) {
             values[i] = bf16Normal(rng, parts[i], 1.0f);
           }
           return compareBackends(cpu, gpu, {"dst"}, kRoundedOnce, [&](Backend& be) {
             const DType act = be.capabilities().activationDType;
             std::array<Tensor, 3> tensors;
             std::int64_t columns = 0;
             for (std::size_t i = 0; i < parts.size(); ++i) {
               tensors[i] = be.upload(values[i], act, parts[i]);
               columns += parts[i][1];
             }
             Tensor dst = be.empty(act, {rows, columns});
             be.stackColumns(std::array<const Tensor*, 3>{&tensors[0], &tensors[1], &tensors[2]},
                             dst);
             return OpOutputs{be.download(dst)};
           });
         }});
    // copy_matrices: a (rows, 3) block copied into columns of a wider matrix, and scaled and
    // transposed into its last rows, both through column views, as the LoRA weights and u meet
    // the folded frozen weights (Note [the LoRA term in the inner dimension]).
    cases.push_back(
        {"copy_matrices", text, kRoundedOnce, [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
           const std::int64_t rows = shape[0];
           const std::int64_t width = shape[1] + 5;
           const std::vector<float> block = bf16Normal(rng, {rows, 3}, 1.0f);
           const std::vector<float> wide = bf16Normal(rng, {rows + 3, width}, 1.0f);
           return compareBackends(cpu, gpu, {"dst"}, kRoundedOnce, [&](Backend& be) {
             const DType act = be.capabilities().activationDType;
             const Tensor src = be.upload(block, act, {rows, 3});
             Tensor dst = be.upload(wide, act, {rows + 3, width});
             Tensor straight = dst.rows(0, rows).columns(2, 3);
             Tensor across = dst.rows(rows, 3).columns(width - rows, rows);
             const std::array<compute::MatrixCopy, 2> copies{
                 {{&src, &straight, false, 1.0f}, {&src, &across, true, 0.5f}}};
             be.copyMatrices(copies);
             return OpOutputs{be.download(dst)};
           });
         }});
    for (const DType biasType : {DType::BF16, DType::F32}) {
      cases.push_back({"add_bias", text + " bias=" + compute::dtypeName(biasType), kRoundedOnce,
                       [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                         const std::vector<float> x = bf16Normal(rng, shape, 1.0f);
                         const std::vector<float> bias =
                             roundTo(biasType, randomNormal(rng, count({shape[1]}), 0.0f, 0.5f));
                         return compareBackends(cpu, gpu, {"x"}, kRoundedOnce, [&](Backend& be) {
                           Tensor xt = be.upload(x, be.capabilities().activationDType, shape);
                           const Tensor b = be.upload(bias, biasType, {shape[1]});
                           be.addBias(xt, b);
                           return OpOutputs{be.download(xt)};
                         });
                       }});
    }
  }
}

void addCrossEntropyCases(std::vector<ParityCase>& cases) {
  // (rows, vocab): one logit, a small vocabulary, one past a block's stride, the full Qwen2.5
  // vocabulary, and many rows of a Llama-sized one.
  const std::int64_t shapes[][2] = {{1, 1}, {7, 1000}, {33, 4097}, {4, 151936}, {130, 32000}};
  for (const auto& rv : shapes) {
    const std::int64_t rows = rv[0];
    const std::int64_t vocab = rv[1];
    cases.push_back({"cross_entropy_forward", dims({{"rows", rows}, {"vocab", vocab}}),
                     kF32Reduction, [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       const Shape shape{rows, vocab};
                       const std::vector<float> logits = bf16Normal(rng, shape, 3.0f);
                       std::vector<std::int32_t> targets = randomInts(
                           rng, static_cast<std::size_t>(rows), static_cast<std::int32_t>(vocab));
                       for (std::size_t r = 1; r < targets.size(); r += 3) {
                         targets[r] = compute::kIgnoreTarget;  // prompt tokens: no loss
                       }
                       return compareBackends(
                           cpu, gpu, {"losses", "logsumexp"}, kF32Reduction, [&](Backend& be) {
                             const Tensor l =
                                 be.upload(logits, be.capabilities().activationDType, shape);
                             Tensor losses = be.empty(DType::F32, {rows});
                             Tensor lse = be.empty(DType::F32, {rows});
                             be.crossEntropyForward(l, targets, losses, lse);
                             return OpOutputs{be.download(losses), be.download(lse)};
                           });
                     }});
  }
  cases.push_back({"cross_entropy_forward", "vocab=10 target=-1 (out of range)", kF32Reduction,
                   [](Backend& cpu, Backend& gpu, std::mt19937&) {
                     return std::vector<Comparison>{
                         compareShapeErrors(cpu, gpu, "target -1 of row 2", [](Backend& be) {
                           const Tensor logits = be.upload(
                               std::vector<float>(30), be.capabilities().activationDType, {3, 10});
                           Tensor losses = be.empty(DType::F32, {3});
                           Tensor lse = be.empty(DType::F32, {3});
                           const std::int32_t targets[] = {0, compute::kIgnoreTarget, -1};
                           be.crossEntropyForward(logits, targets, losses, lse);
                         })};
                   }});
}

}  // namespace

std::vector<ParityCase> elementwiseCases() {
  std::vector<ParityCase> cases;
  addEmbeddingCases(cases);
  addRopeCases(cases);
  addSwigluCases(cases);
  addInPlaceCases(cases);
  addCrossEntropyCases(cases);
  return cases;
}

}  // namespace lorascope::parity
