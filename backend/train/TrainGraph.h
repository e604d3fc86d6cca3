// train/TrainGraph.h — the decoder graph (every family of model/ModelConfig.h) for LoRA
// training: model/Forward.cpp's decoder layers with a LoRA term on the adapted projections, the
// fused lm-head + cross-entropy (soft-capped for Gemma 2), and a backward pass that computes
// only what LoRA needs, through the q/k norms, the sandwich norms, GeGLU, sliding windows and
// soft-capped attention where the model has them.
//
// For an adapted projection W (out, in) with input x (T, in):
//   u = dropout(x)·Aᵀ (T, r), saved;   y = x·Wᵀ (+ b) + scale · u·Bᵀ
//   backward, from dy (T, out):  dB += scale · dyᵀ·u;  g = scale · dy·B (T, r);
//                                dA += gᵀ·dropout(x);  dx += dropout'(g·A)  (mask regenerated)
// Frozen weights get no gradient; the input gradient flows through them (dx = dy·W), and the
// first layer's input gradient is not computed (the embedding is frozen).
//
// Activation checkpointing off: every layer's activations (model::LayerActivations plus the
// LoRA u's) are kept from forward to backward. On: only each layer's input (T, H) is kept and the
// layer is recomputed just before its backward; the results are bit-identical either way.
//
// The LoRA weights, their gradients and their AdamW moments live on the backend for the graph's
// whole life: zeroing, clipping and the AdamW update are backend ops over all of them at once,
// and dropout masks are drawn on the backend. The host sees them only when it asks
// (downloadAdapter, downloadMoments, gradients).
//
// Note [LoRA groups]: the adapted projections of a layer that read the same input form a group
// (q, k, v on the first norm's output; gate and up on the second's; o and down alone). Their A's
// are rows of one (Σr, in) matrix, so a group's down-projection is one product, stored
// transposed: uᵀ (Σr, T) = A·xᵀ, each site's u the rows of its A; likewise, backward, each site's
// g = scale·dy·B is computed as gᵀ into the rows of one (Σr, T) matrix, and the group's dA += gᵀ·x
// and dx += g·A are one product each. With dropout on, every site's input has its own mask, and
// its products run alone (same formulas, the site's rows). Every LoRA weight (A's and B's) sits
// in one flat f32 buffer (the moments in two more of the same layout, so a state download is
// three transfers); where activations are bf16 (a GPU), the products read a bf16 copy of that
// buffer, made by one convert after each update (the rounding the vendor GEMM applied to each
// product's f32 operand before; under autocast PyTorch does the same).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "compute/Backend.h"
#include "model/DeviceWeights.h"  // defines: LoraFold
#include "model/Forward.h"        // defines: ForwardInput, LayerActivations, ProjectionHook
#include "model/ModelConfig.h"
#include "model/ModelFolder.h"  // defines: ModelWeights
#include "train/Checkpoint.h"   // defines: LoraMoments
#include "train/Lora.h"
#include "train/LoraDropout.h"  // defines: DropoutKey
#include "train/Optimizer.h"    // defines: AdamWConfig

namespace lorascope::train {

// Thrown between two ops when the cancel flag is set; the step in progress is abandoned.
class TrainingCancelled : public std::runtime_error {
 public:
  TrainingCancelled() : std::runtime_error("training cancelled") {}
};

// Every projection of the model an adapter may sit on: (layer, module, in, out), layer-major.
std::vector<LoraSite> modelLoraSites(const model::ModelConfig& config);

// The LoRA rows and columns a run of this config folds into the stacked q/k/v and gate/up weights
// (model::placeWeights' LoraFold; Note [the LoRA term in the inner dimension]): none with dropout
// (each member's u is then its own masked input's) or with the adapter on some layers only (the
// others would read their weights as column views).
model::LoraFold loraFoldFor(const LoraConfig& config);

struct GraphOptions {
  bool activationCheckpointing = false;
};

struct LossSum {
  double sum = 0.0;                  // Σ per-token losses (nats), not scaled
  std::int64_t predictedTokens = 0;  // shifted labels that are not −100
};

// Gradients of one adapted projection, in the layout of LoraWeights.
struct LoraGradient {
  std::vector<float> a;  // (r, in)
  std::vector<float> b;  // (out, r)
};

// Where one site's A and B sit in the graph's flat buffers (offsets and element counts).
struct LoraSlices {
  std::int64_t offsetA = 0, countA = 0, offsetB = 0, countB = 0;
};

// The adapter and moments of a TrainGraph as they were when TrainGraph::downloadStateAsync was
// called, arriving on the host while the graph computes on (compute::Backend::downloadAsync).
// Independent of the graph once made: it may be waited for on another thread, after the graph
// has run further steps or is gone.
class PendingLoraState {
 public:
  PendingLoraState(std::unique_ptr<compute::PendingDownload> download,
                   std::vector<LoraSlices> slices)
      : download_(std::move(download)), slices_(std::move(slices)) {}
  // Blocks until the values are on the host; fills the adapter's A and B (its sites must be the
  // graph's, in order) and the moments (resized to fit), as downloadAdapter and downloadMoments
  // would have then.
  void wait(LoraAdapter& adapter, std::vector<LoraMoments>& moments);
  // The same values without copying them: six spans per site in train/StateCodec.h's order (A,
  // B, first moment of A, second of A, first of B, second of B), valid as long as this object.
  std::vector<std::span<const float>> waitArrays();

