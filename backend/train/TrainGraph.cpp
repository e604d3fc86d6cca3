// train/TrainGraph.cpp — forward with LoRA and saved activations, then the backward pass, layer
// by layer from the loss down (see TrainGraph.h for the formulas).
#include "train/TrainGraph.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "memory/DeviceAllocator.h"  // defines: OwnerScope
#include "runtime/OpTiming.h"

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

// The normed input a projection reads, as an index of TrainGraph::NormedInput (q, k, v: h1;
// gate, up: h2), and its place among that input's projections (model::kInputGroups); −1 for o and
// down, which read no normed input.
int normedInputOf(Projection p) {
  switch (p) {
    case Projection::Q:
    case Projection::K:
    case Projection::V:
      return 0;
    case Projection::Gate:
    case Projection::Up:
      return 1;
    default:
      return -1;
  }
}
std::size_t memberOf(Projection p) {
  switch (p) {
    case Projection::K:
    case Projection::Up:
      return 1;
    case Projection::V:
      return 2;
    default:
      return 0;
  }
}
// kInputGroups' entry of each NormedInput.
const std::initializer_list<Projection>& projectionsOf(int normedInput) {
  return model::kInputGroups[normedInput == 0 ? 0 : 2];
}

model::LoraFold loraFoldFor(const LoraConfig& config) {
  if (config.dropout > 0.0 || config.layers.has_value()) {
    return {};
  }
  const auto adapted = [&](int normedInput) {
    std::int64_t count = 0;
    for (Projection p : projectionsOf(normedInput)) {
      count += config.targets.contains(p) ? 1 : 0;
    }
    return count * config.rank;
  };
  return {adapted(0), adapted(1)};
}

// Flat-buffer blocks start on 64-element boundaries (aligned operands for the GEMMs).
std::int64_t padded(std::int64_t elements) {
  return (elements + 63) / 64 * 64;
}

// Elements [offset, offset + rows·cols) of a flat tensor as a (rows, cols) matrix.
Tensor block(const Tensor& flat, std::int64_t offset, std::int64_t rows, std::int64_t cols) {
  return flat.rows(offset, rows * cols).viewAs({rows, cols});
}

struct TrainGraph::Site {
  LoraSite site;
  int group = -1;             // index in groups_
  std::int64_t groupRow = 0;  // first row of its A in the group's A
  std::int64_t offsetA = 0;   // of A in the flat buffers (its rows of the group's A)
  std::int64_t offsetB = 0;   // of B
  Tensor a, b;                // (r, in), (out, r) f32 views of params_
  Tensor gemmA, gemmB;        // the same in gemmParams_ (what the products read)
  Tensor gradA, gradB;        // same shapes, accumulated over micro-batches
  Tensor firstA, secondA;     // AdamW moments of A (r, in)
  Tensor firstB, secondB;     // AdamW moments of B (out, r)
  std::int64_t foldRow = 0;   // its projection's first row in the group's stacked weight
};

struct TrainGraph::Group {
  std::vector<int> sites;  // indices in sites_, in forward order
  std::int64_t rows = 0;   // Σ r
  std::int64_t in = 0;
  std::int64_t offset = 0;  // of its A (rows, in) in the flat buffers
  Tensor gemmA;             // (rows, in) in gemmParams_
  Tensor gradA;             // (rows, in) in grads_
  // Folded (Note [the LoRA term in the inner dimension]): the stacked frozen weight with its LoRA
  // rows and columns, (out + rows, in + rows), and each member projection's rows of it (all of
  // the group's projections, adapted or not, by their place in model::kInputGroups).
  Tensor folded;
  std::vector<Tensor> memberRows;
};

struct TrainGraph::LayerState {
  LayerState(compute::Backend& backend, const model::ModelConfig& c, std::int64_t batch,
             std::int64_t seq, const std::array<std::int64_t, 2>& normSpare,
             const LayerState* normsFrom = nullptr)
      : acts(backend, c, batch, seq, normsFrom != nullptr ? &normsFrom->acts : nullptr,
             normSpare[0], normSpare[1]),
        u(kProjections) {}
  model::LayerActivations acts;
  // [projection] (r, T): uᵀ = A·dropout(x)ᵀ, rows of its group's (Σr, T); undefined where not
  // adapted
  std::vector<Tensor> u;
};

// Note [the LoRA term in the inner dimension]: a projection and its LoRA term,
// y = x·Wᵀ + scale·u·Bᵀ with u = x·Aᵀ, are one product over an inner dimension r wider:
// y = [x | scale·u]·[W | B]ᵀ. Its input gradient likewise: dx = dy·W + g·A = [dy | g]·[W; A]. The
// term as a GEMM of its own (Note [the LoRA term under the GEMM] in hip/HipBackendOpsGemm.cpp)
// writes all of y, then the frozen GEMM reads it back: on Llama-3.2-1B's gate/up that is 256 MiB
// a layer moved for r products an output. So on a GPU (bf16, no dropout: with dropout
// each member's u is its own masked input's) model::placeWeights puts a layer's stacked q/k/v and
// gate/up into a zeroed matrix Σr rows and columns larger (LoraFold, train::loraFoldFor: Σr the
// rank times the group's adapted projections, a multiple of 8), [W, B; A, 0], and the weights the
// model reads are column views of its top left (Tensor::columns). Every optimizer step the bf16
// A and B are copied into their blocks (refreshGemmWeights, Backend::copyMatrices, sixteen blocks
// a launch). The normed inputs h1 and h2 get Σr more columns (LayerActivations' spare columns),
// where the down projection's scale·u goes beside x (one transposing copy), and each member's
// forward is x_wide·(its rows of the matrix)ᵀ, dense, K + Σr wide. In the backward, dy's Σr more
// columns take g (Backend::loraOutputProducts writes g there beside gᵀ), and dx = [dy | g]·[W; A],
// the matrix's first in-features columns. o and down keep the term GEMM: their inputs (the
// attention's output, SwiGLU's) and their dy (the residual stream's gradient) would need their
// producers to write wider rows. Down was measured folded so (SwiGLU writing its product into
// rows 8 wider, down's dy copied beside g; one call beside this tree, 2 rounds): its terms' 0.65
// ms a Llama-3.2-1B step went, but the frozen GEMMs took 0.55 ms more, the dy copy 0.18 and the u
// copies 0.09, so the step was 41.53-41.59 ms against 41.62-41.88, the loop within 0.4% and the
// peak reserved 0.06 GiB more: not kept. Measured on an H200 (bench_gpu_train --prompt-percent 50
// --profile-steps 3, one call beside the tree before; op timing on): on Llama-3.2-1B the forward's
// term GEMMs went from 1.85 to 0.41 ms a step (o's and down's remain) and its frozen GEMMs from
// 11.38 to 11.89 (K + Σr), the backward's terms from 0.98 to 0.64 and its GEMMs from 10.51 to
// 10.84, the copies took 0.24 ms: the step 42.98 to 42.41 ms, Qwen2.5-0.5B's 29.91 to 28.85 (in
// the call before, with g copied beside dy by a launch of its own, 2 rounds: 43.56-43.59 to
// 42.98-43.15 and 29.56-30.04 to 28.88-29.11, the copies 0.39 ms). Writing dx through the whole
// matrix (its Σr more columns, every operand dense) had taken the backward's GEMMs from 10.66 to
// 11.68 ms. The product's loop (Llama, --packing documents, 3 runs each) delivered 87.0K real
// tokens/s against 87.4K in that call and 87.8K against 87.3K in the one before: within its
// noise. The memory model does not count the reserve (13 MiB of weights and a few hundred KiB
// of wider activations on Llama-3.2-1B at B8 × S512).
//
// Gives each frozen projection its LoRA term, scale·u·Bᵀ (Backend::projectionProducts), saving u
// into the current layer's state, or the folded product's operands.
class TrainGraph::LoraHook final : public model::ProjectionHook {
 public:
  explicit LoraHook(TrainGraph& graph) : graph_(graph) {}
  LayerState* state = nullptr;

