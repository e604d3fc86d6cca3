// train/TrainGraph.cpp — forward with LoRA and saved activations, then the backward pass, layer
// by layer from the loss down (see TrainGraph.h for the formulas).
#include "train/TrainGraph.h"

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "memory/DeviceAllocator.h"  // defines: OwnerScope

namespace lorascope::train {
namespace {

using compute::Tensor;
using model::Projection;

constexpr int kProjections = static_cast<int>(model::kProjectionCount);

// (in, out) features of a projection of this model.
std::pair<std::int64_t, std::int64_t> projectionShape(const model::ModelConfig& c, LoraModule m) {
  const std::int64_t qOut = c.numHeads * c.headDim;
  const std::int64_t kvOut = c.numKvHeads * c.headDim;
  switch (m) {
    case LoraModule::Q:
      return {c.hiddenSize, qOut};
    case LoraModule::K:
    case LoraModule::V:
      return {c.hiddenSize, kvOut};
    case LoraModule::O:
      return {qOut, c.hiddenSize};
    case LoraModule::Gate:
    case LoraModule::Up:
      return {c.hiddenSize, c.intermediateSize};
    case LoraModule::Down:
      return {c.intermediateSize, c.hiddenSize};
  }
  return {0, 0};
}

}  // namespace

std::vector<LoraSite> modelLoraSites(const model::ModelConfig& config) {
  std::vector<LoraSite> sites;
  for (int layer = 0; layer < config.numLayers; ++layer) {
    for (LoraModule m : kAllLoraModules) {
      const auto [in, out] = projectionShape(config, m);
      sites.push_back({layer, m, in, out});
    }
  }
  return sites;
}

struct TrainGraph::Site {
  LoraSite site;
  Tensor a, b;             // (r, in), (out, r) f32
  Tensor gradA, gradB;     // same shapes, accumulated over micro-batches
  Tensor firstA, secondA;  // AdamW moments of A (r, in)
  Tensor firstB, secondB;  // AdamW moments of B (out, r)
};

struct TrainGraph::LayerState {
  LayerState(compute::Backend& backend, const model::ModelConfig& c, std::int64_t batch,
             std::int64_t seq)
      : acts(backend, c, batch, seq), u(kProjections) {}
  model::LayerActivations acts;
  std::vector<Tensor> u;  // [projection] (T, r): dropout(x)·Aᵀ; undefined where not adapted
};

// Adds the LoRA term after each frozen projection, saving u into the current layer's state.
class TrainGraph::LoraHook final : public model::ProjectionHook {
 public:
  explicit LoraHook(TrainGraph& graph) : graph_(graph) {}
  LayerState* state = nullptr;

  void afterProjection(int layer, Projection projection, const Tensor& x, Tensor& y) override {
    graph_.checkCancel();
    const int index =
        graph_.siteIndex_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(projection)];
    if (index < 0) {
      return;
    }
    Site& s = graph_.sites_[static_cast<std::size_t>(index)];
    compute::Backend& backend = graph_.backend_;
    const std::int64_t tokens = x.dim(0);
    Tensor& u = state->u[static_cast<std::size_t>(projection)];
    u = backend.empty(backend.capabilities().activationDType, {tokens, graph_.lora_.rank});
    if (graph_.dropoutActive_) {
      Tensor xd = graph_.dropoutMask(layer, projection, tokens, x.dim(1));
      backend.multiplyInPlace(xd, x);
      backend.matmul(xd, false, s.a, true, u, 1.0f, 0.0f);
    } else {
      backend.matmul(x, false, s.a, true, u, 1.0f, 0.0f);
    }
    backend.matmul(u, false, s.b, true, y, static_cast<float>(graph_.lora_.scale()), 1.0f);
  }

