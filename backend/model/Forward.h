// Forward.h — the forward pass of the decoder graph (Llama, Qwen2, Qwen3, Mistral, Gemma 2,
// Gemma 3) on any Backend, giving logits and the shifted next-token cross-entropy loss as
// transformers computes it (labels −100 ignored).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "compute/Backend.h"
#include "model/ModelConfig.h"
#include "model/ModelFolder.h"
#include "model/Projections.h"  // defines: Projection

namespace lorascope::model {

struct ForwardInput {
  std::int64_t batch = 1;
  std::int64_t seq = 0;
  std::span<const std::int32_t> ids;     // (batch, seq) row-major
  std::span<const std::int32_t> labels;  // (batch, seq) or empty for no loss; −100 = ignore
  // (batch, seq) or empty: where each token's document starts in its row, for rows that pack
  // several examples apart (train/Batching.h, Note [document packing]). A token attends only to
  // its document, and its RoPE position counts from the document's start.
  std::span<const std::int32_t> documentStarts = {};
  // (batch, seq) or empty: each token's RoPE position (t mod seq, less its document's start), for
  // a caller that keeps them where ops must read them: graph mode's pinned inputs, which a
  // replayed step reads again (Note [whole-step graphs] in train/StepGraphs.h). Empty: computed
  // from documentStarts.
  std::span<const std::int32_t> positions = {};
};

struct ForwardResult {
  compute::Tensor logits;      // (batch·seq, vocab), activation dtype, on the backend
  std::optional<double> loss;  // mean over predicted tokens; absent with no labels or none valid
  std::int64_t predictedTokens = 0;  // label positions t+1 that were not −100
};

// --- The pieces of the graph, shared with the training graph (backend/train/TrainGraph) -------

// Activations of one decoder layer: what the backward pass reads. Inference reuses one set for
// every layer; training keeps one per layer, or one recomputed per layer (checkpointing).
struct LayerActivations {
  // `normsFrom`: another layer's activations whose h1 and h2 these share (training recomputes
  // them in the backward pass: Note [normed inputs recomputed]); null gives them their own.
  // `h1Spare`, `h2Spare`: columns more in h1's and h2's rows, for the trainer's LoRA u (Note [the
  // LoRA term in the inner dimension] in train/TrainGraph.cpp).
  LayerActivations(compute::Backend& backend, const ModelConfig& config, std::int64_t batch,
                   std::int64_t seq, const LayerActivations* normsFrom = nullptr,
                   std::int64_t h1Spare = 0, std::int64_t h2Spare = 0);
  compute::Tensor h1, rstd1;  // (T, H), (T) f32: input RMSNorm of the layer
  compute::Tensor q, k, v;    // (T, heads·hd), (T, kv·hd), (T, kv·hd); q, k after RoPE
  // With q/k norms (Qwen3, Gemma 3): the projections' outputs before the norm, and the norms'
  // statistics (T·heads), (T·kv) f32; undefined otherwise.
  compute::Tensor qRaw, kRaw, rstdQ, rstdK;
  compute::Tensor attention;  // (T, heads·hd)
  compute::Tensor logsumexp;  // (B, heads, S) f32
  // With Gemma's sandwich norms: o_proj's output before post_attention_layernorm (T, H) and the
  // norm's statistics (T) f32; undefined otherwise.
  compute::Tensor attentionOut, rstdAttentionOut;
  compute::Tensor xMid;       // (T, H): residual stream after the attention block
  compute::Tensor h2, rstd2;  // (T, H), (T) f32: the MLP's input RMSNorm
  // With spare columns: h1 and h2 with them, (T, H + spare), whose column views h1 and h2 are;
  // else undefined.
  compute::Tensor h1Wide, h2Wide;
  compute::Tensor gate, up, swiglu;  // (T, I); swiglu holds GeGLU's product for Gemma
  // With sandwich norms: down_proj's output before post_feedforward_layernorm (T, H), its norm's
  // statistics (T) f32; undefined otherwise.
  compute::Tensor mlpOut, rstdMlpOut;
};

// What a projection y = x·Wᵀ (+ bias) runs past: training adds its LoRA term (and checks for
// cancellation between ops), generation its adapter's.
class ProjectionHook {
 public:
  virtual ~ProjectionHook() = default;
  // Before the projection's GEMM: sets `product`'s LoRA term (lhsT, low, transposeLow, scale,
  // as Backend::projectionProducts reads them), computing lhsT from x now, or leaves it unset.
  //   x (T, in) the projection's input. Default: no term.
  virtual void setTerm(int layer, Projection projection, const compute::Tensor& x,
                       compute::ProjectionProduct& product);
  // After y (T, out) has been written (with its term). Default: nothing.
  virtual void afterProjection(int layer, Projection projection, const compute::Tensor& x,
                               compute::Tensor& y);
};

class KvCache;  // model/KvCache.h

// Where the tokens of a (batch, seq) block sit: RoPE positions and each layer's attention.
struct SequenceLayout {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::vector<std::int32_t> positions;  // (batch·seq): t mod seq, less its document's start
  // ForwardInput's positions when it has them, read in place (ropePositions()); else empty
  std::span<const std::int32_t> inputPositions;
  // (batch·seq) or empty: ForwardInput's, read in place (the input outlives its layout), so that
  // the attention ops upload them from where the caller keeps them
  std::span<const std::int32_t> documentStarts;
  compute::Tensor invFreq;          // (hd/2) f32 on the backend
  compute::Tensor invFreqLocal;     // (hd/2) f32: Gemma 3's sliding layers; else undefined
  float attentionScale = 1.0f;      // 1/√hd, or query_pre_attn_scalar^−½ (Gemma)
  float attentionSoftcap = 0.0f;    // Gemma 2's attn_logit_softcapping; 0 = off
  std::int64_t slidingWindow = 0;   // on the sliding layers
  std::vector<bool> slidingLayers;  // (layers)
  // Generation (batch 1): the earlier positions' keys and values. The layer's k and v are then
  // the cache's next rows, and attention reads the whole cache (model/KvCache.h).
  const KvCache* cache = nullptr;

