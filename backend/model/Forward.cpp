// Forward.cpp — the decoder stack, top to bottom:
//   x = embed(ids) (· √H for Gemma)
//   per layer:  h = rmsnorm(x);  q,k,v = h·Wqᵀ(+b), h·Wkᵀ(+b), h·Wvᵀ(+b)
//               [Qwen3, Gemma 3: q, k = rmsnorm per head (q_norm, k_norm)];  rope(q), rope(k)
//               a = attention(q, k, v)·Woᵀ(+b)   (sliding window / soft-capped where the layer is)
//               x += a   [Gemma: x += rmsnorm(a), post_attention_layernorm]
//               h = rmsnorm(x);  m = (act(h·Wgᵀ) ⊙ h·Wuᵀ)·Wdᵀ,  act = silu, or gelu_tanh (Gemma)
//               x += m   [Gemma: x += rmsnorm(m), post_feedforward_layernorm]
//   logits = rmsnorm(x)·Wlmᵀ [Gemma 2: cap·tanh(logits / cap)];
//   loss = mean over t of CE(logits[t], labels[t+1])
// The layer code is shared with the training graph (train/TrainGraph.cpp), which adds LoRA
// through a ProjectionHook and keeps each layer's activations for its backward pass. q, k, v (and
// gate, up) are one Backend::projectionProducts each: on the CPU backend one launch over their
// GEMMs' tiles.
#include "model/Forward.h"

#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "compute/Bf16.h"  // defines: roundToBf16
#include "compute/Errors.h"
#include "model/KvCache.h"  // defines: KvCache::attend
#include "model/ModelError.h"
#include "runtime/OpTiming.h"

