// model/MemoryEstimate.cpp — LoRA training memory, term by term (the terms are listed in
// MemoryEstimate.h; scripts/gpu-check.sh memory compares them with a real step's peak).
#include "model/MemoryEstimate.h"

#include <algorithm>
#include <utility>

#include "compute/LoraOutputPlan.h"  // defines: loraOutputPlan, loraOutputRankServed

namespace lorascope::model {

namespace {

constexpr std::uint64_t kF32 = 4;

std::uint64_t u64(std::int64_t value) {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(value, 0));
}

// (in, out) features of a projection.
std::pair<std::int64_t, std::int64_t> projectionShape(const ModelConfig& c, Projection p) {
  const std::int64_t q = c.numHeads * c.headDim;
  const std::int64_t kv = c.numKvHeads * c.headDim;
  switch (p) {
    case Projection::Q:
      return {c.hiddenSize, q};
    case Projection::K:
    case Projection::V:
      return {c.hiddenSize, kv};
    case Projection::O:
      return {q, c.hiddenSize};
    case Projection::Gate:
    case Projection::Up:
      return {c.hiddenSize, c.intermediateSize};
    case Projection::Down:
      return {c.intermediateSize, c.hiddenSize};
  }
  return {0, 0};
}

struct PerToken {
  std::uint64_t savedLayer = 0;  // one layer's kept activations
  std::uint64_t residual = 0;    // one (T, H) row in the activation dtype
  std::uint64_t lossLinear = 0;  // the loss transient's part that grows with the tokens
  std::uint64_t backward = 0;    // one layer's backward transient
};

PerToken perToken(const ModelConfig& c, const TrainingShape& shape) {
  const std::uint64_t a = shape.activationDTypeBytes;
  const std::uint64_t h = u64(c.hiddenSize);
  const std::uint64_t q = u64(c.numHeads * c.headDim);
  const std::uint64_t kv = u64(c.numKvHeads * c.headDim);
  const std::uint64_t inter = u64(c.intermediateSize);
  const std::uint64_t heads = u64(c.numHeads);
  const std::uint64_t r = u64(shape.loraRank);
  const std::uint64_t adapted = shape.targets.size();
  PerToken t;
  t.residual = h * a;
  // xMid; q, attention; k, v; gate, up, swiglu; u per adapted projection; rstd1, rstd2 and the
  // log-sum-exp per head in f32. (h1 and h2 are one pair for all layers: savedPerToken.)
  t.savedLayer = a * (h + 2 * q + 2 * kv + 3 * inter + adapted * r) + kF32 * (2 + heads);
  if (c.qkNorm) {  // q, k before their norms, and the norms' statistics per head
    t.savedLayer += a * (q + kv) + kF32 * (heads + u64(c.numKvHeads));
  }
  if (c.sandwichNorms) {  // o_proj's and down_proj's outputs before their norms, and statistics
    t.savedLayer += a * 2 * h + kF32 * 2;
  }
  // Final-norm output and its gradient; f32 rstd, row loss and the fused loss's four row states;
  // the int32 targets; the f32 (T, H) gradient sum.
  t.lossLinear = 2 * h * a + kF32 * (2 + 4) + 4 + h * kF32;
  // dAct, dGate, dUp; dh, normGrad; dAttention, dq; dk, dv; g (r); f32 dk/dv partials and row
  // dot of the attention backward.
  t.backward = a * (3 * inter + 2 * h + 2 * q + 2 * kv + r) + kF32 * (2 * q + heads);
  if (c.qkNorm) {  // the gradients of q and k before their norms
    t.backward += a * (q + kv);
  }
  if (shape.stackedQkvGradient) {  // dq, dk and dv side by side
    t.backward += a * (q + 2 * kv);
  }
  if (c.sandwichNorms) {  // the gradients of the MLP's and the attention's outputs
    t.backward += a * 2 * h;
  }
  return t;
}

// The fused lm-head loss's chunk scratch for `tokens` rows: the logits (and on a GPU their bf16
// weights) of at most lossChunkFloats elements (a whole vocabulary when that is smaller).
std::uint64_t lossChunkBytes(const ModelConfig& c, const TrainingShape& shape,
                             std::int64_t tokens) {
  if (tokens <= 0) {
    return 0;
  }
  const std::int64_t vocab = std::max<std::int64_t>(c.vocabSize, 1);
  const std::int64_t chunk = std::max<std::int64_t>(shape.lossChunkFloats, 1);
  const std::int64_t columns = std::clamp<std::int64_t>(chunk / tokens, 1, vocab);
  return u64(tokens * columns) * shape.lossChunkBytesPerLogit;
}

// The bf16 workspace of the largest projection, when NF4 weights are dequantised on a GPU.
std::uint64_t dequantizeWorkspaceBytes(const ModelConfig& c, const TrainingShape& shape) {
  if (!shape.nf4Workspace) {
    return 0;
  }
  std::uint64_t largest = 0;
  for (const Projection p : kAllProjections) {
    const auto [in, out] = projectionShape(c, p);
    largest = std::max(largest, u64(in) * u64(out));
  }
  return largest * 2;
}

// The f32 partial sums of a GPU's LoRA output products: one group's adapted sites at a time, in
// one launch (Note [one pass over dy] in compute/hip/lora_products.hip); the largest group's.
std::uint64_t loraOutputPartialBytes(const ModelConfig& c, const TrainingShape& shape,
                                     std::int64_t tokens) {
  if (!shape.loraOutputPartials || tokens <= 0) {
    return 0;
  }
  std::uint64_t largest = 0;
  for (const auto& group : kInputGroups) {
    std::uint64_t floats = 0;
    for (const Projection p : group) {
      if (shape.targets.count(p) != 0) {
        const compute::LoraOutputPlan plan =
            compute::loraOutputPlan(tokens, projectionShape(c, p).second, shape.loraRank);
        floats += u64(plan.gPartialFloats + plan.bPartialFloats);
      }
    }
    largest = std::max(largest, floats * kF32);
  }
  return largest;
}

// One layer's backward transient for `tokens` tokens.
std::uint64_t backwardBytes(const ModelConfig& c, const TrainingShape& shape, std::int64_t tokens) {
  return perToken(c, shape).backward * u64(tokens) + loraOutputPartialBytes(c, shape, tokens);
}

std::uint64_t transientBytes(const ModelConfig& c, const TrainingShape& shape,
                             std::int64_t tokens) {
  const PerToken t = perToken(c, shape);
  const std::uint64_t loss = t.lossLinear * u64(tokens) + lossChunkBytes(c, shape, tokens);
  return std::max(loss, backwardBytes(c, shape, tokens)) + dequantizeWorkspaceBytes(c, shape);
}

// Saved bytes per token for the whole step (the arena's share).
std::uint64_t savedPerToken(const ModelConfig& c, const TrainingShape& shape) {
  const PerToken t = perToken(c, shape);
  const std::uint64_t layers = u64(c.numLayers);
  const std::uint64_t keptLayers =
      shape.activationCheckpointing ? std::min<std::uint64_t>(1, layers) : layers;
  // Every layer's input and the last output, the residual gradient, the layers' one pair of
  // normed inputs h1, h2 (train/TrainGraph.cpp, Note [normed inputs recomputed]), and with
  // checkpointing the recomputed layer's output.
  const std::uint64_t residuals = layers + 4 + (shape.activationCheckpointing ? 1 : 0);
  return keptLayers * t.savedLayer + residuals * t.residual;
}

}  // namespace

