// Forward.cpp — the decoder stack, top to bottom:
//   x = embed(ids)
//   per layer:  h = rmsnorm(x);  q,k,v = h·Wqᵀ(+b), h·Wkᵀ(+b), h·Wvᵀ(+b);  rope(q), rope(k)
//               x += attention(q, k, v)·Woᵀ(+b)
//               h = rmsnorm(x);  x += (silu(h·Wgᵀ) ⊙ h·Wuᵀ)·Wdᵀ
//   logits = rmsnorm(x)·Wlmᵀ;  loss = mean over t of CE(logits[t], labels[t+1])
#include "model/Forward.h"

#include <cmath>
#include <vector>

#include "compute/Errors.h"
#include "model/ModelError.h"

namespace lorascope::model {
namespace {

using compute::Backend;
using compute::Tensor;

// y = x·Wᵀ (+ bias).   x (T, in), W (out, in), bias (out) or undefined, y (T, out)
void linear(Backend& backend, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  backend.matmul(x, false, w, true, y, 1.0f, 0.0f);
  if (bias.defined()) {
    backend.addBias(y, bias);
  }
}

// Activations of one forward, allocated once and reused by every layer.
struct Workspace {
  Workspace(Backend& backend, const ModelConfig& c, std::int64_t batch, std::int64_t seq) {
    const compute::DType act = backend.capabilities().activationDType;
    const std::int64_t tokens = batch * seq;
    x = backend.empty(act, {tokens, c.hiddenSize});
    h = backend.empty(act, {tokens, c.hiddenSize});
    rstd = backend.empty(compute::DType::F32, {tokens});
    q = backend.empty(act, {tokens, c.numHeads * c.headDim});
    k = backend.empty(act, {tokens, c.numKvHeads * c.headDim});
    v = backend.empty(act, {tokens, c.numKvHeads * c.headDim});
    attention = backend.empty(act, {tokens, c.numHeads * c.headDim});
    logsumexp = backend.empty(compute::DType::F32, {batch, c.numHeads, seq});
    projected = backend.empty(act, {tokens, c.hiddenSize});
    gate = backend.empty(act, {tokens, c.intermediateSize});
    up = backend.empty(act, {tokens, c.intermediateSize});
    swiglu = backend.empty(act, {tokens, c.intermediateSize});
  }
  Tensor x, h;              // (T, H): residual stream, normalized input of a block
  Tensor rstd;              // (T) f32
  Tensor q, k, v;           // (T, heads·hd), (T, kv·hd), (T, kv·hd)
  Tensor attention;         // (T, heads·hd)
  Tensor logsumexp;         // (B, heads, S) f32
  Tensor projected;         // (T, H): a block's output before the residual add
  Tensor gate, up, swiglu;  // (T, I)
};

void attentionBlock(Backend& backend, const ModelConfig& c, const LayerWeights& l,
                    const ForwardInput& in, std::span<const std::int32_t> positions,
                    const Tensor& invFreq, Workspace& w) {
  const std::int64_t tokens = in.batch * in.seq;
  backend.rmsnormForward(w.x, l.inputNorm, static_cast<float>(c.rmsNormEps), w.h, w.rstd);
  linear(backend, w.h, l.q, l.qBias, w.q);
  linear(backend, w.h, l.k, l.kBias, w.k);
  linear(backend, w.h, l.v, l.vBias, w.v);
  Tensor q = w.q.viewAs({tokens, c.numHeads, c.headDim});
  Tensor k = w.k.viewAs({tokens, c.numKvHeads, c.headDim});
  backend.rope(q, positions, invFreq, false);
  backend.rope(k, positions, invFreq, false);
  Tensor attention = w.attention.viewAs({in.batch, in.seq, c.numHeads, c.headDim});
  backend.attentionForward(q.viewAs({in.batch, in.seq, c.numHeads, c.headDim}),
                           k.viewAs({in.batch, in.seq, c.numKvHeads, c.headDim}),
                           w.v.viewAs({in.batch, in.seq, c.numKvHeads, c.headDim}),
                           static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.headDim))),
                           attention, w.logsumexp);
  linear(backend, w.attention, l.o, l.oBias, w.projected);
  backend.addInPlace(w.x, w.projected);
}

void mlpBlock(Backend& backend, const ModelConfig& c, const LayerWeights& l, Workspace& w) {
  backend.rmsnormForward(w.x, l.postNorm, static_cast<float>(c.rmsNormEps), w.h, w.rstd);
  linear(backend, w.h, l.gate, l.gateBias, w.gate);
  linear(backend, w.h, l.up, l.upBias, w.up);
  backend.swigluForward(w.gate, w.up, w.swiglu);
  linear(backend, w.swiglu, l.down, l.downBias, w.projected);
  backend.addInPlace(w.x, w.projected);
}

void checkInput(const ModelConfig& c, const ForwardInput& in) {
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

// Shifted targets: position t predicts labels[t+1]; the last position of each row predicts none.
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

}  // namespace

ForwardResult forward(Backend& backend, const ModelConfig& c, const ModelWeights& weights,
                      const ForwardInput& in) {
  checkInput(c, in);
  const std::int64_t tokens = in.batch * in.seq;
  std::vector<std::int32_t> positions(static_cast<std::size_t>(tokens));
  for (std::int64_t t = 0; t < tokens; ++t) {
    positions[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(t % in.seq);
  }
  const std::vector<float> invFreqHost = ropeInverseFrequencies(c);
  const Tensor invFreq =
      backend.upload(invFreqHost, compute::DType::F32, {static_cast<std::int64_t>(c.headDim / 2)});

  Workspace w(backend, c, in.batch, in.seq);
  backend.embeddingForward(weights.embed, in.ids, w.x);
  for (const LayerWeights& layer : weights.layers) {
    attentionBlock(backend, c, layer, in, positions, invFreq, w);
    mlpBlock(backend, c, layer, w);
  }
  backend.rmsnormForward(w.x, weights.finalNorm, static_cast<float>(c.rmsNormEps), w.h, w.rstd);
  ForwardResult result;
  result.logits = backend.empty(backend.capabilities().activationDType, {tokens, c.vocabSize});
  backend.matmul(w.h, false, weights.lmHead, true, result.logits, 1.0f, 0.0f);

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