  void setTerm(int layer, Projection projection, const Tensor& x,
               compute::ProjectionProduct& product) override {
    graph_.checkCancel();
    const int index =
        graph_.siteIndex_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(projection)];
    const int which = normedInputOf(projection);
    const Group* folded =
        which < 0 ? nullptr : graph_.foldedGroup(layer, static_cast<NormedInput>(which));
    if (index < 0 && folded == nullptr) {
      return;
    }
    if (index >= 0 && graph_.groups_[static_cast<std::size_t>(
                                         graph_.sites_[static_cast<std::size_t>(index)].group)]
                              .sites.front() == index) {
      downProjection(index, x);
    }
    if (folded != nullptr) {  // Note [the LoRA term in the inner dimension]
      product.x = which == 0 ? &state->acts.h1Wide : &state->acts.h2Wide;
      product.w = &folded->memberRows[memberOf(projection)];
      return;
    }
    const Site& s = graph_.sites_[static_cast<std::size_t>(index)];
    Tensor& u = state->u[static_cast<std::size_t>(projection)];
    if (graph_.dropoutActive_) {  // each member's u from its own masked input
      Tensor xd = graph_.dropoutMask(layer, projection, x.dim(0), x.dim(1));
      graph_.backend_.multiplyInPlace(xd, x);
      graph_.backend_.matmul(s.gemmA, false, xd, true, u, 1.0f, 0.0f);
    }
    product.lhsT = &u;
    product.low = &s.gemmB;
    product.transposeLow = true;
    product.scale = static_cast<float>(graph_.lora_.scale());
  }

  // At a group's first member: the group's uᵀ (Σr, T), and every member's rows of it as its u;
  // without dropout uᵀ = A·xᵀ for the whole group at once (with dropout each member fills its own
  // rows from its masked input).
  void downProjection(int first, const Tensor& x) {
    const Group& g = graph_.groups_[static_cast<std::size_t>(
        graph_.sites_[static_cast<std::size_t>(first)].group)];
    compute::Backend& backend = graph_.backend_;
    const Tensor uGroup = backend.empty(backend.capabilities().activationDType, {g.rows, x.dim(0)});
    for (int member : g.sites) {
      const Site& m = graph_.sites_[static_cast<std::size_t>(member)];
      state->u[static_cast<std::size_t>(m.site.module)] =
          uGroup.rows(m.groupRow, graph_.lora_.rank);
    }
    if (!graph_.dropoutActive_) {
      Tensor all = uGroup;
      const runtime::gpu::OpTimingScope timing("lora_down");
      backend.matmul(g.gemmA, false, x, true, all, 1.0f, 0.0f);  // uᵀ = A·xᵀ, the whole group
    }
    if (g.folded.defined()) {  // scale·u beside x (Note [the LoRA term in the inner dimension])
      const Site& s = graph_.sites_[static_cast<std::size_t>(first)];
      Tensor& wide = normedInputOf(s.site.module) == 0 ? state->acts.h1Wide : state->acts.h2Wide;
      Tensor tail = wide.columns(x.dim(1), g.rows);
      const auto scale = static_cast<float>(graph_.lora_.scale());
      backend.copyMatrices(std::array<compute::MatrixCopy, 1>{{{&uGroup, &tail, true, scale}}});
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
    sites_.emplace_back().site = site;
  }
  // The flat layout (Note [LoRA groups]): each group's A's, then the B's of its sites.
  const std::int64_t r = lora_.rank;
  for (std::size_t layer = 0; layer < siteIndex_.size(); ++layer) {
    for (const auto& projections : model::kInputGroups) {  // Note [LoRA groups]
      Group g;
      for (Projection p : projections) {
        const int index = siteIndex_[layer][static_cast<std::size_t>(p)];
        if (index >= 0) {
          Site& s = sites_[static_cast<std::size_t>(index)];
          s.group = static_cast<int>(groups_.size());
          s.groupRow = g.rows;
          g.sites.push_back(index);
          g.rows += r;
          g.in = s.site.inFeatures;
        }
      }
      if (g.sites.empty()) {
        continue;
      }
      g.offset = flatElements_;
      flatElements_ += padded(g.rows * g.in);
      for (int index : g.sites) {
        Site& s = sites_[static_cast<std::size_t>(index)];
        s.offsetB = flatElements_;
        flatElements_ += padded(s.site.outFeatures * r);
      }
      groups_.push_back(std::move(g));
    }
  }
  // Note [the LoRA term in the inner dimension]: the groups whose stacked weight placeWeights
  // placed with exactly their Σr rows and columns more (LoraFold) fold, without dropout.
  foldedGroups_.assign(siteIndex_.size(), {-1, -1});
  const bool foldable = backend_.capabilities().device == compute::Device::Gpu &&
                        backend_.capabilities().activationDType == compute::DType::BF16 &&
                        lora_.dropout == 0.0;
  for (std::size_t index = 0; foldable && index < groups_.size(); ++index) {
    Group& g = groups_[index];
    const LoraSite& first = sites_[static_cast<std::size_t>(g.sites.front())].site;
    const int which = normedInputOf(first.module);
    if (which < 0) {
      continue;
    }
    const model::LayerWeights& w = weights.layers[static_cast<std::size_t>(first.layer)];
    const Tensor& folded = which == 0 ? w.qkvFolded : w.gateUpFolded;
    const Tensor& stacked = which == 0 ? w.qkv : w.gateUp;
    if (!folded.defined() || folded.dim(0) != stacked.dim(0) + g.rows ||
        folded.dim(1) != g.in + g.rows) {
      continue;
    }
    g.folded = folded;
    std::int64_t row = 0;
    for (Projection p : projectionsOf(which)) {
      const std::int64_t out = projectionShape(config, p).second;
      g.memberRows.push_back(folded.rows(row, out));
      const int site =
          siteIndex_[static_cast<std::size_t>(first.layer)][static_cast<std::size_t>(p)];
      if (site >= 0) {
        sites_[static_cast<std::size_t>(site)].foldRow = row;
      }
      row += out;
    }
    foldedGroups_[static_cast<std::size_t>(first.layer)][static_cast<std::size_t>(which)] =
        static_cast<int>(index);
    normSpare_[static_cast<std::size_t>(which)] = g.rows;  // one R for every layer (LoraFold)
  }
  const compute::Shape flat{std::max<std::int64_t>(flatElements_, 1)};
  {
    const memory::OwnerScope owner(memory::Owner::Grads);
    grads_ = backend_.empty(compute::DType::F32, flat);
  }
  {
    const memory::OwnerScope owner(memory::Owner::Optimizer);
    firstMoments_ = backend_.empty(compute::DType::F32, flat);
    secondMoments_ = backend_.empty(compute::DType::F32, flat);
  }
  {
    const memory::OwnerScope owner(memory::Owner::Lora);
    params_ = backend_.empty(compute::DType::F32, flat);
    const compute::DType act = backend_.capabilities().activationDType;
    gemmParams_ = act == compute::DType::F32 ? params_ : backend_.empty(act, flat);
  }
  bindViews();
  loadAdapter(adapter);
  backend_.fillZero(std::vector<Tensor*>{&firstMoments_, &secondMoments_});
  zeroGradients();
}

