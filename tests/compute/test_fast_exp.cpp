// test_fast_exp.cpp — compute/cpu/fast_exp: expArray and sigmoidArray within the accuracy its
// header states (2 ulp of exp on [−87.3, 88.3], clamped outside), the same answer for an element
// wherever it sits in the array (the padded tail included), and sumAsDouble's fixed order.
// Qt-free (a plain main): built twice, once against the library (GCC/clang vector lanes) and once
// with -DLORASCOPE_PORTABLE_LANES over fast_exp.cpp itself (the fallback MSVC compiles).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "compute/cpu/fast_exp.h"

namespace cpu = lorascope::compute::cpu;

namespace {

int gFailures = 0;

void check(bool ok, const char* what, double detail) {
  if (!ok) {
    ++gFailures;
    std::printf("FAIL: %s (%.9g)\n", what, detail);
  }
}

// Distance in units in the last place between two finite positive floats.
double ulps(float a, float b) {
  const double ulp = std::nextafter(b, std::numeric_limits<float>::infinity()) - b;
  return std::fabs(static_cast<double>(a) - b) / ulp;
}

void expIsWithinTwoUlpOfStdExp() {
  std::vector<float> x;
  for (float v = -87.0f; v <= 88.0f; v += 0.0137f) {
    x.push_back(v);
  }
  std::vector<float> y(x.size());
  cpu::expArray(x.data(), y.data(), static_cast<std::int64_t>(x.size()), 1.0f, 0.0f);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, ulps(y[i], std::exp(x[i])));
  }
  check(worst <= 2.0, "exp within 2 ulp of std::exp on [-87, 88]", worst);
}

void expAppliesScaleAndShift() {
  const float x[3] = {1.0f, 2.0f, -3.0f};
  float y[3];
  cpu::expArray(x, y, 3, 0.5f, 0.25f);
  for (int i = 0; i < 3; ++i) {
    check(ulps(y[i], std::exp(x[i] * 0.5f - 0.25f)) <= 2.0, "exp(x·scale − shift)", y[i]);
  }
}

void expClampsOutsideTheRange() {
  const float x[2] = {-1000.0f, 1000.0f};
  float y[2];
  cpu::expArray(x, y, 2, 1.0f, 0.0f);
  check(y[0] > 0.0f && y[0] < 1e-37f, "exp(-1000) is a tiny positive number", y[0]);
  check(std::isfinite(y[1]) && y[1] > 1e38f, "exp(1000) is a large finite number", y[1]);
}

void anElementsResultDoesNotDependOnItsPosition() {
  // 7 elements: one full group of four and a padded tail of three.
  const std::vector<float> x = {0.3f, -1.7f, 2.9f, 10.0f, -0.5f, 0.3f, 4.25f};
  std::vector<float> all(x.size());
  cpu::sigmoidArray(x.data(), all.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    float one = 0;
    cpu::sigmoidArray(&x[i], &one, 1);
    check(one == all[i], "sigmoid of an element alone equals it inside the array", one - all[i]);
  }
  check(all[0] == all[5], "equal inputs in the body and the tail give equal outputs", all[0]);
}

void sigmoidMatchesItsDefinition() {
  std::vector<float> x;
  for (float v = -20.0f; v <= 20.0f; v += 0.25f) {
    x.push_back(v);
  }
  std::vector<float> y(x.size());
  cpu::sigmoidArray(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double expected = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    worst = std::max(worst, std::fabs(y[i] - expected) / expected);
  }
  check(worst < 1e-6, "sigmoid within 1e-6 (relative) of 1/(1+e^-x)", worst);
}

void sumAsDoubleAddsEveryElement() {
  const std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 1e-8f};
  const double sum = cpu::sumAsDouble(x.data(), static_cast<std::int64_t>(x.size()));
  check(std::fabs(sum - (15.0 + 1e-8)) < 1e-12, "sum of six floats in double", sum);
}

}  // namespace

int main() {
  expIsWithinTwoUlpOfStdExp();
  expAppliesScaleAndShift();
  expClampsOutsideTheRange();
  anElementsResultDoesNotDependOnItsPosition();
  sigmoidMatchesItsDefinition();
  sumAsDoubleAddsEveryElement();
  std::printf("%s: %d failure(s)\n", gFailures == 0 ? "PASS" : "FAIL", gFailures);
  return gFailures == 0 ? 0 : 1;
}
