// test_auto_micro_batch.cpp — the one memory model (model/MemoryEstimate.h) and the plan
// `--batch-size auto` makes with it, on a Qwen2.5-0.5B-shaped model. How close the model comes
// to a real step's peak is measured on the GPU (scripts/gpu-check.sh memory).
#include "TestRunner.h"

#include <set>

#include "model/MemoryEstimate.h"
#include "model/ReferenceShapes.h"

using namespace lorascope;

namespace {

constexpr std::uint64_t kWeights = 988'000'000;  // bf16 Qwen2.5-0.5B, as the device holds it

}  // namespace

TEST_CASE(fixedBytesAreWeightsPlusLoraState) {
  const model::ModelConfig c = model::qwen25HalfBShape();
  const model::TrainingMemory m = model::estimateTrainingMemory(c, {.weightsBytes = kWeights}, 1);
  // r·(in + out) over the seven projections of 24 layers, r 8.
  const std::int64_t perLayer =
      8 * ((896 + 896) + 2 * (896 + 128) + (896 + 896) + 2 * (896 + 4864) + (4864 + 896));
  COMPARE(m.loraParameters, 24 * perLayer);
  // A and B, their gradients and two AdamW moments: four fp32 copies of the LoRA parameters.
  COMPARE(m.fixedBytes(), kWeights + 4 * 4 * static_cast<std::uint64_t>(m.loraParameters));
  COMPARE(model::plannerModel(c, {.weightsBytes = kWeights}).fixedBytes, m.fixedBytes());
}

TEST_CASE(savedBytesFollowDtypeTargetsAndCheckpointing) {
  const model::ModelConfig c = model::qwen25HalfBShape();
  const model::TrainingShape gpu{.weightsBytes = kWeights};
  model::TrainingShape cpu = gpu;
  cpu.activationDTypeBytes = 4;
  const std::uint64_t onGpu = model::plannerModel(c, gpu).activationBytesPerToken;
  // Per layer: H + 2 q + 2 kv + 3 I + 7 r in bf16, plus 2 + heads f32; 28 residual rows (the
  // layers' inputs, the last output, the residual gradient, the layers' one pair of h1, h2).
  const std::uint64_t layer = 2 * (896 + 2 * 896 + 2 * 128 + 3 * 4864 + 7 * 8) + 4 * 16;
  COMPARE(onGpu, 24 * layer + 28 * 896 * 2);
  // f32 activations: twice the bf16 bytes, f32 statistics unchanged.
  COMPARE(model::plannerModel(c, cpu).activationBytesPerToken, 2 * onGpu - 24 * 4 * 16);
  // Checkpointing keeps one layer in full and one more residual row (the recomputed output).
  model::TrainingShape checkpointed = gpu;
  checkpointed.activationCheckpointing = true;
  COMPARE(model::plannerModel(c, checkpointed).activationBytesPerToken, layer + 29 * 896 * 2);
  // Fewer targets keep fewer LoRA intermediates.
  model::TrainingShape qv = gpu;
  qv.targets = {model::Projection::Q, model::Projection::V};
  COMPARE(model::plannerModel(c, qv).activationBytesPerToken, onGpu - 24 * 2 * 5 * 8);
}

TEST_CASE(theLossScratchIsCappedByItsChunk) {
  const model::ModelConfig c = model::qwen25HalfBShape();
  // 100 tokens × 151936 columns fit one chunk: f32 logits and bf16 weights of all of them.
  const model::TrainingMemory small = model::estimateTrainingMemory(c, {}, 100);
  VERIFY(small.lossBytes > 100ull * 151936 * 6);
  // At 4096 tokens the chunk holds 32 Mi logits whatever the vocabulary: 192 MiB of scratch.
  const model::TrainingMemory big = model::estimateTrainingMemory(c, {}, 4096);
  const std::uint64_t chunk = 4096ull * (model::kLossChunkFloats / 4096) * 6;
  VERIFY(big.lossBytes > chunk && big.lossBytes < chunk + 4096ull * 8192);
  // The peak takes the larger transient, and the planner's model gives the same peak.
  COMPARE(big.peakBytes,
          big.fixedBytes() + big.savedBytes + std::max(big.lossBytes, big.backwardBytes));
  COMPARE(memory::plannedPeakBytes(model::plannerModel(c, {}), 8, 512), big.peakBytes);
}

