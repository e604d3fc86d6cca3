// test_optimizer.cpp — AdamW against hand-computed steps, the schedules' shapes and clipping. The
// backend's optimizer ops against this arithmetic are in tests/compute/test_op_optimizer.cpp.
#include "TestRunner.h"

#include <cmath>
#include <span>
#include <stdexcept>
#include <vector>

#include "train/Optimizer.h"

using namespace lorascope::train;

// After one step from zero moments, Adam moves every weight by lr·sign(g) (up to ε).
TEST_CASE(firstAdamStepMovesByLearningRateTimesSign) {
  std::vector<float> p{1.0f, -2.0f, 0.5f}, g{0.3f, -4.0f, 1e-3f}, m(3), v(3);
  const AdamWParam param{p, g, m, v};
  adamwStep(AdamWConfig{}, 0.01, 1, std::span(&param, 1));
  VERIFY(std::fabs(p[0] - 0.99f) < 1e-6f);
  VERIFY(std::fabs(p[1] - (-1.99f)) < 1e-6f);
  VERIFY(std::fabs(p[2] - 0.49f) < 1e-4f);
  VERIFY(std::fabs(m[0] - 0.03f) < 1e-7f);
  VERIFY(std::fabs(v[1] - 0.016f) < 1e-4f * 0.016f);  // (1 − β2) is rounded to float
}

// Two steps with weight decay, computed by hand from PyTorch's AdamW formula.
TEST_CASE(secondStepWithWeightDecayMatchesTheFormula) {
  AdamWConfig c;
  c.weightDecay = 0.1;
  std::vector<float> p{2.0f}, g{0.5f}, m(1), v(1);
  const AdamWParam param{p, g, m, v};
  adamwStep(c, 0.1, 1, std::span(&param, 1));
  g[0] = -0.25f;
  adamwStep(c, 0.1, 2, std::span(&param, 1));
  double ep = 2.0, em = 0, ev = 0;
  const double grads[] = {0.5, -0.25};
  for (int t = 1; t <= 2; ++t) {
    const double gt = grads[t - 1];
    ep *= 1 - 0.1 * 0.1;
    em = 0.9 * em + 0.1 * gt;
    ev = 0.999 * ev + 0.001 * gt * gt;
    ep -= 0.1 / (1 - std::pow(0.9, t)) * em /
          (std::sqrt(ev) / std::sqrt(1 - std::pow(0.999, t)) + 1e-8);
  }
  VERIFY2(std::fabs(p[0] - ep) < 1e-6, lstest::format("%g", p[0] - ep));
}

TEST_CASE(stepZeroIsRejected) {
  std::vector<float> p{1}, g{1}, m(1), v(1);
  const AdamWParam param{p, g, m, v};
  VERIFY_THROWS_EXCEPTION(std::invalid_argument,
                          adamwStep(AdamWConfig{}, 0.1, 0, std::span(&param, 1)));
}

TEST_CASE(schedulesWarmUpThenDecay) {
  const Schedule linear{ScheduleKind::Linear, 10, 110};
  COMPARE(scheduleFactor(linear, 0), 0.0);
  COMPARE(scheduleFactor(linear, 5), 0.5);
  COMPARE(scheduleFactor(linear, 10), 1.0);
  COMPARE(scheduleFactor(linear, 60), 0.5);
  COMPARE(scheduleFactor(linear, 110), 0.0);
  COMPARE(scheduleFactor(linear, 500), 0.0);
  const Schedule cosine{ScheduleKind::Cosine, 0, 100};
  COMPARE(scheduleFactor(cosine, 0), 1.0);
  VERIFY(std::fabs(scheduleFactor(cosine, 50) - 0.5) < 1e-12);
  VERIFY(std::fabs(scheduleFactor(cosine, 100)) < 1e-12);
  const Schedule constant{ScheduleKind::Constant, 4, 100};
  COMPARE(scheduleFactor(constant, 2), 0.5);
  COMPARE(scheduleFactor(constant, 99), 1.0);
  COMPARE(parseScheduleKind("cosine"), ScheduleKind::Cosine);
  VERIFY_THROWS_EXCEPTION(std::invalid_argument, parseScheduleKind("exponential"));
}

TEST_CASE(clippingScalesToTheMaximumNorm) {
  std::vector<float> a{3.0f, 0.0f}, b{4.0f};
  std::vector<std::span<float>> grads{a, b};
  const double norm = clipGradNorm(grads, 1.0);
  COMPARE(norm, 5.0);
  const std::vector<std::span<const float>> after{a, b};
  VERIFY(std::fabs(globalGradNorm(after) - 1.0) < 1e-6);
  VERIFY(std::fabs(a[0] - 0.6f) < 1e-6f);
}

TEST_CASE(clippingLeavesSmallGradientsAlone) {
  std::vector<float> a{0.3f, 0.4f};
  std::vector<std::span<float>> grads{a};
  VERIFY(std::fabs(clipGradNorm(grads, 1.0) - 0.5) < 1e-7);
  COMPARE(a[0], 0.3f);
  COMPARE(clipGradNorm(grads, 0.0), clipGradNorm(grads, -1.0));  // disabled
}
