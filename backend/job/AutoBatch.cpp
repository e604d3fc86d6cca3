// job/AutoBatch.cpp — the free-memory reading and the plan for `--batch-size auto`.
#include "job/AutoBatch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "memory/DeviceAllocator.h"
#include "telemetry/HostProvider.h"

namespace lorascope::job {
namespace {

std::uint64_t freeBytesFor(compute::Backend& backend) {
  if (memory::DeviceAllocator* allocator = backend.deviceAllocator()) {
    return allocator->deviceInfo().freeBytes + allocator->stats().cachedFreeBytes;
  }
  telemetry::HostProvider host;
  telemetry::Snapshot snapshot;
  if (!host.init() || !host.refresh(snapshot) || !snapshot.host ||
      !snapshot.host->ramAvailableBytes) {
    throw std::runtime_error("--batch-size auto: cannot read the available RAM (" +
                             host.lastError() + "); give --batch-size N instead");
  }
  return *snapshot.host->ramAvailableBytes;
}

}  // namespace

model::TrainingShape trainingShape(const train::TrainConfig& config, compute::Device device,
                                   std::uint64_t weightsBytes) {
  return model::shapeOnDevice(device == compute::Device::Gpu, weightsBytes, config.lora.rank,
                              config.lora.targets, config.activationCheckpointing,
                              config.quantization == model::WeightQuantization::Nf4);
}

std::string setAllocatorPolicy(memory::DeviceAllocator& allocator, bool arena,
                               const model::ModelConfig& model, const train::TrainConfig& config,
                               std::int64_t microBatch, std::int64_t nextStep) {
  memory::AllocatorPolicy policy = allocator.policy();
  policy.mode = arena ? memory::AllocatorMode::Arena : memory::AllocatorMode::Caching;
  policy.arenaBytes = 0;
  std::string detail = "caching allocator from step " + std::to_string(nextStep);
  if (arena) {
    const std::uint64_t perToken =
        model::plannerModel(model, trainingShape(config, compute::Device::Gpu, 0))
            .activationBytesPerToken;
    policy.arenaBytes = static_cast<std::size_t>(
        perToken * static_cast<std::uint64_t>(microBatch * config.maxSeqLen));
    detail = "arena of " + std::to_string(policy.arenaBytes >> 20) + " MiB (micro-batch " +
             std::to_string(microBatch) + " x " + std::to_string(config.maxSeqLen) +
             " tokens) from step " + std::to_string(nextStep);
  }
  allocator.setPolicy(policy);
  return detail;
}

AutoMicroBatch::AutoMicroBatch(const TrainRunSettings& settings, compute::Backend& backend,
                               const model::ModelConfig& config,
                               std::span<const train::TokenizedExample> examples)
    : deviceName_(backend.capabilities().name) {
  const train::TrainConfig& t = settings.train;
  std::int64_t longest = 1;
  for (const train::TokenizedExample& example : examples) {
    longest = std::max(longest, static_cast<std::int64_t>(example.ids.size()));
  }
  // The weights are already on the device: the free memory read below is what is left.
  request_.model = model::plannerModel(config, trainingShape(t, backend.capabilities().device, 0));
  request_.sequenceLength =
      t.packing != train::Packing::Off ? t.maxSeqLen : std::min(longest, t.maxSeqLen);
  request_.effectiveBatch = t.effectiveBatch();
  request_.freeBytes = freeBytesFor(backend);
  request_.safetyMargin = settings.memoryMargin;
}

void AutoMicroBatch::apply(train::TrainLoop& loop, const DeviceLog& log) {
  const memory::MicroBatchPlan plan = memory::planMicroBatch(request_);
  if (!plan.fits) {
    throw std::runtime_error("--batch-size auto on " + deviceName_ + ": " + plan.summary +
                             " — try activation-checkpointing, a shorter max-seq-len or a lower "
                             "lora-r, or free memory held by other processes");
  }
  loop.setMicroBatchSize(plan.microBatch, plan.summary);
  log("batch-size auto on " + deviceName_ + ": " + plan.summary);
}

bool AutoMicroBatch::stepDown(train::TrainLoop& loop, const DeviceLog& log) {
  memory::MicroBatchPlan failed;
  failed.microBatch = loop.microBatchSize();
  const memory::MicroBatchPlan plan = memory::stepDownAfterOom(request_, failed);
  if (failed.microBatch <= 1) {
    return false;
  }
  // The plan's own choice when the model still says one fits, else micro-batch 1 regardless: the
  // device has just shown the model was optimistic.
  const std::int64_t next = plan.fits ? plan.microBatch : 1;
  loop.setMicroBatchSize(next, plan.summary);
  log(plan.summary + " (micro-batch " + std::to_string(next) + " x " +
      std::to_string(loop.accumulation()) + ")");
  return true;
}

}  // namespace lorascope::job
