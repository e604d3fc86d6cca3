// MicroBatchPlanner.cpp — the micro-batch search and its log line.
#include "memory/MicroBatchPlanner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/Format.h"

namespace lorascope::memory {
using common::formatBytes;
namespace {

void validate(const PlanRequest& request) {
  if (request.sequenceLength <= 0 || request.effectiveBatch <= 0 || request.maxMicroBatch < 0) {
    throw PlanError("micro-batch plan: sequence length (" + std::to_string(request.sequenceLength) +
                    ") and effective batch (" + std::to_string(request.effectiveBatch) +
                    ") must be positive, the micro-batch bound (" +
                    std::to_string(request.maxMicroBatch) + ") non-negative");
  }
  if (!(request.safetyMargin >= 0.0 && request.safetyMargin < 1.0)) {
    throw PlanError("micro-batch plan: safety margin must be in [0, 1), got " +
                    std::to_string(request.safetyMargin));
  }
}

// Chooses the largest divisor of the effective batch that is <= limit and fits the budget.
MicroBatchPlan choose(const PlanRequest& request, std::int64_t limit, const char* why) {
  validate(request);
  MicroBatchPlan plan;
  plan.freeBytes = request.freeBytes;
  plan.budgetBytes = static_cast<std::uint64_t>(
      std::floor(static_cast<double>(request.freeBytes) * (1.0 - request.safetyMargin)));
  const std::int64_t upper =
      std::min(limit, request.maxMicroBatch > 0 ? request.maxMicroBatch : request.effectiveBatch);
  const std::int64_t seq = request.sequenceLength;
  const auto fitsAt = [&](std::int64_t mb) {
    return plannedPeakBytes(request.model, mb, seq) <= plan.budgetBytes;
  };
  for (std::int64_t mb = upper; mb >= 1; --mb) {
    if (fitsAt(mb)) {
      plan.largestFittingMicroBatch = mb;
      break;
    }
  }
  for (std::int64_t mb = plan.largestFittingMicroBatch; mb >= 1; --mb) {
    if (request.effectiveBatch % mb == 0) {
      plan.microBatch = mb;
      break;
    }
  }
  plan.fits = plan.microBatch > 0;
  const std::int64_t shown = plan.fits ? plan.microBatch : 1;
  plan.gradientAccumulation = plan.fits ? request.effectiveBatch / plan.microBatch : 0;
  plan.effectiveBatch = plan.microBatch * plan.gradientAccumulation;
  plan.plannedPeakBytes = plannedPeakBytes(request.model, shown, seq);
  plan.arenaBytes = request.model.activationBytesPerToken * static_cast<std::uint64_t>(shown * seq);
  const std::string numbers =
      "planned peak " + formatBytes(plan.plannedPeakBytes) + " (fixed " +
      formatBytes(request.model.fixedBytes) + " + activations " + formatBytes(plan.arenaBytes) +
      " + transient " +
      formatBytes(plan.plannedPeakBytes - request.model.fixedBytes - plan.arenaBytes) +
      "), budget " + formatBytes(plan.budgetBytes) + " = free " + formatBytes(request.freeBytes) +
      " less " + std::to_string(static_cast<int>(request.safetyMargin * 100)) + "% margin";
  if (plan.fits) {
    plan.summary = std::string(why) + "micro-batch " + std::to_string(plan.microBatch) + " x " +
                   std::to_string(plan.gradientAccumulation) + " accumulation = effective batch " +
                   std::to_string(plan.effectiveBatch) + " at " + std::to_string(seq) +
                   " tokens; " + numbers;
  } else {
    plan.summary = std::string(why) + "no micro-batch fits at " + std::to_string(seq) +
                   " tokens: micro-batch 1 needs " + numbers +
                   ". Try activation checkpointing, a shorter sequence length, or the CPU";
  }
  return plan;
}

}  // namespace

std::uint64_t plannedPeakBytes(const MemoryModel& model, std::int64_t microBatch,
                               std::int64_t sequenceLength) {
  const auto tokens =
      static_cast<std::uint64_t>(microBatch) * static_cast<std::uint64_t>(sequenceLength);
  if (tokens != 0 && model.activationBytesPerToken >
                         (std::numeric_limits<std::uint64_t>::max() - model.fixedBytes) / tokens) {
    return std::numeric_limits<std::uint64_t>::max();  // saturate: certainly does not fit
  }
  const std::uint64_t transient =
      model.transientBytes ? model.transientBytes(static_cast<std::int64_t>(tokens)) : 0;
  const std::uint64_t planned = model.fixedBytes + model.activationBytesPerToken * tokens;
  return transient > std::numeric_limits<std::uint64_t>::max() - planned
             ? std::numeric_limits<std::uint64_t>::max()
             : planned + transient;
}

MicroBatchPlan planMicroBatch(const PlanRequest& request) {
  return choose(request, std::numeric_limits<std::int64_t>::max(), "auto batch: ");
}

MicroBatchPlan stepDownAfterOom(const PlanRequest& request, const MicroBatchPlan& failed) {
  if (failed.microBatch <= 1) {
    MicroBatchPlan plan = choose(request, 0, "");
    plan.summary =
        "out of memory at micro-batch 1: nothing left to step down to. " +
        std::string("Try activation checkpointing, a shorter sequence length, or the CPU");
    return plan;
  }
  const std::string why =
      "out of memory at micro-batch " + std::to_string(failed.microBatch) + ", stepping down: ";
  return choose(request, failed.microBatch - 1, why.c_str());
}

}  // namespace lorascope::memory
