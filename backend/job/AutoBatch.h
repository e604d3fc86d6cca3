// job/AutoBatch.h — `--batch-size auto`: the largest micro-batch whose planned peak fits the
// memory the run's device has free (less a safety margin), the effective batch kept by raising
// accumulation (memory/MicroBatchPlanner.h over model/MemoryEstimate.h, the one memory model).
// `train` and the engine job call it once the weights are on the device; the choice goes into the
// loop's micro-batch history with its numbers, and an out-of-memory steps down.
//
// In a group every rank plans its own card, no larger than leaves each rank one micro-batch of
// every step (group/RankPlan.h, Note [micro-batches are the unit of work]), and the group runs the
// smallest plan: its shares are counted in micro-batches, so every rank must use the same one.
// A group does not step down: its out of memory restarts every rank (job/EngineJob.cpp).
#pragma once

#include <span>
#include <vector>

#include "compute/Backend.h"
#include "group/Collective.h"
#include "job/RunDevice.h"  // defines: DeviceLog
#include "job/TrainRunConfig.h"
#include "memory/DeviceAllocator.h"
#include "memory/MicroBatchPlanner.h"
#include "model/MemoryEstimate.h"
#include "model/ModelConfig.h"
#include "train/Batching.h"  // defines: TokenizedExample
#include "train/TrainLoop.h"

namespace lorascope::job {

// A run's shape for the memory model: its rank, targets and checkpointing on `device` (bf16
// activations and the GPU's loss chunk, or f32 and the CPU's), whose frozen weights take
// `weightsBytes`.
model::TrainingShape trainingShape(const train::TrainConfig& config, compute::Device device,
                                   std::uint64_t weightsBytes);

// --allocator-policy on a device allocator: arena mode reserves one block for the saved
// activations of `microBatch` × max-seq-len tokens (model/MemoryEstimate.h), so that
// steady-state steps allocate nothing; caching mode gives it back. Both take effect at the next
// step boundary. Returns the line that says what was set.
std::string setAllocatorPolicy(memory::DeviceAllocator& allocator, bool arena,
                               const model::ModelConfig& model, const train::TrainConfig& config,
                               std::int64_t microBatch, std::int64_t nextStep);

// What a group runs: every rank's planned micro-batch (0: none fits its card) and the smallest.
struct GroupMicroBatch {
  std::vector<std::int64_t> planned;  // indexed by rank
  std::int64_t microBatch = 0;
};
// This rank's `planned` and its peers', through one sum over the group of a vector that holds each
// rank's plan in its own slot (a float holds integers below 2^24 exactly), in `backend`'s memory,
// where the collective reads. Every rank of `group` calls it.
GroupMicroBatch agreeOnMicroBatch(group::Collective& group, compute::Backend& backend,
                                  std::int64_t planned);

class AutoMicroBatch {
 public:
  // Reads the free memory: on a GPU the driver's free plus our allocator's cached blocks (the
  // weights are already resident, so they are not counted again), on the CPU the available RAM.
  // `ranks`: 1 for one engine; a rank of a group of `ranks` plans at most effective batch / ranks.
  AutoMicroBatch(const TrainRunSettings& settings, compute::Backend& backend,
                 const model::ModelConfig& config,
                 std::span<const train::TokenizedExample> examples, int ranks);

  // Sets the loop's micro-batch to the plan and logs it. Throws std::runtime_error with the
  // numbers and what to try when not even micro-batch 1 fits.
  void apply(train::TrainLoop& loop, const DeviceLog& log);
  // As apply(), for a rank of `group` computing on `backend`: the loop's micro-batch is the
  // smallest of the ranks' plans, logged with each rank's. Throws on every rank when one rank's
  // card fits none.
  void applyInGroup(train::TrainLoop& loop, group::Collective& group, compute::Backend& backend,
                    const DeviceLog& log);
  // After an out-of-memory at the loop's micro-batch: the next smaller one that fits, applied and
  // logged; false when the loop is already at micro-batch 1 (the error stands).
  bool stepDown(train::TrainLoop& loop, const DeviceLog& log);

  const memory::PlanRequest& request() const { return request_; }

 private:
  memory::PlanRequest request_;
  std::string deviceName_;
};

}  // namespace lorascope::job
