// model/MemoryEstimate.h — the one model of the memory LoRA training of a model needs on a
// device: what the setup page shows, what `--batch-size auto` plans with and what sizes the
// allocator's arena. Each term is reported apart, in bytes.
//
// It counts what this trainer holds (train/TrainGraph.cpp), not what trainers in general hold:
//   fixed      frozen weights as the device holds them; LoRA A and B, their gradients and AdamW's
//              two moments, all f32
//   saved      per token, in the activation dtype: every layer's input and the last output
//              (H each), and per layer kept for the backward pass — one layer with activation
//              checkpointing, all without — h1, xMid, h2 (H each), q and attention (heads·hd
//              each), k and v (kv·hd each), gate, up and their product (I each), the LoRA
//              intermediates x·Aᵀ (r per adapted projection), plus f32 norm statistics (2) and
//              the attention log-sum-exp (heads); with q/k norms (Qwen3, Gemma 3) q and k before
//              the norm and their per-head statistics, with Gemma's sandwich norms the attention's
//              and the MLP's outputs before their norms (H each); the gradient of the residual
//              stream (H) and,
//              with checkpointing, the recomputed layer's output (H)
//   transient  the larger of two moments: the loss (final norm output and its gradient, H each;
//              the f32 row losses; the fused lm-head's chunked scratch: f32 logits and bf16
//              weights of at most kLossChunkFloats, and an f32 (tokens, H) gradient sum), and
//              one layer's backward (gradients of gate, up and their product, I each; of the
//              norms' outputs, H twice; of q, k, v and the attention output; f32 partial dk and
//              dv of heads·hd each; of q and k before their norms, and of the two sandwiched
//              outputs, where the model has them; on a GPU, the stacked [dq | dk | dv] and the
//              f32 partial sums of the LoRA output products of one group of projections, the
//              largest)
//   dequant    with NF4 projections on a GPU (--quantize nf4): the bf16 workspace one projection
//              is dequantised into for its product (hip/HipBackendOpsGemm.cpp's note), the
//              largest projection's out × in, alive beside either transient
// Not counted: vendor-library workspaces outside our allocator, the allocator's rounding (peak
// reserved ≥ peak allocated), and the state mirror's device copy of LoRA and AdamW (3 × loraBytes,
// train/TrainGraph.h: downloadStateAsync), made at a step's end and freed once downloaded, early
// in the next step (bench_gpu_train --mirror reports a step's peak allocated beside it and
// alone); scripts/gpu-check.sh memory measures the first two against this.
#pragma once

#include <cstdint>
#include <set>

#include "memory/MicroBatchPlanner.h"  // defines: MemoryModel
#include "model/ModelConfig.h"
#include "model/Projections.h"  // defines: Projection

namespace lorascope::model {

// The logits of one chunk of the fused lm-head loss, as the backends size it
// (kLmHeadChunkFloats): on a GPU 32 Mi f32 logits (128 MiB) and as many bf16 softmax weights
// (compute/hip/lm_head_loss.h); on the CPU 4 Mi f32 logits, turned into weights in place
// (compute/cpu/lm_head_loss.h).
inline constexpr std::int64_t kLossChunkFloats = std::int64_t{32} << 20;
inline constexpr std::int64_t kCpuLossChunkFloats = std::int64_t{4} << 20;

struct TrainingShape {
  std::uint64_t weightsBytes = 0;  // frozen weights as the training device holds them
  std::int64_t loraRank = 8;
  std::set<Projection> targets = {
      Projection::Q,    Projection::K,  Projection::V,   Projection::O,
      Projection::Gate, Projection::Up, Projection::Down};  // in every layer
  std::uint64_t activationDTypeBytes = 2;                   // 2 (bf16, GPU) or 4 (f32, CPU)
  bool activationCheckpointing = false;
  std::int64_t lossChunkFloats = kLossChunkFloats;  // kCpuLossChunkFloats on the CPU
  std::uint64_t lossChunkBytesPerLogit = 6;         // GPU: f32 logit + bf16 weight; CPU: 4
  bool nf4Workspace = false;  // NF4 projections on a GPU: a bf16 dequantisation workspace
  // bf16 q/k/v on a GPU: the backward's [dq | dk | dv] copy (Note [stacked q/k/v] in
  // train/TrainGraph.cpp)
  bool stackedQkvGradient = false;
  // a GPU at a rank its LoRA output products' kernel takes: their f32 partial sums, one group's
  // sites at a time (Note [one pass over dy] in compute/hip/lora_products.hip)
  bool loraOutputPartials = false;
};

struct TrainingMemory {
  std::uint64_t weightsBytes = 0;
  std::int64_t loraParameters = 0;    // Σ r·(in + out) over the adapted projections
  std::uint64_t loraBytes = 0;        // A and B, f32
  std::uint64_t loraGradBytes = 0;    // their gradients, f32
  std::uint64_t optimizerBytes = 0;   // AdamW's two moments, f32
  std::uint64_t savedBytes = 0;       // activations kept for the backward pass (arena-sized)
  std::uint64_t lossBytes = 0;        // the loss's transient (see above)
  std::uint64_t backwardBytes = 0;    // one layer's backward transient
  std::uint64_t dequantizeBytes = 0;  // the NF4 dequantisation workspace (0 without)
  // fixed + saved + max(loss, backward) + dequantize: the step's peak allocated
  std::uint64_t peakBytes = 0;
  std::uint64_t fixedBytes() const {
    return weightsBytes + loraBytes + loraGradBytes + optimizerBytes;
  }
};

// A step over `tokens` tokens (micro-batch × sequence length).
// A run's shape on the device it trains on: on a GPU bf16 activations, the GPU's loss chunk and
// (NF4 projections) the dequantisation workspace; on the CPU f32 and the CPU's chunk. What
// `--batch-size auto` (job/AutoBatch.h) and the setup page's estimate both start from.
TrainingShape shapeOnDevice(bool onGpu, std::uint64_t weightsBytes, std::int64_t loraRank,
                            std::set<Projection> targets, bool activationCheckpointing,
                            bool nf4Weights);

TrainingMemory estimateTrainingMemory(const ModelConfig& config, const TrainingShape& shape,
                                      std::int64_t tokens);

// The same model in the micro-batch planner's form (memory/MicroBatchPlanner.h): fixed bytes,
// saved activations per token (the arena), and the transient as a function of the tokens.
memory::MemoryModel plannerModel(const ModelConfig& config, const TrainingShape& shape);

}  // namespace lorascope::model