 private:
  std::unique_ptr<compute::PendingDownload> download_;
  std::vector<LoraSlices> slices_;  // per site, in the adapter's order
};

// A pass of a step whose host reads wait until the step's end (graph mode: train/StepGraphs.h):
// the loss is added to sums on the backend instead of read back, the targets come from `targets`
// (already shifted; pinned memory, re-read at every replay of a captured step), and dropout masks
// take the step from scalars (compute/StepScalars.h) instead of the key and are drawn as the
// eager pass of the unpadded micro-batch draws them (Backend::dropoutMaskAt: its row length is
// rowLengths[key.microBatch]). The lm-head computes the rows passRows names (Note [predicted rows
// in a graph] in train/StepGraphs.h; empty: every row).
struct DeferredPass {
  std::span<const std::int32_t> targets;  // (batch·seq): shifted labels, −100 where none
  compute::LmHeadRows passRows;
  const compute::Tensor* scalars = nullptr;
  compute::Tensor* sums = nullptr;
  const compute::Tensor* rowLengths = nullptr;  // int32 per micro-batch of the step
};

class TrainGraph {
 public:
  // The adapter's sites must fit the model (layer < layers, in/out of the projection).
  // Throws std::invalid_argument naming the site that does not.
  TrainGraph(compute::Backend& backend, const model::ModelConfig& config,
             const model::ModelWeights& weights, const LoraAdapter& adapter,
             GraphOptions options = {});
  ~TrainGraph();
  TrainGraph(const TrainGraph&) = delete;
  TrainGraph& operator=(const TrainGraph&) = delete;

  // Copies the adapter's A and B to the backend. Same sites only.
  void loadAdapter(const LoraAdapter& adapter);
  // Copies AdamW moments (one per site, shaped like its A and B) to the backend; they start at
  // zero. Throws std::invalid_argument naming the site whose moments do not fit.
  void loadMoments(const std::vector<LoraMoments>& moments);
  void zeroGradients();
  // Accumulates into the LoRA gradients the gradient of gradScale · Σ token losses of `input`
  // (labels required). Returns the unscaled loss sum. Throws TrainingCancelled when `cancel`
  // becomes true; the gradients are then partial and must be zeroed.
  // With `deferred`, the returned sum is 0 (it is in deferred->sums), gradScale is read from
  // deferred->scalars and the key's step is unused.
  LossSum forwardBackward(const model::ForwardInput& input, float gradScale, const DropoutKey& key,
                          const std::atomic<bool>* cancel = nullptr,
                          const DeferredPass* deferred = nullptr);
  // Loss only, without dropout (evaluation and finite differences).
  LossSum forwardLoss(const model::ForwardInput& input);
  // The accumulated gradients, one per adapter site in the adapter's order.
  std::vector<LoraGradient> gradients();
  // Every gradient in one flat f32 buffer (the padding between sites stays zero): what a
  // data-parallel group sums over its ranks (train/GroupStep.cpp).
  compute::Tensor& gradientBuffer() { return grads_; }

  // Global-norm clipping of the accumulated gradients (train::clipGradNorm's rule, the norm over
  // every A and B gradient in site order); returns the norm before clipping.
  double clipGradients(double maxNorm);
  // One AdamW step (train::adamwScalars) over every A and B with its gradient and moments.
  void adamwStep(const AdamWConfig& config, double learningRate, std::int64_t step);
  // Graph mode's clipping and update: Backend::clipScaledGradients over every gradient in site
  // order, then Backend::adamwIfFinite.
  void clipAndUpdateOnBackend(const compute::Tensor& scalars, compute::Tensor& sums);
  // The weights changed outside adamwStep (a graph's update): the products' copy is remade before
  // the next pass reads it, inside that pass.
  void markWeightsChanged() { gemmParamsStale_ = true; }
  // The backend's A and B into `adapter`, and its moments into `moments` (resized to fit); the
  // sites are the graph's (the adapter it was built from).
  void downloadAdapter(LoraAdapter& adapter);
  void downloadMoments(std::vector<LoraMoments>& moments);
  // Both of them as the ops issued so far leave them, without waiting for those ops: a device copy
  // of the three flat buffers, downloaded while the next step runs (the state mirror's download;
  // on the CPU, a host copy made now).
  PendingLoraState downloadStateAsync();

