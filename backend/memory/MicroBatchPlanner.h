// MicroBatchPlanner.h — automatic micro-batch sizing (`--batch-size auto`), a pure function.
//
// The planned peak of a step is fixedBytes + activationBytesPerToken * tokens +
// transientBytes(tokens) with tokens = microBatch * sequenceLength. The planner picks the largest
// micro-batch whose planned peak fits the free VRAM less a safety margin, and raises gradient
// accumulation so that microBatch * accumulation stays the effective batch. To keep that product
// exact, the micro-batch is a divisor of the effective batch. After an out-of-memory the plan steps
// down to the next smaller divisor instead of failing.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace lorascope::memory {

// How much memory a training step needs (model/MemoryEstimate.h's plannerModel, or a measured
// step): fixed + saved activations per token × tokens + the step's transient at that many tokens.
struct MemoryModel {
  std::uint64_t fixedBytes = 0;               // weights, LoRA, grads, optimizer, workspace
  std::uint64_t activationBytesPerToken = 0;  // activations saved per token of a micro-batch
  // Bytes held only for part of the step (the loss's chunked scratch, one layer's backward), as
  // a function of the tokens; none when unset.
  std::function<std::uint64_t(std::int64_t tokens)> transientBytes = {};
};

struct PlanRequest {
  MemoryModel model;
  std::int64_t sequenceLength = 0;  // tokens per sequence: the longest the loader produces
  std::int64_t effectiveBatch = 0;  // sequences per optimizer step
  std::int64_t maxMicroBatch = 0;   // upper bound (a group's: effective / ranks); 0 = effective
  std::uint64_t freeBytes = 0;      // free VRAM now (driver reading)
  double safetyMargin = 0.10;       // fraction of free VRAM kept back for the unforeseen
};

struct MicroBatchPlan {
  bool fits = false;  // false: not even micro-batch 1 fits; the numbers say by how much
  std::int64_t microBatch = 0;
  std::int64_t gradientAccumulation = 0;
  std::int64_t effectiveBatch = 0;            // microBatch * gradientAccumulation
  std::int64_t largestFittingMicroBatch = 0;  // before rounding down to a divisor
  std::uint64_t plannedPeakBytes = 0;
  std::uint64_t budgetBytes = 0;  // free * (1 - margin)
  std::uint64_t freeBytes = 0;
  std::uint64_t arenaBytes = 0;  // activation bytes of the chosen micro-batch: the arena size
  std::string summary;           // one line for the run log
};

// Bad requests (non-positive batch or length, margin outside [0, 1)) throw PlanError.
class PlanError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

std::uint64_t plannedPeakBytes(const MemoryModel& model, std::int64_t microBatch,
                               std::int64_t sequenceLength);
MicroBatchPlan planMicroBatch(const PlanRequest& request);
// The plan after `failed` ran out of memory: the next smaller divisor of the effective batch that
// the model says fits. fits == false when `failed` was already at micro-batch 1.
MicroBatchPlan stepDownAfterOom(const PlanRequest& request, const MicroBatchPlan& failed);

}  // namespace lorascope::memory
