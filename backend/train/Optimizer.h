// train/Optimizer.h — AdamW (decoupled weight decay), learning-rate schedules and global-norm
// gradient clipping on fp32 host tensors (LoRA A/B and their moments are fp32 everywhere), and
// the scalars the backend's optimizer ops take so that a training step never leaves the device.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compute/AdamWScalars.h"

namespace lorascope::train {

struct AdamWConfig {
  double learningRate = 2e-4;  // peak; the schedule scales it
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0.0;
};

// One trainable tensor and its state; all spans have the same length.
struct AdamWParam {
  std::span<float> value;
  std::span<const float> grad;
  std::span<float> firstMoment;   // m
  std::span<float> secondMoment;  // v
};

// One AdamW step (PyTorch's torch.optim.AdamW formula, step counted from 1):
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   p ← p − lr/(1−β1^t) · m / (√v/√(1−β2^t) + ε)
// On host memory, with the arithmetic of the CPU backend's adamw op.
void adamwStep(const AdamWConfig& config, double learningRate, std::int64_t step,
               std::span<const AdamWParam> params);
// The fp32 scalars of that step, for Backend::adamw (computed in double, then rounded once).
// Throws std::invalid_argument when step < 1.
compute::AdamWScalars adamwScalars(const AdamWConfig& config, double learningRate,
                                   std::int64_t step);

enum class ScheduleKind { Constant, Linear, Cosine };
ScheduleKind parseScheduleKind(const std::string& name);  // "constant" | "linear" | "cosine"
const char* toString(ScheduleKind kind);

struct Schedule {
  ScheduleKind kind = ScheduleKind::Constant;
  std::int64_t warmupSteps = 0;
  std::int64_t totalSteps = 1;
};

// Learning-rate multiplier for optimizer step `step` (0-based, as transformers' schedulers):
// linear warm-up from 0 over warmupSteps, then constant, linear decay to 0 or half-cosine to 0.
double scheduleFactor(const Schedule& schedule, std::int64_t step);

// Global L2 norm over all gradients (accumulated in double).
double globalGradNorm(std::span<const std::span<const float>> grads);
// Scales every gradient by min(1, maxNorm / (norm + 1e-6)) (torch.nn.utils.clip_grad_norm_);
// returns the norm before clipping. maxNorm ≤ 0 disables clipping.
double clipGradNorm(std::span<const std::span<float>> grads, double maxNorm);
// The factor clipGradNorm scales gradients of global norm `norm` by, or nothing when it leaves
// them as they are (maxNorm ≤ 0, or a norm within the limit).
std::optional<float> clipFactor(double norm, double maxNorm);

}  // namespace lorascope::train
