// train/Optimizer.cpp — AdamW, schedules and clipping.
#include "train/Optimizer.h"

#include <cmath>
#include <numbers>
#include <optional>
#include <stdexcept>

#include "common/EnumNames.h"
#include "compute/HostOptimizer.h"  // defines: host::adamw, host::addSumOfSquares, host::scale

namespace lorascope::train {

compute::AdamWScalars adamwScalars(const AdamWConfig& c, double learningRate, std::int64_t step) {
  if (step < 1) {
    throw std::invalid_argument("adamwStep: steps are counted from 1, got " + std::to_string(step));
  }
  const double biasCorrection1 = 1.0 - std::pow(c.beta1, static_cast<double>(step));
  const double biasCorrection2 = 1.0 - std::pow(c.beta2, static_cast<double>(step));
  compute::AdamWScalars s;
  s.decay = static_cast<float>(1.0 - learningRate * c.weightDecay);
  s.stepSize = static_cast<float>(learningRate / biasCorrection1);
  s.sqrtBias2 = static_cast<float>(std::sqrt(biasCorrection2));
  s.beta1 = static_cast<float>(c.beta1);
  s.beta2 = static_cast<float>(c.beta2);
  s.epsilon = static_cast<float>(c.epsilon);
  return s;
}

void adamwStep(const AdamWConfig& c, double learningRate, std::int64_t step,
               std::span<const AdamWParam> params) {
  const compute::AdamWScalars scalars = adamwScalars(c, learningRate, step);
  for (const AdamWParam& p : params) {
    compute::host::adamw(p.value.data(), p.grad.data(), p.firstMoment.data(), p.secondMoment.data(),
                         static_cast<std::int64_t>(p.value.size()), scalars);
  }
}

namespace {

constexpr common::EnumName<ScheduleKind> kScheduleNames[] = {{ScheduleKind::Constant, "constant"},
                                                             {ScheduleKind::Linear, "linear"},
                                                             {ScheduleKind::Cosine, "cosine"}};
static_assert(common::coversEnum(kScheduleNames));

}  // namespace

ScheduleKind parseScheduleKind(const std::string& name) {
  if (const std::optional<ScheduleKind> kind = common::parseEnum(kScheduleNames, name)) {
    return *kind;
  }
  throw std::invalid_argument("unknown learning-rate schedule '" + name + "' (" +
                              common::enumNameList(kScheduleNames) + ")");
}

const char* toString(ScheduleKind kind) {
  return common::enumName(kScheduleNames, kind);
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
    sumSquares =
        compute::host::addSumOfSquares(g.data(), static_cast<std::int64_t>(g.size()), sumSquares);
  }
  return std::sqrt(sumSquares);
}

std::optional<float> clipFactor(double norm, double maxNorm) {
  if (maxNorm > 0.0) {
    const double coefficient = maxNorm / (norm + 1e-6);
    if (coefficient < 1.0) {
      return static_cast<float>(coefficient);
    }
  }
  return std::nullopt;
}

double clipGradNorm(std::span<const std::span<float>> grads, double maxNorm) {
  std::vector<std::span<const float>> views(grads.begin(), grads.end());
  const double norm = globalGradNorm(views);
  if (const std::optional<float> factor = clipFactor(norm, maxNorm)) {
    for (std::span<float> g : grads) {
      compute::host::scale(g.data(), static_cast<std::int64_t>(g.size()), *factor);
    }
  }
  return norm;
}

}  // namespace lorascope::train