void TrainGraph::bindViews() {
  const std::int64_t r = lora_.rank;
  for (Group& g : groups_) {
    g.gemmA = block(gemmParams_, g.offset, g.rows, g.in);
    g.gradA = block(grads_, g.offset, g.rows, g.in);
  }
  for (Site& s : sites_) {
    const std::int64_t in = s.site.inFeatures;
    const std::int64_t out = s.site.outFeatures;
    const std::int64_t offsetA =
        groups_[static_cast<std::size_t>(s.group)].offset + s.groupRow * in;
    s.offsetA = offsetA;
    s.a = block(params_, offsetA, r, in);
    s.gemmA = block(gemmParams_, offsetA, r, in);
    s.gradA = block(grads_, offsetA, r, in);
    s.firstA = block(firstMoments_, offsetA, r, in);
    s.secondA = block(secondMoments_, offsetA, r, in);
    s.b = block(params_, s.offsetB, out, r);
    s.gemmB = block(gemmParams_, s.offsetB, out, r);
    s.gradB = block(grads_, s.offsetB, out, r);
    s.firstB = block(firstMoments_, s.offsetB, out, r);
    s.secondB = block(secondMoments_, s.offsetB, out, r);
  }
}

void TrainGraph::refreshGemmWeights() {
  if (gemmParamsStale_ && gemmParams_.data() != params_.data()) {
    backend_.convert(params_, gemmParams_);
    // The folded groups' A and B into their stacked weights (Note [the LoRA term in the inner
    // dimension]): A under W, each B beside its projection's rows, in its member's columns.
    std::size_t blocks = 0;
    for (const Group& g : groups_) {
      blocks += g.folded.defined() ? 1 + g.sites.size() : 0;
    }
    std::vector<Tensor> into;
    into.reserve(blocks);
    std::vector<compute::MatrixCopy> copies;
    copies.reserve(blocks);
    for (const Group& g : groups_) {
      if (!g.folded.defined()) {
        continue;
      }
      into.push_back(g.folded.rows(g.folded.dim(0) - g.rows, g.rows).columns(0, g.in));
      copies.push_back({&g.gemmA, &into.back()});
      for (int index : g.sites) {
        const Site& s = sites_[static_cast<std::size_t>(index)];
        into.push_back(
            g.folded.rows(s.foldRow, s.site.outFeatures).columns(g.in + s.groupRow, lora_.rank));
        copies.push_back({&s.gemmB, &into.back()});
      }
    }
    if (!copies.empty()) {
      backend_.copyMatrices(copies);
    }
  }
  gemmParamsStale_ = false;
}

const TrainGraph::Group* TrainGraph::foldedGroup(int layer, NormedInput which) const {
  const int index = foldedGroups_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(which)];
  return index < 0 ? nullptr : &groups_[static_cast<std::size_t>(index)];
}

TrainGraph::~TrainGraph() = default;

void TrainGraph::loadAdapter(const LoraAdapter& adapter) {
  if (adapter.weights.size() != sites_.size()) {
    throw std::invalid_argument("loadAdapter: adapter has " +
                                std::to_string(adapter.weights.size()) + " sites, graph " +
                                std::to_string(sites_.size()));
  }
  const std::int64_t r = lora_.rank;
  std::vector<float> flat(static_cast<std::size_t>(params_.numel()), 0.0f);
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
    std::copy(w.a.begin(), w.a.end(), flat.begin() + s.offsetA);
    std::copy(w.b.begin(), w.b.end(), flat.begin() + s.offsetB);
  }
  const memory::OwnerScope owner(memory::Owner::Lora);
  const compute::DType act = backend_.capabilities().activationDType;
  params_ = backend_.upload(flat, compute::DType::F32, params_.shape());
  if (act != compute::DType::F32) {
    gemmParams_ = backend_.empty(act, params_.shape());
  } else {
    gemmParams_ = params_;
  }
  bindViews();
  gemmParamsStale_ = true;
}

