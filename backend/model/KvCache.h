// model/KvCache.h — generation with a KV cache: each layer's keys and values of every position
// so far stay on the backend, so a new token costs one pass over the model for that token only.
//
// CachedDecoder::feed runs model/Forward.cpp's decoder layers on the new tokens with their
// absolute positions: the layer projects k and v straight into the cache's next rows (the
// LayerActivations' k, v are views of them), RoPE rotates them there, and attention reads the
// whole cache (Backend::attentionCached) instead of the new tokens alone. The prompt is one feed
// (its tokens attend causally among themselves), each generated token another.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compute/Backend.h"
#include "model/Forward.h"  // defines: LayerActivations, ProjectionHook, SequenceLayout
#include "model/ModelConfig.h"
#include "model/ModelFolder.h"  // defines: ModelWeights

namespace lorascope::model {

class KvCache {
 public:
  // Room for `capacity` positions in every layer; throws what the backend throws when it does
  // not fit (memory::OutOfMemoryError on a GPU).
  KvCache(compute::Backend& backend, const ModelConfig& config, std::int64_t capacity);

  std::int64_t length() const { return length_; }  // positions held
  std::int64_t capacity() const { return capacity_; }
  // Layer `layer`'s rows for the next `count` positions, (count, kvHeads·hd): where the layer
  // writes the new keys and values.
  compute::Tensor nextKeys(int layer, std::int64_t count) const;
  compute::Tensor nextValues(int layer, std::int64_t count) const;
  // Attention of the `count` new queries q (count, heads, hd) over positions 0 … length+count−1
  // of layer `layer` (the new rows already written) into out (count, heads, hd), masked and
  // scored as `options` says (the layer's sliding window and soft-cap).
  void attend(compute::Backend& backend, int layer, const compute::Tensor& q,
              const compute::AttentionOptions& options, compute::Tensor& out) const;
  // The new rows are complete: they count from now on.
  void advance(std::int64_t count) { length_ += count; }

 private:
  std::int64_t capacity_;
  std::int64_t length_ = 0;
  std::vector<compute::Tensor> keys_, values_;  // per layer (capacity, kvHeads, hd)
};

class CachedDecoder {
 public:
  // `hook` (may be null) sees every projection, as in training: an adapter adds its term there.
  // The model, weights and hook must outlive the decoder.
  CachedDecoder(compute::Backend& backend, const ModelConfig& config, const ModelWeights& weights,
                std::int64_t capacity, ProjectionHook* hook = nullptr);

  // Runs `ids` at positions length() … length()+n−1 and returns the logits of the last one
  // (vocab floats). Throws ModelError for an id outside the vocabulary, UnsupportedModelError
  // when the cache would pass its capacity. Sliding layers see only their window of the cache.
  std::vector<float> feed(std::span<const std::int32_t> ids);
  std::int64_t length() const { return cache_.length(); }
  std::int64_t capacity() const { return cache_.capacity(); }

 private:
  compute::Backend& backend_;
  const ModelConfig& config_;
  const ModelWeights& weights_;
  ProjectionHook* hook_;
  KvCache cache_;
};

}  // namespace lorascope::model
