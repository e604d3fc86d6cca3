// test_auto_micro_batch.cpp — `--batch-size auto`: the trainer's memory model and the plan it
// gives on a Qwen2.5-0.5B-shaped model.
#include <QtTest>

#include "model/MemoryEstimate.h"
#include "model/ReferenceShapes.h"
#include "train/AutoMicroBatch.h"

using namespace lorascope;

namespace {

constexpr std::uint64_t kWeights = 988'000'000;  // bf16 Qwen2.5-0.5B, as the device holds it

}  // namespace

class TestAutoMicroBatch : public QObject {
  Q_OBJECT

 private slots:
  void fixedBytesAreWeightsPlusLoraState() {
    const model::ModelConfig c = model::qwen25HalfBShape();
    const memory::MemoryModel m = train::trainerMemoryModel(c, {.weightsBytes = kWeights});
    const model::MemoryEstimate e = model::estimateLoraTrainingMemory(c, kWeights, {1, 1, 8});
    // A and B, their gradients and two AdamW moments: four fp32 copies of the LoRA parameters.
    QCOMPARE(m.fixedBytes, kWeights + 4 * 4 * static_cast<std::uint64_t>(e.loraParameters));
  }

  void perTokenBytesFollowDtypeCheckpointingAndChunk() {
    const model::ModelConfig c = model::qwen25HalfBShape();
    const train::TrainerMemoryShape gpu{.weightsBytes = kWeights, .lossChunkColumns = 0};
    train::TrainerMemoryShape cpu = gpu;
    cpu.activationDTypeBytes = 4;
    const std::uint64_t onGpu = train::trainerMemoryModel(c, gpu).activationBytesPerToken;
    // f32 activations take twice the bytes of bf16 ones.
    QCOMPARE(train::trainerMemoryModel(c, cpu).activationBytesPerToken, 2 * onGpu);
    // The saved activations of all 24 layers (bf16) match MemoryEstimate's per-token count.
    const model::MemoryEstimate e = model::estimateLoraTrainingMemory(c, kWeights, {1, 1, 8});
    QCOMPARE(onGpu, e.activationBytes);
    // Checkpointing keeps each layer's input (H values) plus one layer in full.
    train::TrainerMemoryShape checkpointed = gpu;
    checkpointed.activationCheckpointing = true;
    const std::uint64_t perLayer = (e.activationBytes - 896 * 2) / 24;
    QCOMPARE(train::trainerMemoryModel(c, checkpointed).activationBytesPerToken,
             24 * 896 * 2 + perLayer + 896 * 2);
    // The loss adds one fp32 row of its vocabulary chunk per token.
    train::TrainerMemoryShape chunked = gpu;
    chunked.lossChunkColumns = 8192;
    QCOMPARE(train::trainerMemoryModel(c, chunked).activationBytesPerToken, onGpu + 8192 * 4);
  }

  void planPicksTheLargestFittingDivisorAndStepsDown() {
    const model::ModelConfig c = model::qwen25HalfBShape();
    memory::PlanRequest request;
    request.model = train::trainerMemoryModel(c, {.weightsBytes = kWeights});
    request.sequenceLength = 512;
    request.effectiveBatch = 8;
    request.safetyMargin = 0.10;
    // Free VRAM for exactly 5 sequences after the margin: 4 is the largest divisor of 8 that fits.
    const std::uint64_t fiveSequences = memory::plannedPeakBytes(request.model, 5, 512);
    request.freeBytes = static_cast<std::uint64_t>(static_cast<double>(fiveSequences) / 0.9) + 1;
    const memory::MicroBatchPlan plan = memory::planMicroBatch(request);
    QVERIFY(plan.fits);
    QCOMPARE(plan.microBatch, std::int64_t{4});
    QCOMPARE(plan.gradientAccumulation, std::int64_t{2});
    QCOMPARE(plan.effectiveBatch, std::int64_t{8});
    const memory::MicroBatchPlan after = memory::stepDownAfterOom(request, plan);
    QCOMPARE(after.microBatch, std::int64_t{2});
    QCOMPARE(after.gradientAccumulation, std::int64_t{4});
  }
};

QTEST_GUILESS_MAIN(TestAutoMicroBatch)
#include "test_auto_micro_batch.moc"