  // On the CPU backend, without dropout, the adapted projections of one input share it: their
  // u = x·Aᵀ go out as one matmulGroup, then their y += scale·u·Bᵀ as another (one launch each).
  // A GPU backend keeps afterProjection's order of launches.
  void afterProjections(int layer, std::span<const Projection> projections, const Tensor& x,
                        std::span<Tensor* const> ys) override {
    if (graph_.dropoutActive_ || graph_.backend_.capabilities().device != compute::Device::Cpu) {
      model::ProjectionHook::afterProjections(layer, projections, x, ys);
      return;
    }
    graph_.checkCancel();
    compute::Backend& backend = graph_.backend_;
    const auto scale = static_cast<float>(graph_.lora_.scale());
    std::vector<compute::MatmulProduct> down, up;
    for (std::size_t i = 0; i < projections.size(); ++i) {
      const int index = graph_.siteIndex_[static_cast<std::size_t>(layer)]
                                         [static_cast<std::size_t>(projections[i])];
      if (index < 0) {
        continue;
      }
      Site& s = graph_.sites_[static_cast<std::size_t>(index)];
      Tensor& u = state->u[static_cast<std::size_t>(projections[i])];
      u = backend.empty(backend.capabilities().activationDType, {x.dim(0), graph_.lora_.rank});
      down.push_back({&x, false, &s.a, true, &u, 1.0f, 0.0f});
      up.push_back({&u, false, &s.b, true, ys[i], scale, 1.0f});
    }
    if (!down.empty()) {
      backend.matmulGroup(down);
      backend.matmulGroup(up);
    }
  }

 private:
  TrainGraph& graph_;
};

TrainGraph::TrainGraph(compute::Backend& backend, const model::ModelConfig& config,
                       const model::ModelWeights& weights, const LoraAdapter& adapter,
                       GraphOptions options)
    : backend_(backend),
      config_(config),
      weights_(weights),
      lora_(adapter.config),
      options_(options),
      siteIndex_(weights.layers.size(), std::vector<int>(kProjections, -1)) {
  lora_.validate();
  for (const LoraWeights& w : adapter.weights) {
    const LoraSite& site = w.site;
    const std::string where =
        "LoRA site layer " + std::to_string(site.layer) + " " + moduleName(site.module);
    if (site.layer < 0 || static_cast<std::size_t>(site.layer) >= weights.layers.size()) {
      throw std::invalid_argument(where + ": the model has " +
                                  std::to_string(weights.layers.size()) + " layers");
    }
    const auto [in, out] = projectionShape(config, site.module);
    if (site.inFeatures != in || site.outFeatures != out) {
      throw std::invalid_argument(where + " is (" + std::to_string(site.inFeatures) + " → " +
                                  std::to_string(site.outFeatures) + ") but the model's is (" +
                                  std::to_string(in) + " → " + std::to_string(out) + ")");
    }
    int& slot =
        siteIndex_[static_cast<std::size_t>(site.layer)][static_cast<std::size_t>(site.module)];
    if (slot >= 0) {
      throw std::invalid_argument(where + " appears twice in the adapter");
    }
    slot = static_cast<int>(sites_.size());
    Site& s = sites_.emplace_back();
    s.site = site;
    const compute::Shape shapeA{lora_.rank, site.inFeatures};
    const compute::Shape shapeB{site.outFeatures, lora_.rank};
    {
      const memory::OwnerScope owner(memory::Owner::Grads);
      s.gradA = backend_.empty(compute::DType::F32, shapeA);
      s.gradB = backend_.empty(compute::DType::F32, shapeB);
    }
    const memory::OwnerScope owner(memory::Owner::Optimizer);
    for (Tensor* t : {&s.firstA, &s.secondA}) {
      *t = backend_.empty(compute::DType::F32, shapeA);
    }
    for (Tensor* t : {&s.firstB, &s.secondB}) {
      *t = backend_.empty(compute::DType::F32, shapeB);
    }
  }
  loadAdapter(adapter);
  std::vector<Tensor*> moments;
  for (Site& s : sites_) {
    moments.insert(moments.end(), {&s.firstA, &s.secondA, &s.firstB, &s.secondB});
  }
  backend_.fillZero(moments);
  zeroGradients();
}

