// train/Optimizer.cpp — AdamW, schedules and clipping.
#include "train/Optimizer.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace lorascope::train {

void adamwStep(const AdamWConfig& c, double learningRate, std::int64_t step,
               std::span<const AdamWParam> params) {
  if (step < 1) {
    throw std::invalid_argument("adamwStep: steps are counted from 1, got " + std::to_string(step));
  }
  const double biasCorrection1 = 1.0 - std::pow(c.beta1, static_cast<double>(step));
  const double biasCorrection2 = 1.0 - std::pow(c.beta2, static_cast<double>(step));
  const float decay = static_cast<float>(1.0 - learningRate * c.weightDecay);
  const float stepSize = static_cast<float>(learningRate / biasCorrection1);
  const float sqrtBias2 = static_cast<float>(std::sqrt(biasCorrection2));
  const float beta1 = static_cast<float>(c.beta1);
  const float beta2 = static_cast<float>(c.beta2);
  const float eps = static_cast<float>(c.epsilon);
  for (const AdamWParam& p : params) {
    for (std::size_t i = 0; i < p.value.size(); ++i) {
      const float g = p.grad[i];
      p.value[i] *= decay;
      p.firstMoment[i] = beta1 * p.firstMoment[i] + (1.0f - beta1) * g;
      p.secondMoment[i] = beta2 * p.secondMoment[i] + (1.0f - beta2) * g * g;
      const float denom = std::sqrt(p.secondMoment[i]) / sqrtBias2 + eps;
      p.value[i] -= stepSize * p.firstMoment[i] / denom;
    }
  }
}

ScheduleKind parseScheduleKind(const std::string& name) {
  if (name == "constant")
    return ScheduleKind::Constant;
  if (name == "linear")
    return ScheduleKind::Linear;
  if (name == "cosine")
    return ScheduleKind::Cosine;
  throw std::invalid_argument("unknown learning-rate schedule '" + name +
                              "' (constant, linear or cosine)");
}

const char* toString(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::Constant:
      return "constant";
    case ScheduleKind::Linear:
      return "linear";
    case ScheduleKind::Cosine:
      return "cosine";
  }
  return "?";
}

double scheduleFactor(const Schedule& s, std::int64_t step) {
  if (step < s.warmupSteps) {
    return static_cast<double>(step) /
           static_cast<double>(std::max<std::int64_t>(1, s.warmupSteps));
  }
  if (s.kind == ScheduleKind::Constant) {
    return 1.0;
  }
  const double decaySteps =
      static_cast<double>(std::max<std::int64_t>(1, s.totalSteps - s.warmupSteps));
  const double progress = static_cast<double>(step - s.warmupSteps) / decaySteps;
  if (s.kind == ScheduleKind::Linear) {
    return std::max(0.0, 1.0 - progress);
  }
  return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
}

double globalGradNorm(std::span<const std::span<const float>> grads) {
  double sumSquares = 0.0;
  for (std::span<const float> g : grads) {
    for (float v : g) {
      sumSquares += static_cast<double>(v) * v;
    }
  }
  return std::sqrt(sumSquares);
}

double clipGradNorm(std::span<const std::span<float>> grads, double maxNorm) {
  std::vector<std::span<const float>> views(grads.begin(), grads.end());
  const double norm = globalGradNorm(views);
  if (maxNorm > 0.0) {
    const double coefficient = maxNorm / (norm + 1e-6);
    if (coefficient < 1.0) {
      const auto scale = static_cast<float>(coefficient);
      for (std::span<float> g : grads) {
        for (float& v : g)
          v *= scale;
      }
    }
  }
  return norm;
}

}  // namespace lorascope::train
