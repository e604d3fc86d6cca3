// Forward.cpp — the decoder stack, top to bottom:
//   x = embed(ids)
//   per layer:  h = rmsnorm(x);  q,k,v = h·Wqᵀ(+b), h·Wkᵀ(+b), h·Wvᵀ(+b);  rope(q), rope(k)
//               x += attention(q, k, v)·Woᵀ(+b)
//               h = rmsnorm(x);  x += (silu(h·Wgᵀ) ⊙ h·Wuᵀ)·Wdᵀ
//   logits = rmsnorm(x)·Wlmᵀ;  loss = mean over t of CE(logits[t], labels[t+1])
// The layer code is shared with the training graph (train/TrainGraph.cpp), which adds LoRA
// through a ProjectionHook and keeps each layer's activations for its backward pass.
#include "model/Forward.h"

#include <cmath>
#include <utility>
#include <vector>

#include "compute/Errors.h"
#include "model/KvCache.h"  // defines: KvCache::attend
#include "model/ModelError.h"

namespace lorascope::model {
namespace {

using compute::Backend;
using compute::Tensor;

// y = x·Wᵀ (+ bias), then the hook.   x (T, in), W (out, in), bias (out) or undefined, y (T, out)
void project(Backend& backend, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y,
             int layer, Projection projection, ProjectionHook* hook) {
  backend.matmul(x, false, w, true, y, 1.0f, 0.0f);
  if (bias.defined()) {
    backend.addBias(y, bias);
  }
  if (hook != nullptr) {
    hook->afterProjection(layer, projection, x, y);
  }
}

}  // namespace

LayerActivations::LayerActivations(Backend& backend, const ModelConfig& c, std::int64_t batch,
                                   std::int64_t seq) {
  const compute::DType act = backend.capabilities().activationDType;
  const std::int64_t tokens = batch * seq;
  h1 = backend.empty(act, {tokens, c.hiddenSize});
  rstd1 = backend.empty(compute::DType::F32, {tokens});
  q = backend.empty(act, {tokens, c.numHeads * c.headDim});
  k = backend.empty(act, {tokens, c.numKvHeads * c.headDim});
  v = backend.empty(act, {tokens, c.numKvHeads * c.headDim});
  attention = backend.empty(act, {tokens, c.numHeads * c.headDim});
  logsumexp = backend.empty(compute::DType::F32, {batch, c.numHeads, seq});
  xMid = backend.empty(act, {tokens, c.hiddenSize});
  h2 = backend.empty(act, {tokens, c.hiddenSize});
  rstd2 = backend.empty(compute::DType::F32, {tokens});
  gate = backend.empty(act, {tokens, c.intermediateSize});
  up = backend.empty(act, {tokens, c.intermediateSize});
  swiglu = backend.empty(act, {tokens, c.intermediateSize});
}

SequenceLayout makeSequenceLayout(Backend& backend, const ModelConfig& c, std::int64_t batch,
                                  std::int64_t seq) {
  SequenceLayout layout;
  layout.batch = batch;
  layout.seq = seq;
  layout.positions.resize(static_cast<std::size_t>(batch * seq));
  for (std::size_t t = 0; t < layout.positions.size(); ++t) {
    layout.positions[t] = static_cast<std::int32_t>(static_cast<std::int64_t>(t) % seq);
  }
  const std::vector<float> invFreqHost = ropeInverseFrequencies(c);
  layout.invFreq =
      backend.upload(invFreqHost, compute::DType::F32, {static_cast<std::int64_t>(c.headDim / 2)});
  layout.attentionScale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.headDim)));
  return layout;
}

void decoderLayerForward(Backend& backend, const ModelConfig& c, const LayerWeights& l, int layer,
                         const SequenceLayout& s, const Tensor& xIn, Tensor& xOut,
                         LayerActivations& a, ProjectionHook* hook) {
  const std::int64_t tokens = s.batch * s.seq;
  const auto eps = static_cast<float>(c.rmsNormEps);
  backend.rmsnormForward(xIn, l.inputNorm, eps, a.h1, a.rstd1);
  project(backend, a.h1, l.q, l.qBias, a.q, layer, Projection::Q, hook);
  project(backend, a.h1, l.k, l.kBias, a.k, layer, Projection::K, hook);
  project(backend, a.h1, l.v, l.vBias, a.v, layer, Projection::V, hook);
  Tensor q = a.q.viewAs({tokens, c.numHeads, c.headDim});
  Tensor k = a.k.viewAs({tokens, c.numKvHeads, c.headDim});
  backend.rope(q, s.positions, s.invFreq, false);
  backend.rope(k, s.positions, s.invFreq, false);
  if (s.cache != nullptr) {
    Tensor attention = a.attention.viewAs({tokens, c.numHeads, c.headDim});
    s.cache->attend(backend, layer, q, s.attentionScale, attention);
  } else {
    Tensor attention = a.attention.viewAs({s.batch, s.seq, c.numHeads, c.headDim});
    backend.attentionForward(q.viewAs({s.batch, s.seq, c.numHeads, c.headDim}),
                             k.viewAs({s.batch, s.seq, c.numKvHeads, c.headDim}),
                             a.v.viewAs({s.batch, s.seq, c.numKvHeads, c.headDim}),
                             s.attentionScale, attention, a.logsumexp);
  }
  project(backend, a.attention, l.o, l.oBias, a.xMid, layer, Projection::O, hook);
  backend.addInPlace(a.xMid, xIn);  // residual (x + y == y + x bit for bit)

  backend.rmsnormForward(a.xMid, l.postNorm, eps, a.h2, a.rstd2);
  project(backend, a.h2, l.gate, l.gateBias, a.gate, layer, Projection::Gate, hook);
  project(backend, a.h2, l.up, l.upBias, a.up, layer, Projection::Up, hook);
  backend.swigluForward(a.gate, a.up, a.swiglu);
  project(backend, a.swiglu, l.down, l.downBias, xOut, layer, Projection::Down, hook);
  backend.addInPlace(xOut, a.xMid);
}

void checkForwardInput(const ModelConfig& c, const ForwardInput& in) {
  const auto tokens = static_cast<std::size_t>(in.batch * in.seq);
  if (in.batch <= 0 || in.seq <= 0 || in.ids.size() != tokens) {
    throw compute::ShapeError("forward: " + std::to_string(in.ids.size()) + " ids for batch " +
                              std::to_string(in.batch) + " × seq " + std::to_string(in.seq));
  }
  if (!in.labels.empty() && in.labels.size() != tokens) {
    throw compute::ShapeError("forward: " + std::to_string(in.labels.size()) + " labels for " +
                              std::to_string(tokens) + " ids");
  }
  if (c.slidingWindow > 0 && in.seq > c.slidingWindow) {
    throw UnsupportedModelError(
        "config.json", "sliding-window attention: seq " + std::to_string(in.seq) + " exceeds the " +
                           std::to_string(c.slidingWindow) + "-token window");
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
  const SequenceLayout layout = makeSequenceLayout(backend, c, in.batch, in.seq);
  LayerActivations acts(backend, c, in.batch, in.seq);
  Tensor x = backend.empty(act, {tokens, c.hiddenSize});  // (T, H) residual stream
  Tensor next = backend.empty(act, {tokens, c.hiddenSize});
  backend.embeddingForward(weights.embed, in.ids, x);
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