TrainGraph::~TrainGraph() = default;

void TrainGraph::loadAdapter(const LoraAdapter& adapter) {
  if (adapter.weights.size() != sites_.size()) {
    throw std::invalid_argument("loadAdapter: adapter has " +
                                std::to_string(adapter.weights.size()) + " sites, graph " +
                                std::to_string(sites_.size()));
  }
  const std::int64_t r = lora_.rank;
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const LoraWeights& w = adapter.weights[i];
    Site& s = sites_[i];
    if (w.site.layer != s.site.layer || w.site.module != s.site.module ||
        static_cast<std::int64_t>(w.a.size()) != r * s.site.inFeatures ||
        static_cast<std::int64_t>(w.b.size()) != s.site.outFeatures * r) {
      throw std::invalid_argument("loadAdapter: site " + std::to_string(i) + " (layer " +
                                  std::to_string(w.site.layer) + " " + moduleName(w.site.module) +
                                  ") does not match the graph's");
    }
    const memory::OwnerScope owner(memory::Owner::Lora);
    s.a = backend_.upload(w.a, compute::DType::F32, {r, s.site.inFeatures});
    s.b = backend_.upload(w.b, compute::DType::F32, {s.site.outFeatures, r});
  }
}

void TrainGraph::loadMoments(const std::vector<LoraMoments>& moments) {
  if (moments.size() != sites_.size()) {
    throw std::invalid_argument("loadMoments: " + std::to_string(moments.size()) + " moments for " +
                                std::to_string(sites_.size()) + " sites");
  }
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const LoraMoments& m = moments[i];
    Site& s = sites_[i];
    const auto sizeA = static_cast<std::size_t>(s.a.numel());
    const auto sizeB = static_cast<std::size_t>(s.b.numel());
    if (m.firstA.size() != sizeA || m.secondA.size() != sizeA || m.firstB.size() != sizeB ||
        m.secondB.size() != sizeB) {
      throw std::invalid_argument("loadMoments: the moments of site " + std::to_string(i) +
                                  " (layer " + std::to_string(s.site.layer) + " " +
                                  moduleName(s.site.module) + ") are shaped unlike its A and B");
    }
    const memory::OwnerScope owner(memory::Owner::Optimizer);
    s.firstA = backend_.upload(m.firstA, compute::DType::F32, s.a.shape());
    s.secondA = backend_.upload(m.secondA, compute::DType::F32, s.a.shape());
    s.firstB = backend_.upload(m.firstB, compute::DType::F32, s.b.shape());
    s.secondB = backend_.upload(m.secondB, compute::DType::F32, s.b.shape());
  }
}

std::vector<Tensor*> TrainGraph::gradientTensors() {
  std::vector<Tensor*> grads;
  for (Site& s : sites_) {
    grads.push_back(&s.gradA);
    grads.push_back(&s.gradB);
  }
  return grads;
}

void TrainGraph::zeroGradients() {
  backend_.fillZero(gradientTensors());
}

double TrainGraph::clipGradients(double maxNorm) {
  const std::vector<Tensor*> grads = gradientTensors();
  const std::vector<const Tensor*> view(grads.begin(), grads.end());
  const double norm = std::sqrt(backend_.sumOfSquares(view));
  if (const std::optional<float> factor = clipFactor(norm, maxNorm)) {
    backend_.scaleInPlace(grads, *factor);
  }
  return norm;
}

void TrainGraph::adamwStep(const AdamWConfig& config, double learningRate, std::int64_t step) {
  const compute::AdamWScalars scalars = adamwScalars(config, learningRate, step);
  std::vector<compute::AdamWTensors> tensors;
  for (Site& s : sites_) {
    tensors.push_back({&s.a, &s.gradA, &s.firstA, &s.secondA});
    tensors.push_back({&s.b, &s.gradB, &s.firstB, &s.secondB});
  }
  backend_.adamw(tensors, scalars);
}