TrainingMemory estimateTrainingMemory(const ModelConfig& c, const TrainingShape& shape,
                                      std::int64_t tokens) {
  TrainingMemory m;
  m.weightsBytes = shape.weightsBytes;
  std::int64_t perLayer = 0;
  for (Projection p : shape.targets) {
    const auto [in, out] = projectionShape(c, p);
    perLayer += shape.loraRank * (in + out);
  }
  m.loraParameters = perLayer * c.numLayers;
  m.loraBytes = u64(m.loraParameters) * kF32;
  m.loraGradBytes = m.loraBytes;
  m.optimizerBytes = 2 * m.loraBytes;
  m.savedBytes = savedPerToken(c, shape) * u64(tokens);
  const PerToken t = perToken(c, shape);
  m.lossBytes = t.lossLinear * u64(tokens) + lossChunkBytes(c, shape, tokens);
  m.backwardBytes = backwardBytes(c, shape, tokens);
  m.dequantizeBytes = dequantizeWorkspaceBytes(c, shape);
  m.peakBytes =
      m.fixedBytes() + m.savedBytes + std::max(m.lossBytes, m.backwardBytes) + m.dequantizeBytes;
  return m;
}

memory::MemoryModel plannerModel(const ModelConfig& c, const TrainingShape& shape) {
  memory::MemoryModel model;
  model.fixedBytes = estimateTrainingMemory(c, shape, 0).fixedBytes();
  model.activationBytesPerToken = savedPerToken(c, shape);
  model.transientBytes = [c, shape](std::int64_t tokens) {
    return transientBytes(c, shape, tokens);
  };
  return model;
}

TrainingShape shapeOnDevice(bool onGpu, std::uint64_t weightsBytes, std::int64_t loraRank,
                            std::set<Projection> targets, bool activationCheckpointing,
                            bool nf4Weights) {
  TrainingShape shape;
  shape.weightsBytes = weightsBytes;
  shape.loraRank = loraRank;
  shape.targets = std::move(targets);
  shape.activationDTypeBytes = onGpu ? 2 : 4;  // the backends' activation dtypes: bf16, f32
  shape.activationCheckpointing = activationCheckpointing;
  shape.lossChunkFloats = onGpu ? kLossChunkFloats : kCpuLossChunkFloats;
  shape.lossChunkBytesPerLogit = onGpu ? 6 : 4;
  shape.nf4Workspace = onGpu && nf4Weights;
  shape.stackedQkvGradient = onGpu && !nf4Weights;  // as model::placeWeights places them
  shape.loraOutputPartials = onGpu && compute::loraOutputRankServed(loraRank);
  return shape;
}

}  // namespace lorascope::model
