// model/KvCache.cpp — the per-layer key/value rows and the decoder that fills them.
#include "model/KvCache.h"

#include <string>
#include <utility>

#include "model/ModelError.h"

namespace lorascope::model {

using compute::Backend;
using compute::Tensor;

KvCache::KvCache(Backend& backend, const ModelConfig& c, std::int64_t capacity)
    : capacity_(capacity) {
  const compute::DType act = backend.capabilities().activationDType;
  for (std::int64_t l = 0; l < c.numLayers; ++l) {
    keys_.push_back(backend.empty(act, {capacity, c.numKvHeads, c.headDim}));
    values_.push_back(backend.empty(act, {capacity, c.numKvHeads, c.headDim}));
  }
}

Tensor KvCache::nextKeys(int layer, std::int64_t count) const {
  const Tensor& k = keys_.at(static_cast<std::size_t>(layer));
  return k.rows(length_, count).viewAs({count, k.dim(1) * k.dim(2)});
}

Tensor KvCache::nextValues(int layer, std::int64_t count) const {
  const Tensor& v = values_.at(static_cast<std::size_t>(layer));
  return v.rows(length_, count).viewAs({count, v.dim(1) * v.dim(2)});
}

void KvCache::attend(Backend& backend, int layer, const Tensor& q,
                     const compute::AttentionOptions& options, Tensor& out) const {
  const std::int64_t visible = length_ + q.dim(0);
  backend.attentionCached(q, keys_.at(static_cast<std::size_t>(layer)).rows(0, visible),
                          values_.at(static_cast<std::size_t>(layer)).rows(0, visible), options,
                          out);
}

CachedDecoder::CachedDecoder(Backend& backend, const ModelConfig& config,
                             const ModelWeights& weights, std::int64_t capacity,
                             ProjectionHook* hook)
    : backend_(backend),
      config_(config),
      weights_(weights),
      hook_(hook),
      cache_(backend, config, capacity) {}

std::vector<float> CachedDecoder::feed(std::span<const std::int32_t> ids) {
  const auto n = static_cast<std::int64_t>(ids.size());
  if (n == 0) {
    throw ModelError("generate", "nothing to feed (no token ids)");
  }
  const std::int64_t end = cache_.length() + n;
  if (end > cache_.capacity()) {
    throw UnsupportedModelError("generate",
                                std::to_string(end) + " positions, but the KV cache holds " +
                                    std::to_string(cache_.capacity()) +
                                    " (the prompt plus the new tokens; lower --max-new-tokens)");
  }
  const compute::DType act = backend_.capabilities().activationDType;
  SequenceLayout layout = makeSequenceLayout(backend_, config_, 1, n);
  for (std::int64_t t = 0; t < n; ++t) {
    layout.positions[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(cache_.length() + t);
  }
  layout.cache = &cache_;
  LayerActivations acts(backend_, config_, 1, n);
  Tensor x = backend_.empty(act, {n, config_.hiddenSize});  // (n, H) residual stream
  Tensor next = backend_.empty(act, {n, config_.hiddenSize});
  embedTokens(backend_, config_, weights_, ids, x);
  for (std::size_t l = 0; l < weights_.layers.size(); ++l) {
    acts.k = cache_.nextKeys(static_cast<int>(l), n);
    acts.v = cache_.nextValues(static_cast<int>(l), n);
    decoderLayerForward(backend_, config_, weights_.layers[l], static_cast<int>(l), layout, x, next,
                        acts, hook_);
    std::swap(x, next);
  }
  cache_.advance(n);
  Tensor last = x.rows(n - 1, 1);  // (1, H): only the last position's next token is wanted
  Tensor h = backend_.empty(act, {1, config_.hiddenSize});
  Tensor rstd = backend_.empty(compute::DType::F32, {1});
  backend_.rmsnormForward(last, weights_.finalNorm, static_cast<float>(config_.rmsNormEps), h,
                          rstd);
  Tensor logits = backend_.empty(act, {1, config_.vocabSize});
  backend_.matmul(h, false, weights_.lmHead, true, logits, 1.0f, 0.0f);
  if (config_.finalLogitSoftcap > 0.0) {
    backend_.softcapInPlace(logits, static_cast<float>(config_.finalLogitSoftcap));
  }
  return backend_.download(logits);
}

}  // namespace lorascope::model