void TrainGraph::loadMoments(const std::vector<LoraMoments>& moments) {
  if (moments.size() != sites_.size()) {
    throw std::invalid_argument("loadMoments: " + std::to_string(moments.size()) + " moments for " +
                                std::to_string(sites_.size()) + " sites");
  }
  std::vector<float> first(static_cast<std::size_t>(params_.numel()), 0.0f);
  std::vector<float> second(first.size(), 0.0f);
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
    std::copy(m.firstA.begin(), m.firstA.end(), first.begin() + s.offsetA);
    std::copy(m.secondA.begin(), m.secondA.end(), second.begin() + s.offsetA);
    std::copy(m.firstB.begin(), m.firstB.end(), first.begin() + s.offsetB);
    std::copy(m.secondB.begin(), m.secondB.end(), second.begin() + s.offsetB);
  }
  const memory::OwnerScope owner(memory::Owner::Optimizer);
  firstMoments_ = backend_.upload(first, compute::DType::F32, params_.shape());
  secondMoments_ = backend_.upload(second, compute::DType::F32, params_.shape());
  bindViews();
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
  backend_.fillZero(std::vector<Tensor*>{&grads_});  // the padding too: it stays zero
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

std::vector<compute::AdamWTensors> TrainGraph::adamwTensors() {
  std::vector<compute::AdamWTensors> tensors;
  for (Site& s : sites_) {
    tensors.push_back({&s.a, &s.gradA, &s.firstA, &s.secondA});
    tensors.push_back({&s.b, &s.gradB, &s.firstB, &s.secondB});
  }
  return tensors;
}

void TrainGraph::adamwStep(const AdamWConfig& config, double learningRate, std::int64_t step) {
  backend_.adamw(adamwTensors(), adamwScalars(config, learningRate, step));
  gemmParamsStale_ = true;
}

void TrainGraph::clipAndUpdateOnBackend(const Tensor& scalars, Tensor& sums) {
  backend_.clipScaledGradients(gradientTensors(), scalars, sums);
  backend_.adamwIfFinite(adamwTensors(), scalars, sums);
  gemmParamsStale_ = true;
}

namespace {
// n values of a flat buffer from `offset` (a site's A or B: LoraSlices).
std::span<const float> part(std::span<const float> flat, std::int64_t offset, std::int64_t n) {
  return flat.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(n));
}

std::vector<float> sliceOf(std::span<const float> flat, std::int64_t offset, std::int64_t n) {
  const std::span<const float> values = part(flat, offset, n);
  return std::vector<float>(values.begin(), values.end());
}

void unpackAdapter(std::span<const float> flat, std::span<const LoraSlices> slices,
                   LoraAdapter& adapter) {
  if (adapter.weights.size() != slices.size()) {
    throw std::invalid_argument("downloadAdapter: adapter has " +
                                std::to_string(adapter.weights.size()) + " sites, graph " +
                                std::to_string(slices.size()));
  }
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const LoraSlices& s = slices[i];
    adapter.weights[i].a = sliceOf(flat, s.offsetA, s.countA);
    adapter.weights[i].b = sliceOf(flat, s.offsetB, s.countB);
  }
}

void unpackMoments(std::span<const float> first, std::span<const float> second,
                   std::span<const LoraSlices> slices, std::vector<LoraMoments>& moments) {
  moments.resize(slices.size());
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const LoraSlices& s = slices[i];
    moments[i] = {sliceOf(first, s.offsetA, s.countA), sliceOf(second, s.offsetA, s.countA),
                  sliceOf(first, s.offsetB, s.countB), sliceOf(second, s.offsetB, s.countB)};
  }
}

}  // namespace

std::vector<LoraSlices> TrainGraph::slices() const {
  std::vector<LoraSlices> out;
  out.reserve(sites_.size());
  for (const Site& s : sites_) {
    out.push_back({s.offsetA, s.a.numel(), s.offsetB, s.b.numel()});
  }
  return out;
}

void TrainGraph::downloadAdapter(LoraAdapter& adapter) {
  unpackAdapter(backend_.download(params_), slices(), adapter);  // one transfer for all
}

void TrainGraph::downloadMoments(std::vector<LoraMoments>& moments) {
  unpackMoments(backend_.download(firstMoments_), backend_.download(secondMoments_), slices(),
                moments);
}

PendingLoraState TrainGraph::downloadStateAsync() {
  // The device copies live until their download lands (a few milliseconds into the next step).
  const memory::OwnerScope owner(memory::Owner::Optimizer);
  const std::array<const Tensor*, 3> flat{&params_, &firstMoments_, &secondMoments_};
  return PendingLoraState(backend_.downloadAsync(flat), slices());
}

void PendingLoraState::wait(LoraAdapter& adapter, std::vector<LoraMoments>& moments) {
  const std::vector<std::span<const float>> flat = download_->wait();
  unpackAdapter(flat[0], slices_, adapter);
  unpackMoments(flat[1], flat[2], slices_, moments);
}