TEST_CASE(theStackedQkvGradientIsPartOfTheBackwardTransient) {
  const model::ModelConfig c = model::qwen25HalfBShape();
  model::TrainingShape stacked{};
  stacked.stackedQkvGradient = true;
  // Note [stacked q/k/v]: [dq | dk | dv], q + 2 kv bf16 values a token, beside the rest.
  COMPARE(model::estimateTrainingMemory(c, stacked, 4096).backwardBytes,
          model::estimateTrainingMemory(c, {}, 4096).backwardBytes + 4096ull * 2 * (896 + 2 * 128));
  // Where placeWeights stacks them: unquantised on a GPU; not NF4 projections, not the CPU.
  const std::set<model::Projection> targets = {model::Projection::Q};
  VERIFY(model::shapeOnDevice(true, kWeights, 8, targets, false, false).stackedQkvGradient);
  VERIFY(!model::shapeOnDevice(true, kWeights, 8, targets, false, true).stackedQkvGradient);
  VERIFY(!model::shapeOnDevice(false, kWeights, 8, targets, false, false).stackedQkvGradient);
}

TEST_CASE(theLoraOutputPartialsArePartOfTheBackwardTransient) {
  const model::ModelConfig c = model::qwen25HalfBShape();
  model::TrainingShape partials{};
  partials.loraOutputPartials = true;
  // Note [one pass over dy]: gate and up, one launch, hold the most at 4096 tokens. Each (4864
  // columns) is cut into 19 slices of 256 columns by 22 slabs of 192 tokens; their f32 partial
  // sums of g (19 × 4096 × r) and of dB (22 × 4864 × r) are alive beside the rest.
  COMPARE(model::estimateTrainingMemory(c, partials, 4096).backwardBytes,
          model::estimateTrainingMemory(c, {}, 4096).backwardBytes +
              2 * 4ull * 8 * (19 * 4096 + 22 * 4864));
  // On a GPU at the ranks the kernel takes; the other ranks and the CPU keep the two GEMMs.
  const std::set<model::Projection> targets = {model::Projection::Q};
  VERIFY(model::shapeOnDevice(true, kWeights, 8, targets, false, false).loraOutputPartials);
  VERIFY(model::shapeOnDevice(true, kWeights, 16, targets, false, true).loraOutputPartials);
  VERIFY(!model::shapeOnDevice(true, kWeights, 32, targets, false, false).loraOutputPartials);
  VERIFY(!model::shapeOnDevice(false, kWeights, 8, targets, false, false).loraOutputPartials);
}

TEST_CASE(planPicksTheLargestFittingDivisorAndStepsDown) {
  const model::ModelConfig c = model::qwen25HalfBShape();
  memory::PlanRequest request;
  request.model = model::plannerModel(c, {.weightsBytes = kWeights});
  request.sequenceLength = 512;
  request.effectiveBatch = 8;
  request.safetyMargin = 0.10;
  // Free VRAM for exactly 5 sequences after the margin: 4 is the largest divisor of 8 that fits.
  const std::uint64_t fiveSequences = memory::plannedPeakBytes(request.model, 5, 512);
  request.freeBytes = static_cast<std::uint64_t>(static_cast<double>(fiveSequences) / 0.9) + 1;
  const memory::MicroBatchPlan plan = memory::planMicroBatch(request);
  VERIFY(plan.fits);
  COMPARE(plan.microBatch, std::int64_t{4});
  COMPARE(plan.gradientAccumulation, std::int64_t{2});
  COMPARE(plan.effectiveBatch, std::int64_t{8});
  COMPARE(plan.plannedPeakBytes,
          model::estimateTrainingMemory(c, {.weightsBytes = kWeights}, 4 * 512).peakBytes);
  const memory::MicroBatchPlan after = memory::stepDownAfterOom(request, plan);
  COMPARE(after.microBatch, std::int64_t{2});
  COMPARE(after.gradientAccumulation, std::int64_t{4});
}
