// OpTestUtil.h — shared helpers of the CPU op tests (tests/compute/test_op_*.cpp): seeded random
// inputs and the two comparisons the op tests use.
#pragma once

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "compute/Bf16.h"

namespace lorascope::test {

// n values drawn from N(0, stddev²) with a fixed seed.
inline std::vector<float> randomValues(std::size_t n, unsigned seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v)
    x = normal(rng);
  return v;
}

// Values exactly representable in bf16, so bf16 and f32 weights give the same product.
inline std::vector<float> bf16Values(std::size_t n, unsigned seed) {
  std::vector<float> v = randomValues(n, seed);
  for (float& x : v)
    x = compute::roundToBf16(x);
  return v;
}

// |got − want| ≤ tolerance · (1 + |want|) element by element.
inline bool near(const std::vector<float>& got, const std::vector<float>& want, float tolerance) {
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > tolerance * (1.0f + std::fabs(want[i]))) {
      qWarning("element %zu: %g vs %g", i, double{got[i]}, double{want[i]});
      return false;
    }
  }
  return got.size() == want.size();
}

// max |got − want| ≤ tolerance · max(1, max |want|) over the whole tensor.
inline bool closeTo(const std::vector<float>& got, const std::vector<double>& want,
                    double tolerance) {
  if (got.size() != want.size()) {
    qWarning("%zu elements, expected %zu", got.size(), want.size());
    return false;
  }
  double worst = 0.0, scale = 1.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    const double d = std::fabs(got[i] - want[i]);
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  if (worst > tolerance * scale) {
    qWarning("element %zu: %.9g vs %.9g (scale %g)", at, double{got[at]}, want[at], scale);
    return false;
  }
  return true;
}

}  // namespace lorascope::test