std::vector<std::span<const float>> PendingLoraState::waitArrays() {
  const std::vector<std::span<const float>> flat = download_->wait();
  std::vector<std::span<const float>> arrays;
  arrays.reserve(6 * slices_.size());
  for (const LoraSlices& s : slices_) {
    arrays.push_back(part(flat[0], s.offsetA, s.countA));
    arrays.push_back(part(flat[0], s.offsetB, s.countB));
    arrays.push_back(part(flat[1], s.offsetA, s.countA));
    arrays.push_back(part(flat[2], s.offsetA, s.countA));
    arrays.push_back(part(flat[1], s.offsetB, s.countB));
    arrays.push_back(part(flat[2], s.offsetB, s.countB));
  }
  return arrays;
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
  if (deferred_ != nullptr) {
    backend_.dropoutMaskAt(mask, key_.seed, dropoutStreamLow(key_, layer, projection),
                           *deferred_->scalars, layout_->seq, *deferred_->rowLengths,
                           key_.microBatch, lora_.dropout);
  } else {
    backend_.dropoutMask(mask, key_.seed, dropoutStream(key_, layer, projection), lora_.dropout);
  }
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
  const model::SequenceLayout layout = model::makeSequenceLayout(
      backend_, config_, in.batch, in.seq, in.documentStarts, in.positions);
  dropoutActive_ = false;
  cancel_ = nullptr;
  refreshGemmWeights();
  LayerState state(backend_, config_, in.batch, in.seq, normSpare_);
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
                                    const DropoutKey& key, const std::atomic<bool>* cancel,
                                    const DeferredPass* deferred) {
  // Everything a pass allocates lives until the pass ends (ops tag their own scratch as
  // workspace).
  const memory::OwnerScope owner(memory::Owner::Activations);
  model::checkForwardInput(config_, in);
  if (in.labels.empty()) {
    throw std::invalid_argument("forwardBackward: the batch has no labels");
  }
  const std::int64_t tokens = in.batch * in.seq;
  const compute::DType act = backend_.capabilities().activationDType;
  const model::SequenceLayout layout = model::makeSequenceLayout(
      backend_, config_, in.batch, in.seq, in.documentStarts, in.positions);
  layout_ = &layout;
  key_ = key;
  dropoutActive_ = lora_.dropout > 0.0;
  deferred_ = deferred;
  cancel_ = cancel;
  refreshGemmWeights();
  const std::size_t layers = weights_.layers.size();
  const bool checkpointing = options_.activationCheckpointing;

  std::vector<Tensor> xs;  // [layer] (T, H): each layer's input, then the last layer's output
  for (std::size_t l = 0; l <= layers; ++l) {
    xs.push_back(backend_.empty(act, {tokens, config_.hiddenSize}));
  }
  std::vector<LayerState> states;  // every layer's h1 and h2 are the first's: recomputed
  states.reserve(checkpointing ? 1 : layers);
  for (std::size_t l = 0; l < (checkpointing ? 1 : layers); ++l) {
    states.emplace_back(backend_, config_, in.batch, in.seq, normSpare_,
                        states.empty() ? nullptr : &states[0]);
  }
  auto stateOf = [&](std::size_t l) -> LayerState& { return states[checkpointing ? 0 : l]; };
  LoraHook hook(*this);

  model::embedTokens(backend_, config_, weights_, in.ids, xs[0]);
  for (std::size_t l = 0; l < layers; ++l) {
    hook.state = &stateOf(l);
    model::decoderLayerForward(backend_, config_, weights_.layers[l], static_cast<int>(l), layout,
                               xs[l], xs[l + 1], hook.state->acts, &hook);
  }
  normsOf_.fill(static_cast<int>(layers) - 1);  // the last layer's, as the forward left them
  Tensor dx = backend_.empty(act, {tokens, config_.hiddenSize});  // (T, H) ∂loss/∂ residual
  if (deferred != nullptr && deferred->targets.size() != static_cast<std::size_t>(tokens)) {
    throw std::invalid_argument("forwardBackward: " + std::to_string(deferred->targets.size()) +
                                " deferred targets for " + std::to_string(tokens) + " tokens");
  }
  const LossSum loss = deferred != nullptr
                           ? headLoss(xs[layers], deferred->targets, gradScale, &dx, deferred->sums)
                           : headLoss(xs[layers], model::shiftedTargets(in), gradScale, &dx);

  Tensor recomputed = checkpointing ? backend_.empty(act, {tokens, config_.hiddenSize}) : Tensor();
  for (std::size_t l = layers; l-- > 0;) {
    LayerState& state = stateOf(l);
    if (checkpointing) {
      hook.state = &state;
      model::decoderLayerForward(backend_, config_, weights_.layers[l], static_cast<int>(l), layout,
                                 xs[l], recomputed, state.acts, &hook);
      normsOf_.fill(static_cast<int>(l));
    }
    layerBackward(static_cast<int>(l), state, xs[l], dx, l > 0);
  }
  layout_ = nullptr;
  deferred_ = nullptr;
  return loss;
}

LossSum TrainGraph::headLoss(const Tensor& x, std::span<const std::int32_t> targets,
                             float gradScale, Tensor* dx, Tensor* sums) {
  checkCancel();
  const compute::DType act = backend_.capabilities().activationDType;
  const std::int64_t tokens = x.dim(0);
  const auto eps = static_cast<float>(config_.rmsNormEps);
  Tensor h = backend_.empty(act, x.shape());
  Tensor rstd = backend_.empty(compute::DType::F32, {tokens});
  backend_.rmsnormForward(x, weights_.finalNorm, eps, h, rstd);
  Tensor losses = backend_.empty(compute::DType::F32, {tokens});
  Tensor dh = dx != nullptr ? backend_.empty(act, x.shape()) : Tensor();
  if (deferred_ != nullptr) {  // graph mode: the loss weight is in device memory
    backend_.lmHeadCrossEntropyAt(h, weights_.lmHead, targets, deferred_->passRows,
                                  *deferred_->scalars, losses, dh,
                                  static_cast<float>(config_.finalLogitSoftcap));
  } else {
    backend_.lmHeadCrossEntropy(h, weights_.lmHead, targets, gradScale, losses, dh,
                                static_cast<float>(config_.finalLogitSoftcap));
  }
  if (dx != nullptr) {
    backend_.rmsnormBackward(dh, x, weights_.finalNorm, rstd, *dx, false);
  }
  LossSum sum;
  if (sums != nullptr) {  // graph mode: summed on the backend, read after the step
    backend_.accumulateLoss(losses, *sums);
    sum.predictedTokens =
        static_cast<std::int64_t>(std::count_if(targets.begin(), targets.end(), [](std::int32_t t) {
          return t != compute::kIgnoreTarget;
        }));
    return sum;
  }
  const std::vector<float> values = backend_.download(losses);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] != compute::kIgnoreTarget) {
      sum.sum += values[i];
      ++sum.predictedTokens;
    }
  }
  return sum;
}