void TrainGraph::downloadAdapter(LoraAdapter& adapter) {
  if (adapter.weights.size() != sites_.size()) {
    throw std::invalid_argument("downloadAdapter: adapter has " +
                                std::to_string(adapter.weights.size()) + " sites, graph " +
                                std::to_string(sites_.size()));
  }
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    adapter.weights[i].a = backend_.download(sites_[i].a);
    adapter.weights[i].b = backend_.download(sites_[i].b);
  }
}

void TrainGraph::downloadMoments(std::vector<LoraMoments>& moments) {
  moments.resize(sites_.size());
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const Site& s = sites_[i];
    moments[i] = {backend_.download(s.firstA), backend_.download(s.secondA),
                  backend_.download(s.firstB), backend_.download(s.secondB)};
  }
}

std::vector<LoraGradient> TrainGraph::gradients() {
  std::vector<LoraGradient> out;
  out.reserve(sites_.size());
  for (const Site& s : sites_) {
    out.push_back({backend_.download(s.gradA), backend_.download(s.gradB)});
  }
  return out;
}

void TrainGraph::checkCancel() const {
  if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
    throw TrainingCancelled();
  }
}

Tensor TrainGraph::dropoutMask(int layer, Projection projection, std::int64_t tokens,
                               std::int64_t features) {
  Tensor mask = backend_.empty(backend_.capabilities().activationDType, {tokens, features});
  backend_.dropoutMask(mask, key_.seed, dropoutStream(key_, layer, projection), lora_.dropout);
  return mask;
}

LossSum TrainGraph::forwardLoss(const model::ForwardInput& in) {
  // Everything a pass allocates lives until the pass ends (ops tag their own scratch as
  // workspace).
  const memory::OwnerScope owner(memory::Owner::Activations);
  model::checkForwardInput(config_, in);
  if (in.labels.empty()) {
    throw std::invalid_argument("forwardLoss: the batch has no labels");
  }
  const std::int64_t tokens = in.batch * in.seq;
  const compute::DType act = backend_.capabilities().activationDType;
  const model::SequenceLayout layout =
      model::makeSequenceLayout(backend_, config_, in.batch, in.seq);
  dropoutActive_ = false;
  cancel_ = nullptr;
  LayerState state(backend_, config_, in.batch, in.seq);
  LoraHook hook(*this);
  hook.state = &state;
  Tensor x = backend_.empty(act, {tokens, config_.hiddenSize});
  Tensor next = backend_.empty(act, {tokens, config_.hiddenSize});
  model::embedTokens(backend_, config_, weights_, in.ids, x);
  for (std::size_t l = 0; l < weights_.layers.size(); ++l) {
    model::decoderLayerForward(backend_, config_, weights_.layers[l], static_cast<int>(l), layout,
                               x, next, state.acts, &hook);
    std::swap(x, next);
  }
  return headLoss(x, model::shiftedTargets(in), 0.0f, nullptr);
}