  std::span<const std::int32_t> ropePositions() const {
    return inputPositions.empty() ? std::span<const std::int32_t>(positions) : inputPositions;
  }
  const compute::Tensor& invFreqOf(int layer) const {
    return invFreqLocal.defined() && slidingLayers[static_cast<std::size_t>(layer)] ? invFreqLocal
                                                                                    : invFreq;
  }
  compute::AttentionOptions attentionOf(int layer) const {
    compute::AttentionOptions options{
        attentionScale, slidingLayers[static_cast<std::size_t>(layer)] ? slidingWindow : 0,
        attentionSoftcap};
    options.documentStarts = documentStarts;
    return options;
  }
};
// `documentStarts`, `positions`: ForwardInput's (checked by checkForwardInput), viewed, not
// copied: they must outlive the layout. Without `positions` they are computed.
SequenceLayout makeSequenceLayout(compute::Backend& backend, const ModelConfig& config,
                                  std::int64_t batch, std::int64_t seq,
                                  std::span<const std::int32_t> documentStarts = {},
                                  std::span<const std::int32_t> positions = {});

// One decoder layer: xOut = layer(xIn), both (T, H) and distinct; fills `acts`. `hook` may be
// null (plain inference).
void decoderLayerForward(compute::Backend& backend, const ModelConfig& config,
                         const LayerWeights& weights, int layer, const SequenceLayout& layout,
                         const compute::Tensor& xIn, compute::Tensor& xOut, LayerActivations& acts,
                         ProjectionHook* hook);

// Throws ShapeError for ids/labels that do not fit (batch, seq).
void checkForwardInput(const ModelConfig& config, const ForwardInput& input);
// Next-token targets: position t predicts labels[t+1]; the last of each row predicts none (−100).
std::vector<std::int32_t> shiftedTargets(const ForwardInput& input);

// x = embed(ids), times the embedding scale (Gemma's √H) when the model has one.
void embedTokens(compute::Backend& backend, const ModelConfig& config, const ModelWeights& weights,
                 std::span<const std::int32_t> ids, compute::Tensor& x);

// Runs the whole model. Weights must live where the backend computes (the CPU backend reads the
// mapped weights directly). Throws ModelError / compute::ShapeError naming the bad input (an id
// outside the vocabulary, mismatched lengths).
ForwardResult forward(compute::Backend& backend, const ModelConfig& config,
                      const ModelWeights& weights, const ForwardInput& input);

}  // namespace lorascope::model