// Note [stacked q/k/v]: the input gradient of the q, k and v projections is
// dh = dq·Wq + dk·Wk + dv·Wv. As three GEMMs, the last two add to dh through an f32 scratch and a
// separate pass each (the accumulating products of hip/HipBackendOpsGemm.cpp), and k's and v's are
// narrow (N = kv·hd) for the vendor GEMM. On a GPU, model::placeWeights puts a layer's q, k and v
// into the rows of one bf16 tensor (LayerWeights::qkv, the three its views), so that
// dh = [dq | dk | dv]·[Wq; Wk; Wv] is one GEMM over K = (heads + 2·kv)·hd, rounded once. The
// gradients are copied side by side first (Backend::stackColumns): attention's backward and RoPE
// write them apart, and the LoRA products read each on its own. On an H200 (Llama-3.2-1B shape,
// bench_gpu_train --prompt-percent 50 --profile-steps 3) the step's GEMMs went from 27.1 to 26.6 ms
// and the accumulations from 0.80 to 0.29 ms, the copies took 0.37 ms: the step 47.8-47.9 to
// 47.1-47.2 ms, and the loop (Llama, --packing documents, 3 runs) from 80.2K to 81.1K real
// tokens/s. The CPU keeps three products in one launch (its GEMMs accumulate in f32 already).
//
// Note [RoPE into the stacked gradient]: where q/k/v are stacked and no q/k norm stands between
// RoPE and the projections, RoPE's backward writes straight into the stacked gradient: one
// Backend::ropeBackwardStacked launch reads attention's dq, dk and dv and writes [rope⁻¹(dq) |
// rope⁻¹(dk) | dv] into dqkv, and the q, k and v LoRA sites read their columns there
// (LoraOutputSite::dyColumn), in place of two in-place RoPE launches and three copies. On an H200
// under Nsight Compute (Llama-3.2-1B, B8 × S512) those five took 12.0, 7.4, 10.9, 5.5 and 5.2 µs a
// layer, the one launch 30 µs (a first layout, each thread storing half a head's pack pairs, took
// 40); by the engine's op timing on the Llama loop (--packing documents) the backward's RoPE and
// copies took 0.71 ms a step, the launch 0.41. The loop's delivered tokens/s (3 runs each, one
// call) moved within its spread: Llama 87.6K against 87.6K, Qwen2.5-0.5B 134.0K against 133.2K.
//
// Note [stacked gate/up]: the same for gate and up, dh = dgate·Wg + dup·Wu: placeWeights stacks
// them (LayerWeights::gateUp) and dh = [dgate | dup]·[Wg; Wu] is one GEMM over K = 2·I, with the
// group's g·A under it, where up's product had gone through the f32 scratch and its add. SwiGLU's
// backward writes the two gradients side by side (Backend::swigluBackwardStacked) at no more cost
// than apart, and each LoRA site reads its half in place (LoraOutputSite::dyColumn), so nothing
// is copied. GeGLU (Gemma) and the CPU keep two products. On an H200 (bench_gpu_train
// --prompt-percent 50 --profile-steps 3, 2 rounds each in one call) the input gradients' GEMMs
// took 10.46-10.50 ms a Llama-3.2-1B step against 10.74 and the add's 0.29 ms went: the step
// 44.24-44.28 ms against 44.54-44.81; Qwen2.5-0.5B 30.69-30.79 against 31.34-31.91.
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
    backend_.rmsnormBackward(dx, a.mlpOut, w.postMlpNorm, a.rstdMlpOut, dMlpOut, false);
  }
  Tensor dAct = backend_.empty(act, {tokens, config_.intermediateSize});
  const std::array<compute::MatmulProduct, 1> downInput{
      {{&dMlpOut, false, &w.down, false, &dAct, 1.0f, 0.0f}}};
  groupBackward(layer, {{Projection::Down, &dMlpOut}}, state, a.swiglu, &dAct, downInput);
  Tensor dh;  // ∂/∂ h2, then ∂/∂ h1
  const Tensor& h2 = normedInput(layer, NormedInput::Mlp, a.xMid,
                                 sandwich ? w.preMlpNorm : w.postNorm, state.acts.h2);
  if (const Group* folded = foldedGroup(layer, NormedInput::Mlp);
      folded != nullptr && config_.mlpActivation == model::MlpActivation::Silu) {
    // Note [the LoRA term in the inner dimension]: [dgate | dup | g]·[W, B; A, 0]
    const std::int64_t intermediate = config_.intermediateSize;
    Tensor dyWide = backend_.empty(act, {tokens, 2 * intermediate + folded->rows});
    Tensor dGateUp = dyWide.columns(0, 2 * intermediate);
    backend_.swigluBackwardStacked(dAct, a.gate, a.up, dGateUp);
    dh = backend_.empty(act, {tokens, config_.hiddenSize});
    groupBackward(layer,
                  {{Projection::Gate, &dGateUp, 0}, {Projection::Up, &dGateUp, intermediate}},
                  state, h2, &dh, {}, &dyWide);
  } else if (w.gateUp.defined() && config_.mlpActivation == model::MlpActivation::Silu) {
    // Note [stacked gate/up]
    dh = backend_.empty(act, {tokens, config_.hiddenSize});
    const std::int64_t intermediate = config_.intermediateSize;
    Tensor dGateUp = backend_.empty(act, {tokens, 2 * intermediate});
    backend_.swigluBackwardStacked(dAct, a.gate, a.up, dGateUp);
    const std::array<compute::MatmulProduct, 1> gateUpInput{
        {{&dGateUp, false, &w.gateUp, false, &dh, 1.0f, 0.0f}}};
    groupBackward(layer,
                  {{Projection::Gate, &dGateUp, 0}, {Projection::Up, &dGateUp, intermediate}},
                  state, h2, &dh, gateUpInput);
  } else {
    dh = backend_.empty(act, {tokens, config_.hiddenSize});
    Tensor dGate = backend_.empty(act, dAct.shape());
    Tensor dUp = backend_.empty(act, dAct.shape());
    if (config_.mlpActivation == model::MlpActivation::GeluTanh) {
      backend_.gegluBackward(dAct, a.gate, a.up, dGate, dUp);
    } else {
      backend_.swigluBackward(dAct, a.gate, a.up, dGate, dUp);
    }
    const std::array<compute::MatmulProduct, 2> gateUpInput{{
        {&dGate, false, &w.gate, false, &dh, 1.0f, 0.0f},
        {&dUp, false, &w.up, false, &dh, 1.0f, 1.0f},
    }};
    groupBackward(layer, {{Projection::Gate, &dGate}, {Projection::Up, &dUp}}, state, h2, &dh,
                  gateUpInput);
  }
  // dx += the norm's branch: dx = ∂/∂ xMid
  backend_.rmsnormBackward(dh, a.xMid, sandwich ? w.preMlpNorm : w.postNorm, a.rstd2, dx, true);

  // Attention block (through post_attention_layernorm with sandwich norms).
  checkCancel();
  Tensor dAttentionOut = dx;
  if (sandwich) {
    dAttentionOut = backend_.empty(act, {tokens, config_.hiddenSize});
    backend_.rmsnormBackward(dx, a.attentionOut, w.postNorm, a.rstdAttentionOut, dAttentionOut,
                             false);
  }
  Tensor dAttention = backend_.empty(act, {tokens, heads * hd});
  const std::array<compute::MatmulProduct, 1> oInput{
      {{&dAttentionOut, false, &w.o, false, &dAttention, 1.0f, 0.0f}}};
  groupBackward(layer, {{Projection::O, &dAttentionOut}}, state, a.attention, &dAttention, oInput);
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
  const Group* folded = needInputGradient ? foldedGroup(layer, NormedInput::Attention) : nullptr;
  const bool stacked = needInputGradient && (folded != nullptr || w.qkv.defined());
  // Note [RoPE into the stacked gradient]
  const bool ropeIntoStack = stacked && !config_.qkNorm;
  if (!ropeIntoStack) {
    backend_.rope(dqHeads, s.ropePositions(), s.invFreqOf(layer), true);  // ∂/∂ q before RoPE
    backend_.rope(dkHeads, s.ropePositions(), s.invFreqOf(layer), true);
  }
  if (config_.qkNorm) {  // ∂/∂ the projections' outputs, through q_norm and k_norm
    Tensor dqRaw = backend_.empty(act, dq.shape());
    Tensor dkRaw = backend_.empty(act, dk.shape());
    const compute::Shape qRows{tokens * heads, hd};
    const compute::Shape kRows{tokens * kvHeads, hd};
    Tensor dqRawRows = dqRaw.viewAs(qRows);
    Tensor dkRawRows = dkRaw.viewAs(kRows);
    backend_.rmsnormBackward(dq.viewAs(qRows), a.qRaw.viewAs(qRows), w.qNorm, a.rstdQ, dqRawRows,
                             false);
    backend_.rmsnormBackward(dk.viewAs(kRows), a.kRaw.viewAs(kRows), w.kNorm, a.rstdK, dkRawRows,
                             false);
    dq = dqRaw;
    dk = dkRaw;
  }
  Tensor dyWide;
  dh = backend_.empty(act, {tokens, config_.hiddenSize});
  Tensor dqkv;
  std::array<compute::MatmulProduct, 3> qkvInput{{
      {&dq, false, &w.q, false, &dh, 1.0f, 0.0f},
      {&dk, false, &w.k, false, &dh, 1.0f, 1.0f},
      {&dv, false, &w.v, false, &dh, 1.0f, 1.0f},
  }};
  std::span<const compute::MatmulProduct> qkvProducts(qkvInput);
  if (stacked) {
    if (folded != nullptr) {  // Note [the LoRA term in the inner dimension]
      dyWide = backend_.empty(act, {tokens, w.qkv.dim(0) + folded->rows});
      dqkv = dyWide.columns(0, w.qkv.dim(0));
      qkvProducts = {};
    } else {  // Note [stacked q/k/v]
      dqkv = backend_.empty(act, {tokens, w.qkv.dim(0)});
      qkvInput[0] = {&dqkv, false, &w.qkv, false, &dh, 1.0f, 0.0f};
      qkvProducts = qkvProducts.first(1);
    }
    if (ropeIntoStack) {
      backend_.ropeBackwardStacked(dqHeads, dkHeads, dv.viewAs({tokens, kvHeads, hd}),
                                   s.ropePositions(), s.invFreqOf(layer), dqkv);
    } else {
      backend_.stackColumns(std::array<const Tensor*, 3>{&dq, &dk, &dv}, dqkv);
    }
  } else if (!needInputGradient) {
    qkvProducts = {};
  }
  Tensor* dhOrNone = needInputGradient ? &dh : nullptr;
  const Tensor& h1 = normedInput(layer, NormedInput::Attention, xIn, w.inputNorm, state.acts.h1);
  Tensor* wide = folded != nullptr ? &dyWide : nullptr;
  if (ropeIntoStack) {  // the LoRA sites read their rotated gradients in place, in dqkv
    groupBackward(layer,
                  {{Projection::Q, &dqkv, 0},
                   {Projection::K, &dqkv, heads * hd},
                   {Projection::V, &dqkv, (heads + kvHeads) * hd}},
                  state, h1, dhOrNone, qkvProducts, wide);
  } else {
    groupBackward(layer, {{Projection::Q, &dq}, {Projection::K, &dk}, {Projection::V, &dv}}, state,
                  h1, dhOrNone, qkvProducts, wide);
  }
  if (needInputGradient) {
    backend_.rmsnormBackward(dh, xIn, w.inputNorm, a.rstd1, dx, true);  // dx = ∂/∂ xIn
  }
}