namespace lorascope::model {
namespace {

using compute::Backend;
using compute::Tensor;

// y = x·Wᵀ (+ bias) (+ the hook's term), then the hook.   x (T, in), W (out, in), bias (out) or
// undefined, y (T, out)
void project(Backend& backend, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
             int layer, Projection projection, ProjectionHook* hook) {
  compute::ProjectionProduct product{&x, &w, true, &y, bias.defined() ? &bias : nullptr};
  if (hook != nullptr) {
    hook->setTerm(layer, projection, x, product);
  }
  {
    const runtime::gpu::OpTimingScope timing("projection_forward");
    backend.projectionProducts(std::span(&product, 1));
  }
  if (hook != nullptr) {
    hook->afterProjection(layer, projection, x, y);
  }
}

// One output of projectTogether.
struct Projected {
  const Tensor& w;
  const Tensor& bias;
  Tensor& y;
  Projection projection;
};

// The projections of one input (q, k, v; gate, up) as project() each, in one
// Backend::projectionProducts (on the CPU backend one launch for their GEMMs and one for their
// terms).
template <std::size_t N>
void projectTogether(Backend& backend, const Tensor& x, const std::array<Projected, N>& outs,
                     int layer, ProjectionHook* hook) {
  std::array<compute::ProjectionProduct, N> products;
  for (std::size_t i = 0; i < N; ++i) {
    products[i] = {&x, &outs[i].w, true, &outs[i].y,
                   outs[i].bias.defined() ? &outs[i].bias : nullptr};
    if (hook != nullptr) {
      hook->setTerm(layer, outs[i].projection, x, products[i]);
    }
  }
  {
    const runtime::gpu::OpTimingScope timing("projection_forward");
    backend.projectionProducts(products);
  }
  if (hook != nullptr) {
    for (const Projected& o : outs) {
      hook->afterProjection(layer, o.projection, x, o.y);
    }
  }
}

}  // namespace

void ProjectionHook::setTerm(int /*layer*/, Projection /*projection*/, const Tensor& /*x*/,
                             compute::ProjectionProduct& /*product*/) {}

void ProjectionHook::afterProjection(int /*layer*/, Projection /*projection*/, const Tensor& /*x*/,
                                     Tensor& /*y*/) {}

LayerActivations::LayerActivations(Backend& backend, const ModelConfig& c, std::int64_t batch,
                                   std::int64_t seq, const LayerActivations* normsFrom,
                                   std::int64_t h1Spare, std::int64_t h2Spare) {
  const compute::DType act = backend.capabilities().activationDType;
  const std::int64_t tokens = batch * seq;
  // A normed input, (T, H) or a column view of (T, H + spare) kept in `wide`.
  const auto normed = [&](std::int64_t spare, Tensor& wide) {
    if (spare == 0) {
      return backend.empty(act, {tokens, c.hiddenSize});
    }
    wide = backend.empty(act, {tokens, c.hiddenSize + spare});
    return wide.columns(0, c.hiddenSize);
  };
  if (normsFrom != nullptr) {
    h1Wide = normsFrom->h1Wide;
    h2Wide = normsFrom->h2Wide;
  }
  h1 = normsFrom != nullptr ? normsFrom->h1 : normed(h1Spare, h1Wide);
  rstd1 = backend.empty(compute::DType::F32, {tokens});
  q = backend.empty(act, {tokens, c.numHeads * c.headDim});
  k = backend.empty(act, {tokens, c.numKvHeads * c.headDim});
  v = backend.empty(act, {tokens, c.numKvHeads * c.headDim});
  if (c.qkNorm) {
    qRaw = backend.empty(act, {tokens, c.numHeads * c.headDim});
    kRaw = backend.empty(act, {tokens, c.numKvHeads * c.headDim});
    rstdQ = backend.empty(compute::DType::F32, {tokens * c.numHeads});
    rstdK = backend.empty(compute::DType::F32, {tokens * c.numKvHeads});
  }
  attention = backend.empty(act, {tokens, c.numHeads * c.headDim});
  logsumexp = backend.empty(compute::DType::F32, {batch, c.numHeads, seq});
  if (c.sandwichNorms) {
    attentionOut = backend.empty(act, {tokens, c.hiddenSize});
    rstdAttentionOut = backend.empty(compute::DType::F32, {tokens});
    mlpOut = backend.empty(act, {tokens, c.hiddenSize});
    rstdMlpOut = backend.empty(compute::DType::F32, {tokens});
  }
  xMid = backend.empty(act, {tokens, c.hiddenSize});
  h2 = normsFrom != nullptr ? normsFrom->h2 : normed(h2Spare, h2Wide);
  rstd2 = backend.empty(compute::DType::F32, {tokens});
  gate = backend.empty(act, {tokens, c.intermediateSize});
  up = backend.empty(act, {tokens, c.intermediateSize});
  swiglu = backend.empty(act, {tokens, c.intermediateSize});
}

SequenceLayout makeSequenceLayout(Backend& backend, const ModelConfig& c, std::int64_t batch,
                                  std::int64_t seq, std::span<const std::int32_t> documentStarts,
                                  std::span<const std::int32_t> positions) {
  SequenceLayout layout;
  layout.batch = batch;
  layout.seq = seq;
  layout.documentStarts = documentStarts;
  layout.inputPositions = positions;
  if (positions.empty()) {
    layout.positions.resize(static_cast<std::size_t>(batch * seq));
    for (std::size_t t = 0; t < layout.positions.size(); ++t) {
      const std::int32_t start = documentStarts.empty() ? 0 : documentStarts[t];
      layout.positions[t] = static_cast<std::int32_t>(static_cast<std::int64_t>(t) % seq) - start;
    }
  }
  const compute::Shape half{c.headDim / 2};
  layout.invFreq = backend.upload(ropeInverseFrequencies(c), compute::DType::F32, half);
  if (c.localRope) {
    layout.invFreqLocal =
        backend.upload(ropeInverseFrequencies(*c.localRope, c.headDim), compute::DType::F32, half);
  }
  layout.attentionScale = static_cast<float>(c.scoreScale());
  layout.attentionSoftcap = static_cast<float>(c.attentionLogitSoftcap);
  layout.slidingWindow = c.slidingWindow;
  for (std::int64_t l = 0; l < c.numLayers; ++l) {
    layout.slidingLayers.push_back(c.isSlidingLayer(l));
  }
  return layout;
}

void decoderLayerForward(Backend& backend, const ModelConfig& c, const LayerWeights& l, int layer,
                         const SequenceLayout& s, const Tensor& xIn, Tensor& xOut,
                         LayerActivations& a, ProjectionHook* hook) {
  const std::int64_t tokens = s.batch * s.seq;
  const auto eps = static_cast<float>(c.rmsNormEps);
  backend.rmsnormForward(xIn, l.inputNorm, eps, a.h1, a.rstd1);
  projectTogether<3>(backend, a.h1,
                     {{{l.q, l.qBias, c.qkNorm ? a.qRaw : a.q, Projection::Q},
                       {l.k, l.kBias, c.qkNorm ? a.kRaw : a.k, Projection::K},
                       {l.v, l.vBias, a.v, Projection::V}}},
                     layer, hook);
  if (c.qkNorm) {  // one RMSNorm row per head
    Tensor qHeads = a.q.viewAs({tokens * c.numHeads, c.headDim});
    Tensor kHeads = a.k.viewAs({tokens * c.numKvHeads, c.headDim});
    backend.rmsnormForward(a.qRaw.viewAs(qHeads.shape()), l.qNorm, eps, qHeads, a.rstdQ);
    backend.rmsnormForward(a.kRaw.viewAs(kHeads.shape()), l.kNorm, eps, kHeads, a.rstdK);
  }
  Tensor q = a.q.viewAs({tokens, c.numHeads, c.headDim});
  Tensor k = a.k.viewAs({tokens, c.numKvHeads, c.headDim});
  backend.rope(q, s.ropePositions(), s.invFreqOf(layer), false);
  backend.rope(k, s.ropePositions(), s.invFreqOf(layer), false);
  if (s.cache != nullptr) {
    Tensor attention = a.attention.viewAs({tokens, c.numHeads, c.headDim});
    s.cache->attend(backend, layer, q, s.attentionOf(layer), attention);
  } else {
    Tensor attention = a.attention.viewAs({s.batch, s.seq, c.numHeads, c.headDim});
    backend.attentionForward(q.viewAs({s.batch, s.seq, c.numHeads, c.headDim}),
                             k.viewAs({s.batch, s.seq, c.numKvHeads, c.headDim}),
                             a.v.viewAs({s.batch, s.seq, c.numKvHeads, c.headDim}),
                             s.attentionOf(layer), attention, a.logsumexp);
  }
  if (c.sandwichNorms) {
    project(backend, a.attention, l.o, l.oBias, a.attentionOut, layer, Projection::O, hook);
    backend.rmsnormForward(a.attentionOut, l.postNorm, eps, a.xMid, a.rstdAttentionOut);
  } else {
    project(backend, a.attention, l.o, l.oBias, a.xMid, layer, Projection::O, hook);
  }
  backend.addInPlace(a.xMid, xIn);  // residual (x + y == y + x bit for bit)

  backend.rmsnormForward(a.xMid, c.sandwichNorms ? l.preMlpNorm : l.postNorm, eps, a.h2, a.rstd2);
  projectTogether<2>(
      backend, a.h2,
      {{{l.gate, l.gateBias, a.gate, Projection::Gate}, {l.up, l.upBias, a.up, Projection::Up}}},
      layer, hook);
  if (c.mlpActivation == MlpActivation::GeluTanh) {
    backend.gegluForward(a.gate, a.up, a.swiglu);
  } else {
    backend.swigluForward(a.gate, a.up, a.swiglu);
  }
  if (c.sandwichNorms) {
    project(backend, a.swiglu, l.down, l.downBias, a.mlpOut, layer, Projection::Down, hook);
    backend.rmsnormForward(a.mlpOut, l.postMlpNorm, eps, xOut, a.rstdMlpOut);
  } else {
    project(backend, a.swiglu, l.down, l.downBias, xOut, layer, Projection::Down, hook);
  }
  backend.addInPlace(xOut, a.xMid);
}

void embedTokens(Backend& backend, const ModelConfig& c, const ModelWeights& weights,
                 std::span<const std::int32_t> ids, Tensor& x) {
  backend.embeddingForward(weights.embed, ids, x);
  if (c.embeddingScale != 1.0) {
    // transformers' Gemma takes the normaliser in the activations' dtype (√2304 = 48 is exact in
    // bf16, Gemma 3 1B's √1152 becomes 34): the same factor here, so bf16 runs match its bf16.
    const auto factor = static_cast<float>(c.embeddingScale);
    backend.scaleActivations(
        x, x.dtype() == compute::DType::BF16 ? compute::roundToBf16(factor) : factor);
  }
}

void checkForwardInput(const ModelConfig& /*config*/, const ForwardInput& in) {
  const auto tokens = static_cast<std::size_t>(in.batch * in.seq);
  if (in.batch <= 0 || in.seq <= 0 || in.ids.size() != tokens) {
    throw compute::ShapeError("forward: " + std::to_string(in.ids.size()) + " ids for batch " +
                              std::to_string(in.batch) + " × seq " + std::to_string(in.seq));
  }
  if (!in.labels.empty() && in.labels.size() != tokens) {
    throw compute::ShapeError("forward: " + std::to_string(in.labels.size()) + " labels for " +
                              std::to_string(tokens) + " ids");
  }
  if (!in.documentStarts.empty()) {
    compute::checkDocumentStarts("forward", in.documentStarts, in.batch, in.seq);
  }
  if (!in.positions.empty()) {
    if (in.positions.size() != tokens) {
      throw compute::ShapeError("forward: " + std::to_string(in.positions.size()) +
                                " positions for " + std::to_string(tokens) + " ids");
    }
    for (std::size_t t = 0; t < tokens; ++t) {
      const std::int32_t start = in.documentStarts.empty() ? 0 : in.documentStarts[t];
      const auto want = static_cast<std::int32_t>(static_cast<std::int64_t>(t) % in.seq) - start;
      if (in.positions[t] != want) {
        throw compute::ShapeError("forward: position " + std::to_string(in.positions[t]) +
                                  " of token " + std::to_string(t) + " is not " +
                                  std::to_string(want) + " (its offset less its document's start)");
      }
    }
  }
}

std::vector<std::int32_t> shiftedTargets(const ForwardInput& in) {
  std::vector<std::int32_t> targets(in.ids.size(), compute::kIgnoreTarget);
  for (std::int64_t b = 0; b < in.batch; ++b) {
    for (std::int64_t t = 0; t + 1 < in.seq; ++t) {
      targets[static_cast<std::size_t>(b * in.seq + t)] =
          in.labels[static_cast<std::size_t>(b * in.seq + t + 1)];
    }
  }
  return targets;
}

ForwardResult forward(Backend& backend, const ModelConfig& c, const ModelWeights& weights,
                      const ForwardInput& in) {
  checkForwardInput(c, in);
  const std::int64_t tokens = in.batch * in.seq;
  const compute::DType act = backend.capabilities().activationDType;
  const SequenceLayout layout =
      makeSequenceLayout(backend, c, in.batch, in.seq, in.documentStarts, in.positions);
  LayerActivations acts(backend, c, in.batch, in.seq);
  Tensor x = backend.empty(act, {tokens, c.hiddenSize});  // (T, H) residual stream
  Tensor next = backend.empty(act, {tokens, c.hiddenSize});
  embedTokens(backend, c, weights, in.ids, x);
  for (std::size_t i = 0; i < weights.layers.size(); ++i) {
    decoderLayerForward(backend, c, weights.layers[i], static_cast<int>(i), layout, x, next, acts,
                        nullptr);
    std::swap(x, next);
  }
  backend.rmsnormForward(x, weights.finalNorm, static_cast<float>(c.rmsNormEps), acts.h1,
                         acts.rstd1);
  ForwardResult result;
  result.logits = backend.empty(act, {tokens, c.vocabSize});
  backend.matmul(acts.h1, false, weights.lmHead, true, result.logits, 1.0f, 0.0f);
  if (c.finalLogitSoftcap > 0.0) {
    backend.softcapInPlace(result.logits, static_cast<float>(c.finalLogitSoftcap));
  }

  if (in.labels.empty()) {
    return result;
  }
  const std::vector<std::int32_t> targets = shiftedTargets(in);
  Tensor losses = backend.empty(compute::DType::F32, {tokens});
  Tensor logsumexp = backend.empty(compute::DType::F32, {tokens});
  backend.crossEntropyForward(result.logits, targets, losses, logsumexp);
  const std::vector<float> lossValues = backend.download(losses);
  double sum = 0.0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] != compute::kIgnoreTarget) {
      sum += lossValues[i];
      ++result.predictedTokens;
    }
  }
  if (result.predictedTokens > 0) {
    result.loss = sum / static_cast<double>(result.predictedTokens);
  }
  return result;
}

}  // namespace lorascope::model