LossSum TrainGraph::forwardBackward(const model::ForwardInput& in, float gradScale,
                                    const DropoutKey& key, const std::atomic<bool>* cancel) {
  // Everything a pass allocates lives until the pass ends (ops tag their own scratch as
  // workspace).
  const memory::OwnerScope owner(memory::Owner::Activations);
  model::checkForwardInput(config_, in);
  if (in.labels.empty()) {
    throw std::invalid_argument("forwardBackward: the batch has no labels");
  }
  const std::int64_t tokens = in.batch * in.seq;
  const compute::DType act = backend_.capabilities().activationDType;
  const model::SequenceLayout layout =
      model::makeSequenceLayout(backend_, config_, in.batch, in.seq);
  layout_ = &layout;
  key_ = key;
  dropoutActive_ = lora_.dropout > 0.0;
  cancel_ = cancel;
  const std::size_t layers = weights_.layers.size();
  const bool checkpointing = options_.activationCheckpointing;

  std::vector<Tensor> xs;  // [layer] (T, H): each layer's input, then the last layer's output
  for (std::size_t l = 0; l <= layers; ++l) {
    xs.push_back(backend_.empty(act, {tokens, config_.hiddenSize}));
  }
  std::vector<LayerState> states;
  for (std::size_t l = 0; l < (checkpointing ? 1 : layers); ++l) {
    states.emplace_back(backend_, config_, in.batch, in.seq);
  }
  auto stateOf = [&](std::size_t l) -> LayerState& { return states[checkpointing ? 0 : l]; };
  LoraHook hook(*this);

  model::embedTokens(backend_, config_, weights_, in.ids, xs[0]);
  for (std::size_t l = 0; l < layers; ++l) {
    hook.state = &stateOf(l);
    model::decoderLayerForward(backend_, config_, weights_.layers[l], static_cast<int>(l), layout,
                               xs[l], xs[l + 1], hook.state->acts, &hook);
  }
  Tensor dx = backend_.empty(act, {tokens, config_.hiddenSize});  // (T, H) ∂loss/∂ residual
  const LossSum loss = headLoss(xs[layers], model::shiftedTargets(in), gradScale, &dx);

  Tensor recomputed = checkpointing ? backend_.empty(act, {tokens, config_.hiddenSize}) : Tensor();
  for (std::size_t l = layers; l-- > 0;) {
    LayerState& state = stateOf(l);
    if (checkpointing) {
      hook.state = &state;
      model::decoderLayerForward(backend_, config_, weights_.layers[l], static_cast<int>(l), layout,
                                 xs[l], recomputed, state.acts, &hook);
    }
    layerBackward(static_cast<int>(l), state, xs[l], dx, l > 0);
  }
  layout_ = nullptr;
  return loss;
}

LossSum TrainGraph::headLoss(const Tensor& x, std::span<const std::int32_t> targets,
                             float gradScale, Tensor* dx) {
  checkCancel();
  const compute::DType act = backend_.capabilities().activationDType;
  const std::int64_t tokens = x.dim(0);
  const auto eps = static_cast<float>(config_.rmsNormEps);
  Tensor h = backend_.empty(act, x.shape());
  Tensor rstd = backend_.empty(compute::DType::F32, {tokens});
  backend_.rmsnormForward(x, weights_.finalNorm, eps, h, rstd);
  Tensor losses = backend_.empty(compute::DType::F32, {tokens});
  Tensor dh = dx != nullptr ? backend_.empty(act, x.shape()) : Tensor();
  backend_.lmHeadCrossEntropy(h, weights_.lmHead, targets, gradScale, losses, dh,
                              static_cast<float>(config_.finalLogitSoftcap));
  if (dx != nullptr) {
    backend_.rmsnormBackward(dh, x, weights_.finalNorm, rstd, *dx);
  }
  const std::vector<float> values = backend_.download(losses);
  LossSum sum;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] != compute::kIgnoreTarget) {
      sum.sum += values[i];
      ++sum.predictedTokens;
    }
  }
  return sum;
}

