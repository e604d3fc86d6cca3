// parity/cases_attention.cpp — causal GQA attention forward/backward and generation's attention
// over a KV cache: HIP (bf16 in/out, fp32 math) against CPU (fp32, one row at a time).
//
// Shapes cover S = 1, odd S below one tile (13, 77), S that is not a tile multiple (300), long
// sequences (1024, 2048), batch 1-3, GQA ratios 1, 2, 4 and 7 (Qwen2.5-0.5B has 14/2), head dims
// 64 and 128 (the kernels' native sizes) and 32, 80, 100 and 256 (zero-padded inside the
// kernels). Head dims up to 128 run on the matrix-core kernels where the GPU has them (bf16
// operands, P and dS rounded to bf16 before their second product, as FlashAttention-2 does);
// 256 runs on the vector-ALU kernels, so both are covered on such a GPU. One
// case scales q up so the softmax is sharp and the online max does the work. A last case checks
// that the GPU refuses a head dim beyond its kernels (320) by name. The last five cases add
// sliding windows (5, 17, 100, 300 keys) and soft-capped scores (caps 3, 5, 50). One case runs
// the GPU backward twice and wants the same bits (no atomics). The document cases pack each row
// with documents of 1 to 2·L tokens (train/Batching.h, Note [document packing]): starts inside
// and on the kernels' 64-row blocks and 16-row waves, at both head dims of the matrix cores and
// 256 on the vector kernels, with a window and a soft-cap, and a case of one-token documents.
//
// Tolerances: both backends see identical bf16 inputs and compute in fp32; the outputs out, dq,
// dk, dv are rounded to bf16 once on the GPU (relative error ≤ 2^-9 ≈ 2e-3), so they get the
// RMSNorm bound of four times that plus 4e-3·rms for elements near zero, where the fp32
// summation order (tiles vs one row) shows. logsumexp stays fp32 on both sides: 1e-5 relative.
// The gradients also get an absolute floor of 1e-5: with one visible key (S = 1) dq and dk are
// zero in exact arithmetic (dout·v − dout·out = 0), and what remains is the fp32 rounding of
// two hd-term dot products of order-1 inputs (hd · 2^-24 ≈ 4e-6 at hd 64).
#include <cmath>

#include "ParityHarness.h"
#include "compute/Errors.h"

namespace lorascope::parity {
namespace {

using compute::Backend;
using compute::DType;
using compute::Tensor;

constexpr Tolerance kBf16Output{4e-3, 8e-3};
constexpr Tolerance kLogsumexp{1e-5, 1e-5};
constexpr Tolerance kGradient{4e-3, 8e-3, 1e-5};

struct AttentionCase {
  std::int64_t batch, seq, heads, kvHeads, headDim;
  float qStddev;                    // 1: scores of order 1; larger: a sharp softmax
  std::int64_t window = 0;          // sliding window (Mistral, Gemma); 0 = full causal
  float softcap = 0.0f;             // score soft-capping (Gemma 2); 0 = off
  std::int64_t documentLength = 0;  // > 0: rows pack documents of 1 .. 2× this many tokens
};

struct AttentionInputs {
  compute::Shape qShape, kvShape, statShape;
  std::vector<float> q, k, v, dout;
  std::vector<std::int32_t> documentStarts;  // (B, S) or empty
  float scale = 1.0f;
  std::int64_t window = 0;
  float softcap = 0.0f;
  compute::AttentionOptions options() const {
    compute::AttentionOptions o{scale, window, softcap};
    o.documentStarts = documentStarts;
    return o;
  }
};

// Each row of (batch, seq) cut into documents of 1 .. 2·length tokens drawn from `rng`: every
// token's document's start.
std::vector<std::int32_t> packedDocumentStarts(std::mt19937& rng, std::int64_t batch,
                                               std::int64_t seq, std::int64_t length) {
  std::uniform_int_distribution<std::int64_t> lengths(1, 2 * length);
  std::vector<std::int32_t> starts(static_cast<std::size_t>(batch * seq));
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t start = 0;
    std::int64_t next = lengths(rng);
    for (std::int64_t i = 0; i < seq; ++i) {
      if (i == next) {
        start = i;
        next = i + lengths(rng);
      }
      starts[static_cast<std::size_t>(b * seq + i)] = static_cast<std::int32_t>(start);
    }
  }
  return starts;
}

AttentionInputs makeInputs(std::mt19937& rng, const AttentionCase& c) {
  AttentionInputs in;
  in.qShape = {c.batch, c.seq, c.heads, c.headDim};
  in.kvShape = {c.batch, c.seq, c.kvHeads, c.headDim};
  in.statShape = {c.batch, c.heads, c.seq};
  const auto qCount = static_cast<std::size_t>(compute::numelOf(in.qShape));
  const auto kvCount = static_cast<std::size_t>(compute::numelOf(in.kvShape));
  in.q = roundTo(DType::BF16, randomNormal(rng, qCount, 0.0f, c.qStddev));
  in.k = roundTo(DType::BF16, randomNormal(rng, kvCount, 0.0f, 1.0f));
  in.v = roundTo(DType::BF16, randomNormal(rng, kvCount, 0.0f, 1.0f));
  in.dout = roundTo(DType::BF16, randomNormal(rng, qCount, 0.0f, 1.0f));
  in.scale = 1.0f / std::sqrt(static_cast<float>(c.headDim));
  in.window = c.window;
  in.softcap = c.softcap;
  if (c.documentLength > 0) {
    in.documentStarts = packedDocumentStarts(rng, c.batch, c.seq, c.documentLength);
  }
  return in;
}

// q, k, v of `in` on backend `be`, in its activation dtype.
struct QkvTensors {
  Tensor q, k, v;
};
QkvTensors uploadQkv(Backend& be, const AttentionInputs& in) {
  const DType act = be.capabilities().activationDType;
  return {be.upload(in.q, act, in.qShape), be.upload(in.k, act, in.kvShape),
          be.upload(in.v, act, in.kvShape)};
}

std::vector<Comparison> runForward(Backend& cpu, Backend& gpu, const AttentionInputs& in) {
  std::vector<float> outputs[2][2];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    const QkvTensors qkv = uploadQkv(be, in);
    Tensor out = be.empty(be.capabilities().activationDType, in.qShape);
    Tensor lse = be.empty(DType::F32, in.statShape);
    be.attentionForward(qkv.q, qkv.k, qkv.v, in.options(), out, lse);
    outputs[b][0] = be.download(out);
    outputs[b][1] = be.download(lse);
  }
  return {compareOutputs("out", outputs[0][0], outputs[1][0], kBf16Output),
          compareOutputs("logsumexp", outputs[0][1], outputs[1][1], kLogsumexp)};
}