// Note [normed inputs recomputed]: h1 = RMSNorm(x) and h2 = RMSNorm(xMid) are the inputs of the
// q/k/v and gate/up projections, which only their LoRA backward reads again. Kept per layer they
// would cost two (T, H) tensors a layer (on Llama-3.2-1B at 8 × 512 tokens on a GPU, 32 MiB a
// layer, half a GiB a step), while one RMSNorm of the layer's saved input remakes each. So every
// layer shares one pair of buffers (the first layer's), and the backward remakes a layer's normed
// input into its buffer just before its LoRA backward reads it. The same op on the same input
// gives the same bits, so the gradients are those of kept tensors. The buffers already hold a
// layer's after its forward (the last layer's after the forward pass, the layer just recomputed
// under activation checkpointing): normsOf_ says whose, and those are not remade.
const Tensor& TrainGraph::normedInput(int layer, NormedInput which, const Tensor& x,
                                      const Tensor& weight, Tensor& buffer) {
  int& holder = normsOf_[static_cast<std::size_t>(which)];
  if (holder != layer) {
    Tensor rstd = backend_.empty(compute::DType::F32, {x.dim(0)});
    backend_.rmsnormForward(x, weight, static_cast<float>(config_.rmsNormEps), buffer, rstd);
    holder = layer;
  }
  return buffer;
}