void TrainGraph::layerBackward(int layer, LayerState& state, const Tensor& xIn, Tensor& dx,
                               bool needInputGradient) {
  const model::LayerWeights& w = weights_.layers[static_cast<std::size_t>(layer)];
  const model::LayerActivations& a = state.acts;
  const model::SequenceLayout& s = *layout_;
  const compute::DType act = backend_.capabilities().activationDType;
  const std::int64_t tokens = xIn.dim(0);
  const std::int64_t heads = config_.numHeads;
  const std::int64_t kvHeads = config_.numKvHeads;
  const std::int64_t hd = config_.headDim;

  const bool sandwich = config_.sandwichNorms;

  // MLP block: dx is ∂/∂ its output (and, through the residual, ∂/∂ xMid). With sandwich norms
  // the MLP's own output m reaches the residual through post_feedforward_layernorm.
  checkCancel();
  Tensor dMlpOut = dx;
  if (sandwich) {
    dMlpOut = backend_.empty(act, {tokens, config_.hiddenSize});
    backend_.rmsnormBackward(dx, a.mlpOut, w.postMlpNorm, a.rstdMlpOut, dMlpOut);
  }
  Tensor dAct = backend_.empty(act, {tokens, config_.intermediateSize});
  backend_.matmul(dMlpOut, false, w.down, false, dAct, 1.0f, 0.0f);
  siteBackward(layer, Projection::Down, state, a.swiglu, dMlpOut, &dAct);
  Tensor dGate = backend_.empty(act, dAct.shape());
  Tensor dUp = backend_.empty(act, dAct.shape());
  if (config_.mlpActivation == model::MlpActivation::GeluTanh) {
    backend_.gegluBackward(dAct, a.gate, a.up, dGate, dUp);
  } else {
    backend_.swigluBackward(dAct, a.gate, a.up, dGate, dUp);
  }
  Tensor dh = backend_.empty(act, {tokens, config_.hiddenSize});
  backend_.matmulGroup(std::array<compute::MatmulProduct, 2>{{
      {&dGate, false, &w.gate, false, &dh, 1.0f, 0.0f},
      {&dUp, false, &w.up, false, &dh, 1.0f, 1.0f},
  }});
  siteBackward(layer, Projection::Gate, state, a.h2, dGate, &dh);
  siteBackward(layer, Projection::Up, state, a.h2, dUp, &dh);
  Tensor normGrad = backend_.empty(act, {tokens, config_.hiddenSize});
  backend_.rmsnormBackward(dh, a.xMid, sandwich ? w.preMlpNorm : w.postNorm, a.rstd2, normGrad);
  backend_.addInPlace(dx, normGrad);  // dx = ∂/∂ xMid

  // Attention block (through post_attention_layernorm with sandwich norms).
  checkCancel();
  Tensor dAttentionOut = dx;
  if (sandwich) {
    dAttentionOut = backend_.empty(act, {tokens, config_.hiddenSize});
    backend_.rmsnormBackward(dx, a.attentionOut, w.postNorm, a.rstdAttentionOut, dAttentionOut);
  }
  Tensor dAttention = backend_.empty(act, {tokens, heads * hd});
  backend_.matmul(dAttentionOut, false, w.o, false, dAttention, 1.0f, 0.0f);
  siteBackward(layer, Projection::O, state, a.attention, dAttentionOut, &dAttention);
  Tensor dq = backend_.empty(act, {tokens, heads * hd});
  Tensor dk = backend_.empty(act, {tokens, kvHeads * hd});
  Tensor dv = backend_.empty(act, {tokens, kvHeads * hd});
  const compute::Shape qShape{s.batch, s.seq, heads, hd};
  const compute::Shape kvShape{s.batch, s.seq, kvHeads, hd};
  Tensor dq4 = dq.viewAs(qShape);
  Tensor dk4 = dk.viewAs(kvShape);
  Tensor dv4 = dv.viewAs(kvShape);
  backend_.attentionBackward(dAttention.viewAs(qShape), a.q.viewAs(qShape), a.k.viewAs(kvShape),
                             a.v.viewAs(kvShape), a.attention.viewAs(qShape), a.logsumexp,
                             s.attentionOf(layer), dq4, dk4, dv4);
  Tensor dqHeads = dq.viewAs({tokens, heads, hd});
  Tensor dkHeads = dk.viewAs({tokens, kvHeads, hd});
  backend_.rope(dqHeads, s.positions, s.invFreqOf(layer), true);  // ∂/∂ q before RoPE
  backend_.rope(dkHeads, s.positions, s.invFreqOf(layer), true);
  if (config_.qkNorm) {  // ∂/∂ the projections' outputs, through q_norm and k_norm
    Tensor dqRaw = backend_.empty(act, dq.shape());
    Tensor dkRaw = backend_.empty(act, dk.shape());
    const compute::Shape qRows{tokens * heads, hd};
    const compute::Shape kRows{tokens * kvHeads, hd};
    Tensor dqRawRows = dqRaw.viewAs(qRows);
    Tensor dkRawRows = dkRaw.viewAs(kRows);
    backend_.rmsnormBackward(dq.viewAs(qRows), a.qRaw.viewAs(qRows), w.qNorm, a.rstdQ, dqRawRows);
    backend_.rmsnormBackward(dk.viewAs(kRows), a.kRaw.viewAs(kRows), w.kNorm, a.rstdK, dkRawRows);
    dq = dqRaw;
    dk = dkRaw;
  }
  if (needInputGradient) {
    backend_.matmulGroup(std::array<compute::MatmulProduct, 3>{{
        {&dq, false, &w.q, false, &dh, 1.0f, 0.0f},
        {&dk, false, &w.k, false, &dh, 1.0f, 1.0f},
        {&dv, false, &w.v, false, &dh, 1.0f, 1.0f},
    }});
  }
  Tensor* dhOrNone = needInputGradient ? &dh : nullptr;
  siteBackward(layer, Projection::Q, state, a.h1, dq, dhOrNone);
  siteBackward(layer, Projection::K, state, a.h1, dk, dhOrNone);
  siteBackward(layer, Projection::V, state, a.h1, dv, dhOrNone);
  if (needInputGradient) {
    backend_.rmsnormBackward(dh, xIn, w.inputNorm, a.rstd1, normGrad);
    backend_.addInPlace(dx, normGrad);  // dx = ∂/∂ xIn
  }
}