std::vector<Comparison> runBackward(Backend& cpu, Backend& gpu, const AttentionInputs& in) {
  // Both backends get the CPU forward's out (rounded to bf16, as the GPU stores it) and
  // logsumexp, so the comparison isolates the backward kernels.
  std::vector<float> outValues;
  std::vector<float> lseValues;
  {
    const QkvTensors qkv = uploadQkv(cpu, in);
    Tensor out = cpu.empty(DType::F32, in.qShape);
    Tensor lse = cpu.empty(DType::F32, in.statShape);
    cpu.attentionForward(qkv.q, qkv.k, qkv.v, in.options(), out, lse);
    outValues = roundTo(DType::BF16, cpu.download(out));
    lseValues = cpu.download(lse);
  }
  std::vector<float> grads[2][3];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    const DType act = be.capabilities().activationDType;
    const QkvTensors qkv = uploadQkv(be, in);
    const Tensor dout = be.upload(in.dout, act, in.qShape);
    const Tensor out = be.upload(outValues, act, in.qShape);
    const Tensor lse = be.upload(lseValues, DType::F32, in.statShape);
    Tensor dq = be.empty(act, in.qShape);
    Tensor dk = be.empty(act, in.kvShape);
    Tensor dv = be.empty(act, in.kvShape);
    be.attentionBackward(dout, qkv.q, qkv.k, qkv.v, out, lse, in.options(), dq, dk, dv);
    grads[b][0] = be.download(dq);
    grads[b][1] = be.download(dk);
    grads[b][2] = be.download(dv);
  }
  return {compareOutputs("dq", grads[0][0], grads[1][0], kGradient),
          compareOutputs("dk", grads[0][1], grads[1][1], kGradient),
          compareOutputs("dv", grads[0][2], grads[1][2], kGradient)};
}

// The backward has no atomics (dk/dv are summed over the KV group in a fixed order), so two runs
// on the same inputs give the same bits: compared with a zero tolerance. The CPU backend is not
// involved.
std::vector<Comparison> runBackwardTwice(Backend& gpu, const AttentionInputs& in) {
  const DType act = gpu.capabilities().activationDType;
  const QkvTensors qkv = uploadQkv(gpu, in);
  const Tensor dout = gpu.upload(in.dout, act, in.qShape);
  Tensor out = gpu.empty(act, in.qShape);
  Tensor lse = gpu.empty(DType::F32, in.statShape);
  gpu.attentionForward(qkv.q, qkv.k, qkv.v, in.options(), out, lse);
  std::vector<float> grads[2][3];
  for (auto& run : grads) {
    Tensor dq = gpu.empty(act, in.qShape);
    Tensor dk = gpu.empty(act, in.kvShape);
    Tensor dv = gpu.empty(act, in.kvShape);
    gpu.attentionBackward(dout, qkv.q, qkv.k, qkv.v, out, lse, in.options(), dq, dk, dv);
    run[0] = gpu.download(dq);
    run[1] = gpu.download(dk);
    run[2] = gpu.download(dv);
  }
  return {compareOutputs("dq (run 2 vs 1)", grads[0][0], grads[1][0], Tolerance{}),
          compareOutputs("dk (run 2 vs 1)", grads[0][1], grads[1][1], Tolerance{}),
          compareOutputs("dv (run 2 vs 1)", grads[0][2], grads[1][2], Tolerance{})};
}