void TrainGraph::groupBackward(int layer, std::initializer_list<Member> members, LayerState& state,
                               const Tensor& x, Tensor* dx,
                               std::span<const compute::MatmulProduct> frozen, Tensor* dyWide) {
  checkCancel();
  const auto siteOf = [&](Projection p) {
    return siteIndex_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(p)];
  };
  const auto adapted = std::find_if(members.begin(), members.end(),
                                    [&](const Member& m) { return siteOf(m.projection) >= 0; });
  const bool hostBackend = backend_.capabilities().device == compute::Device::Cpu;
  const bool termUnderFrozen =
      !frozen.empty() && adapted != members.end() && !dropoutActive_ && !hostBackend;
  if (!frozen.empty() && !termUnderFrozen) {
    const runtime::gpu::OpTimingScope timing("input_gradient");
    backend_.matmulGroup(frozen);
  }
  if (adapted == members.end()) {
    return;
  }
  const Group& group = groups_[static_cast<std::size_t>(
      sites_[static_cast<std::size_t>(siteOf(adapted->projection))].group)];
  const compute::DType act = backend_.capabilities().activationDType;
  const auto scale = static_cast<float>(lora_.scale());
  const std::int64_t r = lora_.rank;
  const std::int64_t tokens = x.dim(0);
  Tensor gGroup = backend_.empty(act, {group.rows, tokens});  // gᵀ (Σr, T), each site's rows
  std::vector<Tensor> gRows(members.size());
  // Folded: g beside dy too, each site's columns of dyWide's last Σr
  std::vector<Tensor> gColumns(members.size());
  std::vector<compute::LoraOutputSite> outputs;  // one group: a single launch on the CPU
  std::size_t i = 0;
  for (const Member& m : members) {
    const int index = siteOf(m.projection);
    if (index >= 0) {
      Site& s = sites_[static_cast<std::size_t>(index)];
      gRows[i] = gGroup.rows(s.groupRow, r);
      if (dyWide != nullptr) {
        gColumns[i] = dyWide->columns(dyWide->dim(1) - group.rows + s.groupRow, r);
      }
      // dB += scale·dyᵀ·u and gᵀ = scale·Bᵀ·dyᵀ (uᵀ (r, T) saved by the forward)
      outputs.push_back({m.dy, &s.gemmB, &state.u[static_cast<std::size_t>(m.projection)], &s.gradB,
                         &gRows[i], m.dyColumn, gColumns[i].defined() ? &gColumns[i] : nullptr});
    }
    ++i;
  }
  backend_.loraOutputProducts(outputs, scale);
  if (dyWide != nullptr && dx != nullptr) {  // Note [the LoRA term in the inner dimension]
    Tensor gradA = group.gradA;
    {
      const runtime::gpu::OpTimingScope timing("lora_grad_a");
      backend_.matmul(gGroup, false, x, false, gradA, 1.0f, 1.0f);  // dA += gᵀ·x, every site
    }
    const runtime::gpu::OpTimingScope timing("input_gradient");
    const Tensor weights = group.folded.columns(0, group.in);          // [W; A]
    backend_.matmul(*dyWide, false, weights, false, *dx, 1.0f, 0.0f);  // dx = [dy | g]·[W; A]
    return;
  }
  if (termUnderFrozen) {
    Tensor gradA = group.gradA;
    {
      const runtime::gpu::OpTimingScope timing("lora_grad_a");
      backend_.matmul(gGroup, false, x, false, gradA, 1.0f, 1.0f);  // dA += gᵀ·x, every site
    }
    const runtime::gpu::OpTimingScope timing("input_gradient");
    const compute::MatmulProduct& first = frozen.front();  // dx = dy·W + g·A
    const compute::ProjectionProduct product{
        first.a, first.b, first.transposeB, first.c, nullptr, &gGroup, &group.gemmA, false, 1.0f};
    backend_.projectionProducts(std::span(&product, 1));
    backend_.matmulGroup(frozen.subspan(1));  // the rest of a sum adds to it
    return;
  }
  if (!dropoutActive_) {
    Tensor gradA = group.gradA;
    std::array<compute::MatmulProduct, 2> both{{
        {&gGroup, false, &x, false, &gradA, 1.0f, 1.0f},       // dA += gᵀ·x, every site
        {&gGroup, true, &group.gemmA, false, dx, 1.0f, 1.0f},  // dx += g·A
    }};
    // The CPU runs both as one launch; a GPU adds g·A to dx in one fused kernel.
    backend_.matmulGroup(std::span(both.data(), hostBackend && dx != nullptr ? 2 : 1));
    if (!hostBackend && dx != nullptr) {
      backend_.addLowRankProduct(gGroup, group.gemmA, false, 1.0f, *dx);
    }
    return;
  }
  for (const Member& m : members) {
    const int index = siteOf(m.projection);
    if (index < 0) {
      continue;
    }
    Site& s = sites_[static_cast<std::size_t>(index)];
    const Tensor g = gGroup.rows(s.groupRow, r);
    Tensor xd = dropoutMask(layer, m.projection, tokens, x.dim(1));
    backend_.multiplyInPlace(xd, x);
    backend_.matmul(g, false, xd, false, s.gradA, 1.0f, 1.0f);
    if (dx != nullptr) {
      Tensor through = backend_.empty(act, x.shape());
      backend_.matmul(g, true, s.gemmA, false, through, 1.0f, 0.0f);
      backend_.multiplyInPlace(through, dropoutMask(layer, m.projection, tokens, x.dim(1)));
      backend_.addInPlace(*dx, through);
    }
  }
}

}  // namespace lorascope::train