void TrainGraph::siteBackward(int layer, Projection projection, LayerState& state, const Tensor& x,
                              const Tensor& dy, Tensor* dx) {
  checkCancel();
  const int index =
      siteIndex_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(projection)];
  if (index < 0) {
    return;
  }
  Site& s = sites_[static_cast<std::size_t>(index)];
  const compute::DType act = backend_.capabilities().activationDType;
  const auto scale = static_cast<float>(lora_.scale());
  const std::int64_t tokens = x.dim(0);
  const Tensor& u = state.u[static_cast<std::size_t>(projection)];
  Tensor g = backend_.empty(act, {tokens, lora_.rank});  // (T, r) = scale·dy·B
  backend_.matmulGroup(std::array<compute::MatmulProduct, 2>{{
      {&dy, true, &u, false, &s.gradB, scale, 1.0f},  // dB += scale·dyᵀ·u
      {&dy, false, &s.b, false, &g, scale, 0.0f},
  }});
  if (!dropoutActive_) {
    std::array<compute::MatmulProduct, 2> products{{
        {&g, true, &x, false, &s.gradA, 1.0f, 1.0f},  // dA += gᵀ·x
        {&g, false, &s.a, false, dx, 1.0f, 1.0f},     // dx += g·A
    }};
    backend_.matmulGroup(std::span(products.data(), dx != nullptr ? 2 : 1));
    return;
  }
  Tensor xd = dropoutMask(layer, projection, tokens, x.dim(1));
  backend_.multiplyInPlace(xd, x);
  backend_.matmul(g, true, xd, false, s.gradA, 1.0f, 1.0f);
  if (dx != nullptr) {
    Tensor through = backend_.empty(act, x.shape());
    backend_.matmul(g, false, s.a, false, through, 1.0f, 0.0f);
    backend_.multiplyInPlace(through, dropoutMask(layer, projection, tokens, x.dim(1)));
    backend_.addInPlace(*dx, through);
  }
}

}  // namespace lorascope::train