// Generation's attention over a KV cache (Backend::attentionCached): `queries` new rows at the
// end of `keys` cached positions, batch 1.
struct CachedCase {
  std::int64_t queries, keys, heads, kvHeads, headDim;
  std::int64_t window = 0;  // Mistral's and Gemma's sliding layers
  float softcap = 0.0f;     // Gemma 2's attention soft-cap
};

std::vector<Comparison> runCached(Backend& cpu, Backend& gpu, std::mt19937& rng,
                                  const CachedCase& c) {
  const compute::Shape qShape{c.queries, c.heads, c.headDim};
  const compute::Shape kvShape{c.keys, c.kvHeads, c.headDim};
  const auto q =
      roundTo(DType::BF16,
              randomNormal(rng, static_cast<std::size_t>(compute::numelOf(qShape)), 0.0f, 1.0f));
  const auto kvCount = static_cast<std::size_t>(compute::numelOf(kvShape));
  const auto k = roundTo(DType::BF16, randomNormal(rng, kvCount, 0.0f, 1.0f));
  const auto v = roundTo(DType::BF16, randomNormal(rng, kvCount, 0.0f, 1.0f));
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.headDim));
  std::vector<float> outputs[2];
  Backend* backends[2] = {&cpu, &gpu};
  for (int b = 0; b < 2; ++b) {
    Backend& be = *backends[b];
    const DType act = be.capabilities().activationDType;
    Tensor out = be.empty(act, qShape);
    be.attentionCached(be.upload(q, act, qShape), be.upload(k, act, kvShape),
                       be.upload(v, act, kvShape), {scale, c.window, c.softcap}, out);
    outputs[b] = be.download(out);
  }
  return {compareOutputs("out", outputs[0], outputs[1], kBf16Output)};
}

// The GPU kernels hold a row's head dim in registers up to 256; a larger one (which the CPU
// computes) must be refused with a ShapeError naming the op and the head dim, not computed wrongly.
std::vector<Comparison> runRejectsHeadDim(Backend& gpu) {
  constexpr std::int64_t headDim = 320;
  const compute::Shape shape{1, 3, 2, headDim};
  const Tensor q = gpu.upload(std::vector<float>(2 * 3 * headDim, 0.5f), DType::BF16, shape);
  Tensor out = gpu.empty(DType::BF16, shape);
  Tensor lse = gpu.empty(DType::F32, {1, 2, 3});
  Comparison result;
  result.output = "rejects head_dim 320";
  result.failures = 1;
  try {
    gpu.attentionForward(q, q, q, 1.0f, out, lse);
  } catch (const compute::ShapeError& e) {
    const bool named =
        std::string(e.what()).find("attention_forward: head_dim 320") != std::string::npos;
    result.failures = named ? 0 : 1;
  }
  result.worstRatio = static_cast<double>(result.failures);
  return {result};
}

}  // namespace

