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

std::runtime_error noneFits(const std::string& deviceName, const memory::MicroBatchPlan& plan) {
  return std::runtime_error("--batch-size auto on " + deviceName + ": " + plan.summary +
                            " — try activation-checkpointing, a shorter max-seq-len or a lower "
                            "lora-r, or free memory held by other processes");
}

}  // namespace

GroupMicroBatch agreeOnMicroBatch(group::Collective& group, compute::Backend& backend,
                                  std::int64_t planned) {
  std::vector<float> slots(static_cast<std::size_t>(group.size()), 0.0f);
  slots.at(static_cast<std::size_t>(group.rank())) = static_cast<float>(planned);
  compute::Tensor plans =
      backend.upload(slots, compute::DType::F32, {static_cast<std::int64_t>(slots.size())});
  backend.synchronize();  // the collective reads what the upload wrote (group/Collective.h)
  group.allReduceSum(plans.as<float>(), slots.size());
  GroupMicroBatch agreed;
  for (const float plan : backend.download(plans)) {
    agreed.planned.push_back(static_cast<std::int64_t>(plan));
  }
  agreed.microBatch = *std::ranges::min_element(agreed.planned);
  return agreed;
}

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
                               std::span<const train::TokenizedExample> examples, int ranks)
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
  // At most the effective batch over the ranks, so that a step has at least one micro-batch per
  // rank. An effective batch smaller than the group is refused before the run opens
  // (job/RunOpening.cpp): the bound is at least 1.
  request_.maxMicroBatch = t.effectiveBatch() / ranks;
  request_.freeBytes = freeBytesFor(backend);
  request_.safetyMargin = settings.memoryMargin;
}

void AutoMicroBatch::apply(train::TrainLoop& loop, const DeviceLog& log) {
  const memory::MicroBatchPlan plan = memory::planMicroBatch(request_);
  if (!plan.fits) {
    throw noneFits(deviceName_, plan);
  }
  loop.setMicroBatchSize(plan.microBatch, plan.summary);
  log("batch-size auto on " + deviceName_ + ": " + plan.summary);
}

void AutoMicroBatch::applyInGroup(train::TrainLoop& loop, group::Collective& group,
                                  compute::Backend& backend, const DeviceLog& log) {
  const memory::MicroBatchPlan plan = memory::planMicroBatch(request_);
  // Exchanged before this rank may throw: its peers would wait in the sum until the time-out.
  const GroupMicroBatch agreed = agreeOnMicroBatch(group, backend, plan.fits ? plan.microBatch : 0);
  if (!plan.fits) {
    throw noneFits(deviceName_, plan);
  }
  std::string plans;
  for (std::size_t r = 0; r < agreed.planned.size(); ++r) {
    plans += (r == 0 ? "rank " : ", rank ") + std::to_string(r) +
             (static_cast<int>(r) == group.rank() ? " (" + deviceName_ + ")" : "") +
             (agreed.planned[r] > 0 ? " plans " + std::to_string(agreed.planned[r]) : " fits none");
  }
  const std::string onGroup =
      "batch-size auto on " + std::to_string(group.size()) + " GPUs: " + plans;
  if (agreed.microBatch == 0) {
    throw std::runtime_error(onGroup + "; the rank that fits none says by how much");
  }
  loop.setMicroBatchSize(agreed.microBatch, onGroup);
  log(onGroup + "; the group runs micro-batch " + std::to_string(agreed.microBatch) + " x " +
      std::to_string(loop.accumulation()) + " accumulation (this rank's " + plan.summary + ")");
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