  const GraphOptions& options() const { return options_; }
  void setOptions(const GraphOptions& options) { options_ = options; }

 private:
  struct Site;
  struct Group;
  struct LayerState;
  class LoraHook;
  struct Member {  // a projection of a group and the gradient of its output
    model::Projection projection;
    const compute::Tensor* dy;
    std::int64_t dyColumn = 0;  // its first column in dy (a half of the stacked gate/up gradient)
  };

  void layerBackward(int layer, LayerState& state, const compute::Tensor& xIn, compute::Tensor& dx,
                     bool needInputGradient);
  // h1 (Attention) or h2 (Mlp) of `layer` in `buffer`, the layers' shared one: RMSNorm(x) with
  // `weight`, remade unless the buffer holds that layer's (Note [normed inputs recomputed]).
  enum class NormedInput { Attention, Mlp };
  const compute::Tensor& normedInput(int layer, NormedInput which, const compute::Tensor& x,
                                     const compute::Tensor& weight, compute::Tensor& buffer);
  // The LoRA backward of one group (Note [LoRA groups]) whose input was x: dB and dA of each
  // adapted member, and dx += g·A over them when dx is given. With `frozen` (the frozen products
  // that write dx: dx = dy·W, or a sum such as dGate·Wg + dUp·Wu, alpha 1, beta 0 for the first
  // and 1 after) dx is written here: on a GPU without dropout g·A goes under the first product's
  // GEMM (Backend::projectionProducts) and the others add to it; elsewhere the products run
  // first, as one matmulGroup.
  // With `dyWide` (a folded group's: its members' output gradients side by side and Σr columns
  // more, which take g) dx is the one product dyWide·[W; A] (Note [the LoRA term in the inner
  // dimension]).
  void groupBackward(int layer, std::initializer_list<Member> members, LayerState& state,
                     const compute::Tensor& x, compute::Tensor* dx,
                     std::span<const compute::MatmulProduct> frozen = {},
                     compute::Tensor* dyWide = nullptr);
  // The group of `layer`'s q/k/v (Attention) or gate/up (Mlp) when it is folded, else null.
  const Group* foldedGroup(int layer, NormedInput which) const;
  // Views of every site's and group's weights, moments and gradients into the flat buffers.
  void bindViews();
  // The bf16 copy of the weights after an update (Note [LoRA groups]); nothing where the
  // products read the f32 weights.
  void refreshGemmWeights();
  LossSum headLoss(const compute::Tensor& x, std::span<const std::int32_t> targets, float gradScale,
                   compute::Tensor* dx, compute::Tensor* sums = nullptr);
  void checkCancel() const;
  // (tokens, features) inverted-dropout mask of this projection under the current key.
  compute::Tensor dropoutMask(int layer, model::Projection projection, std::int64_t tokens,
                              std::int64_t features);
  // Every gradient tensor, A then B of each site in order (the clipping norm's order).
  std::vector<compute::Tensor*> gradientTensors();
  // Every (A or B, gradient, moments) in site order: AdamW's list.
  std::vector<compute::AdamWTensors> adamwTensors();
  std::vector<LoraSlices> slices() const;

  compute::Backend& backend_;
  const model::ModelConfig& config_;
  const model::ModelWeights& weights_;
  LoraConfig lora_;
  GraphOptions options_;
  std::vector<Site> sites_;
  std::vector<Group> groups_;
  std::vector<std::vector<int>> siteIndex_;  // [layer][projection] → index in sites_, or −1
  std::int64_t flatElements_ = 0;            // of each flat buffer below (padded blocks)
  compute::Tensor params_;                   // (flat) f32: every A and B
  compute::Tensor gemmParams_;  // (flat) what the products read: params_ or its bf16 copy
  bool gemmParamsStale_ = true;
  compute::Tensor firstMoments_, secondMoments_, grads_;  // (flat) f32, params_'s layout
  // Per-call context of forwardBackward.
  const model::SequenceLayout* layout_ = nullptr;
  DropoutKey key_;
  bool dropoutActive_ = false;
  std::array<int, 2> normsOf_{-1, -1};      // [NormedInput] the layer whose h1, h2 the buffers hold
  const DeferredPass* deferred_ = nullptr;  // graph mode: masks as Backend::dropoutMaskAt draws
  const std::atomic<bool>* cancel_ = nullptr;
  // Σr of the folded groups of each input (0: none), the spare columns of h1 and h2.
  std::array<std::int64_t, 2> normSpare_{0, 0};
  // [layer][NormedInput] → index in groups_ of the folded group, or −1.
  std::vector<std::array<int, 2>> foldedGroups_;
};

}  // namespace lorascope::train