std::vector<ParityCase> attentionCases() {
  const AttentionCase shapes[] = {
      {1, 1, 2, 1, 64, 1.0f},
      {2, 13, 4, 4, 64, 1.0f},
      {3, 13, 14, 2, 64, 1.0f},
      {1, 77, 7, 1, 80, 1.0f},
      {2, 300, 14, 2, 64, 1.0f},
      {1, 300, 8, 4, 128, 1.0f},
      {1, 300, 4, 2, 64, 4.0f},
      {1, 65, 4, 2, 32, 1.0f},
      {1, 40, 2, 2, 256, 1.0f},
      {1, 1024, 4, 2, 64, 1.0f},
      {1, 1024, 2, 1, 128, 1.0f},
      {1, 2048, 2, 1, 64, 1.0f},
      // The matrix-core kernels' edges: a head dim that is not a whole number of 16-byte rows
      // (100: element-wise tile loads), Llama-3.1-8B's heads at a length that is not a multiple
      // of their 64-row blocks, and a sharp softmax at head dim 128.
      {1, 150, 4, 2, 100, 1.0f},
      {1, 1000, 8, 2, 128, 1.0f},
      {2, 200, 4, 4, 128, 4.0f},
      // Sliding windows (shorter than a tile, not a tile multiple, longer than a tile) and
      // soft-capped scores, as Mistral and Gemma 2/3 run them.
      {2, 77, 4, 2, 64, 1.0f, 5},
      {1, 300, 8, 4, 128, 1.0f, 100},
      {1, 1024, 4, 2, 64, 1.0f, 300, 50.0f},
      {1, 300, 4, 2, 256, 4.0f, 0, 5.0f},
      {2, 130, 4, 1, 80, 4.0f, 17, 3.0f},
      // Packed documents (block-diagonal causal attention), Qwen2.5-0.5B's heads at its packed
      // length, Llama's head dim, the vector kernels' 256, with a window and a soft-cap.
      {2, 512, 14, 2, 64, 1.0f, 0, 0.0f, 120},
      {1, 300, 8, 4, 128, 1.0f, 0, 0.0f, 40},
      {1, 300, 4, 2, 256, 4.0f, 0, 0.0f, 70},
      {2, 300, 4, 2, 64, 1.0f, 17, 0.0f, 30},
      {1, 200, 4, 1, 80, 4.0f, 0, 3.0f, 50},
      {1, 77, 4, 2, 64, 1.0f, 0, 0.0f, 1},
  };
  std::vector<ParityCase> cases;
  for (const AttentionCase& c : shapes) {
    std::string shape = "B=" + std::to_string(c.batch) + " S=" + std::to_string(c.seq) +
                        " heads=" + std::to_string(c.heads) + "/" + std::to_string(c.kvHeads) +
                        " hd=" + std::to_string(c.headDim);
    if (c.qStddev != 1.0f) {
      shape += " sharp";
    }
    if (c.window > 0) {
      shape += " window=" + std::to_string(c.window);
    }
    if (c.softcap > 0.0f) {
      shape += " softcap=" + std::to_string(static_cast<int>(c.softcap));
    }
    if (c.documentLength > 0) {
      shape += " documents~" + std::to_string(c.documentLength);
    }
    cases.push_back({"attention_forward", shape, kBf16Output,
                     [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       return runForward(cpu, gpu, makeInputs(rng, c));
                     }});
    cases.push_back({"attention_backward", shape, kGradient,
                     [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       return runBackward(cpu, gpu, makeInputs(rng, c));
                     }});
  }
  const AttentionCase repeated{2, 300, 14, 2, 64, 1.0f};
  cases.push_back({"attention_backward", "B=2 S=300 heads=14/2 hd=64 deterministic", Tolerance{},
                   [=](Backend&, Backend& gpu, std::mt19937& rng) {
                     return runBackwardTwice(gpu, makeInputs(rng, repeated));
                   }});
  // One new token over caches of 1 to 1030 positions (decoding), and the prompt pass (S = keys);
  // sliding windows shorter and longer than a 128-key chunk, and soft-capped scores.
  const CachedCase cached[] = {{1, 1, 2, 1, 64},
                               {1, 77, 14, 2, 64},
                               {1, 300, 8, 4, 128},
                               {1, 1030, 4, 2, 80},
                               {3, 200, 4, 1, 256},
                               {13, 13, 4, 2, 64},
                               {1, 300, 8, 4, 128, 5},
                               {3, 1030, 4, 2, 80, 300},
                               {13, 13, 4, 2, 64, 4, 0},
                               {1, 300, 4, 2, 256, 0, 5.0f},
                               {2, 200, 4, 1, 64, 17, 3.0f}};
  for (const CachedCase& c : cached) {
    std::string shape = "S=" + std::to_string(c.queries) + " keys=" + std::to_string(c.keys) +
                        " heads=" + std::to_string(c.heads) + "/" + std::to_string(c.kvHeads) +
                        " hd=" + std::to_string(c.headDim);
    if (c.window > 0) {
      shape += " window=" + std::to_string(c.window);
    }
    if (c.softcap > 0.0f) {
      shape += " softcap=" + std::to_string(static_cast<int>(c.softcap));
    }
    cases.push_back({"attention_cached", shape, kBf16Output,
                     [=](Backend& cpu, Backend& gpu, std::mt19937& rng) {
                       return runCached(cpu, gpu, rng, c);
                     }});
  }
  cases.push_back({"attention_forward", "B=1 S=3 heads=2/2 hd=320 rejected", Tolerance{},
                   [](Backend&, Backend& gpu, std::mt19937&) { return runRejectsHeadDim(gpu); }});
  return cases;
}

}  // namespace lorascope::parity
