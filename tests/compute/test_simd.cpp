// test_simd.cpp — compute/cpu/simd: every vector kernel of every instruction set this CPU runs
// (generic, AVX2, AVX-512) against the generic kernels and against plain double loops, over
// lengths that leave every possible tail (1 to 67 elements, and 1000), the skinny products' row
// kernels over shapes that leave every block's remainder; exp within 2 ulp of
// std::exp like the generic lanes; the dispatch picks the widest level the CPU runs. Qt-free.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compute/cpu/simd.h"

namespace cpu = lorascope::compute::cpu;

namespace {

int gFailures = 0;

void check(bool ok, const std::string& what, double detail) {
  if (!ok) {
    ++gFailures;
    std::printf("FAIL: %s (%.9g)\n", what.c_str(), detail);
  }
}

double ulps(float a, float b) {
  const double ulp = std::nextafter(b, std::numeric_limits<float>::infinity()) - b;
  return std::fabs(static_cast<double>(a) - b) / ulp;
}

// |a − b| ≤ tolerance·(|b| + floor) elementwise; returns the worst ratio to the allowed error.
double worstRelative(const std::vector<float>& a, const std::vector<double>& b, double floor) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]) / (std::fabs(b[i]) + floor));
  }
  return worst;
}

std::vector<float> randomVector(std::mt19937& rng, std::size_t n, float low, float high) {
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(n);
  for (float& x : v) {
    x = dist(rng);
  }
  return v;
}

void checkLevel(const cpu::SimdKernels& k, std::int64_t n, std::mt19937& rng) {
  const std::string at = std::string(cpu::simdLevelName(k.level)) + " n=" + std::to_string(n);
  const auto size = static_cast<std::size_t>(n);
  const std::vector<float> x = randomVector(rng, size, -8.0f, 8.0f);
  const std::vector<float> y = randomVector(rng, size, -2.0f, 2.0f);
  const std::vector<float> w = randomVector(rng, size, 0.5f, 1.5f);
  // The output arrays carry a guard element: a tail store must not write past n.
  const float guard = 12345.0f;
  auto output = [&] { return std::vector<float>(size + 1, guard); };

  std::vector<float> e = output();
  k.expArray(x.data(), e.data(), n, 0.75f, 0.5f);
  double worstUlp = 0;
  for (std::size_t i = 0; i < size; ++i) {
    // x·scale − shift rounds once (FMA) or twice (generic): either argument's exp counts.
    const auto once = static_cast<float>(std::exp(static_cast<double>(x[i]) * 0.75 - 0.5));
    const float twice = std::exp(x[i] * 0.75f - 0.5f);
    worstUlp = std::max(worstUlp, std::min(ulps(e[i], once), ulps(e[i], twice)));
  }
  check(worstUlp <= 2.0, at + ": exp within 2 ulp of std::exp", worstUlp);
  check(e[size] == guard, at + ": exp stores nothing past the end", e[size]);

  double exactSum = 0, exactMax = -1e30;
  for (float v : x) {
    exactSum += v;
    exactMax = std::max<double>(exactMax, v);
  }
  check(std::fabs(k.sumAsDouble(x.data(), n) - exactSum) <= 1e-12 * (1 + std::fabs(exactSum)),
        at + ": sum in double", k.sumAsDouble(x.data(), n) - exactSum);
  check(k.maxOf(x.data(), n) == static_cast<float>(exactMax), at + ": max", k.maxOf(x.data(), n));
  std::vector<float> negative(size, -5.0f);  // a max below the tail's padding value 0
  negative[size / 2] = -3.0f;
  check(k.maxOf(negative.data(), n) == -3.0f, at + ": max of negative values",
        k.maxOf(negative.data(), n));

  std::vector<float> out = output();
  k.swigluForward(x.data(), y.data(), n, out.data());
  std::vector<double> expect(size), expectUp(size);
  for (std::size_t i = 0; i < size; ++i) {
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    expect[i] = x[i] * s * y[i];
  }
  out.pop_back();
  check(worstRelative(out, expect, 1e-3) <= 1e-5, at + ": swiglu forward",
        worstRelative(out, expect, 1e-3));

  const std::vector<float> d = randomVector(rng, size, -1.0f, 1.0f);
  std::vector<float> dgate = output(), dup = output();
  k.swigluBackward(d.data(), x.data(), y.data(), n, dgate.data(), dup.data());
  check(dgate[size] == guard && dup[size] == guard, at + ": swiglu backward stays in bounds", 0);
  for (std::size_t i = 0; i < size; ++i) {
    const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    expectUp[i] = d[i] * x[i] * s;
    expect[i] = d[i] * y[i] * s * (1.0 + x[i] * (1.0 - s));
  }
  dgate.pop_back();
  dup.pop_back();
  // 1 + g·(1 − σ) cancels near g ≈ −1.28: the error is relative to the terms' size there.
  check(worstRelative(dgate, expect, 0.1) <= 1e-5, at + ": swiglu dgate",
        worstRelative(dgate, expect, 0.1));
  check(worstRelative(dup, expectUp, 1e-3) <= 1e-5, at + ": swiglu dup",
        worstRelative(dup, expectUp, 1e-3));

  std::vector<float> normed = output();
  const float rstd = k.rmsnormRow(x.data(), w.data(), 1e-5f, n, normed.data());
  double squares = 0;
  for (float v : x) {
    squares += static_cast<double>(v) * v;
  }
  const double exactRstd = 1.0 / std::sqrt(squares / static_cast<double>(n) + 1e-5);
  check(std::fabs(rstd - exactRstd) <= 1e-6 * exactRstd, at + ": rmsnorm rstd", rstd - exactRstd);
  check(normed[size] == guard, at + ": rmsnorm stays in bounds", normed[size]);
  for (std::size_t i = 0; i < size; ++i) {
    expect[i] = x[i] * exactRstd * w[i];
  }
  normed.pop_back();
  check(worstRelative(normed, expect, 1e-3) <= 1e-6, at + ": rmsnorm row",
        worstRelative(normed, expect, 1e-3));

  std::vector<float> dx = output();
  k.rmsnormBackwardRow(d.data(), x.data(), w.data(), rstd, n, dx.data());
  double dot = 0;
  for (std::size_t i = 0; i < size; ++i) {
    dot += static_cast<double>(w[i]) * d[i] * x[i];
  }
  const double correction = dot / static_cast<double>(n) * rstd * rstd;
  for (std::size_t i = 0; i < size; ++i) {
    expect[i] = rstd * (w[i] * d[i] - x[i] * correction);
  }
  dx.pop_back();
  check(worstRelative(dx, expect, 1e-2) <= 1e-5, at + ": rmsnorm backward row",
        worstRelative(dx, expect, 1e-2));

  std::vector<float> p = x, ds = y;
  k.softmaxGradRow(p.data(), ds.data(), n, 1.5f, 0.25f, 0.125f);
  std::vector<double> expectP(size);
  for (std::size_t i = 0; i < size; ++i) {
    expectP[i] = std::exp(static_cast<double>(x[i]) - 1.5);
    expect[i] = (y[i] - 0.25) * 0.125 * expectP[i];
  }
  check(worstRelative(p, expectP, 0) <= 1e-6, at + ": softmax gradient probabilities",
        worstRelative(p, expectP, 0));
  check(worstRelative(ds, expect, 1e-3) <= 1e-5, at + ": softmax gradient",
        worstRelative(ds, expect, 1e-3));

  std::vector<float> scaled = x, added = x, multiplied = x;
  k.scaleArray(scaled.data(), n, 0.3f);
  k.addArray(added.data(), y.data(), n);
  k.multiplyArray(multiplied.data(), y.data(), n);
  bool exact = true;
  for (std::size_t i = 0; i < size; ++i) {
    exact = exact && scaled[i] == x[i] * 0.3f && added[i] == x[i] + y[i] &&
            multiplied[i] == x[i] * y[i];
  }
  check(exact, at + ": scale, add and multiply are exact IEEE operations", 0);
}

// accumulateRows and dotRows (cpu/skinny_gemm.h's kernels; the generic table has none) against
// double loops: rows and terms that leave every block's remainder, row strides wider than the
// rows (the columns between must keep their guard), and beta 0 (y not read: it holds NaN), 1 and
// another.
void checkProducts(const cpu::SimdKernels& k, std::int64_t rows, std::int64_t terms, std::int64_t n,
                   std::mt19937& rng) {
  const std::string at = std::string(cpu::simdLevelName(k.level)) +
                         " rows=" + std::to_string(rows) + " terms=" + std::to_string(terms) +
                         " n=" + std::to_string(n);
  if (k.accumulateRows == nullptr || k.dotRows == nullptr) {
    check(k.level == cpu::SimdLevel::Generic, at + ": only the generic table lacks the products",
          0);
    return;
  }
  const float guard = 12345.0f;
  const std::int64_t ld = n + 3;  // rows of y and x, 3 guard columns each
  const std::vector<float> x = randomVector(rng, static_cast<std::size_t>(terms * ld), -1.0f, 1.0f);
  const std::vector<float> coef =
      randomVector(rng, static_cast<std::size_t>(rows * (terms + 1)), -1.0f, 1.0f);
  const std::vector<float> y0 = randomVector(rng, static_cast<std::size_t>(rows * ld), -1.0f, 1.0f);
  for (const float beta : {0.0f, 1.0f, 0.5f}) {
    std::vector<float> y = y0;
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t i = 0; i < ld; ++i) {
        y[static_cast<std::size_t>(r * ld + i)] =
            i >= n ? guard
                   : (beta == 0.0f ? std::nanf("") : y0[static_cast<std::size_t>(r * ld + i)]);
      }
    }
    k.accumulateRows(y.data(), ld, rows, x.data(), ld, terms, coef.data(), terms + 1, n, beta);
    std::vector<float> got;
    std::vector<double> want;
    bool guarded = true;
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t i = 0; i < ld; ++i) {
        const float v = y[static_cast<std::size_t>(r * ld + i)];
        if (i >= n) {
          guarded = guarded && v == guard;
          continue;
        }
        double sum = beta == 0.0f ? 0.0 : beta * double{y0[static_cast<std::size_t>(r * ld + i)]};
        for (std::int64_t j = 0; j < terms; ++j) {
          sum += double{coef[static_cast<std::size_t>(r * (terms + 1) + j)]} *
                 x[static_cast<std::size_t>(j * ld + i)];
        }
        got.push_back(v);
        want.push_back(sum);
      }
    }
    check(guarded, at + ": accumulateRows writes only its rows' n columns", beta);
    check(worstRelative(got, want, 1.0) <= 1e-5,
          at + ": accumulateRows, beta " + std::to_string(beta), worstRelative(got, want, 1.0));
  }

  // dotRows: a's `terms` rows against b's `rows` rows, both of length n, out transposed
  // (ldOutRow 1, ldOutCol terms + 2: the last two of each column are guards).
  const std::int64_t outLd = terms + 2;
  const std::vector<float> out0 =
      randomVector(rng, static_cast<std::size_t>(rows * outLd), -1.0f, 1.0f);
  for (const float beta : {0.0f, 0.75f}) {
    std::vector<float> out = out0;
    for (std::int64_t r = 0; r < rows; ++r) {
      out[static_cast<std::size_t>(r * outLd + terms)] = guard;
      out[static_cast<std::size_t>(r * outLd + terms + 1)] = guard;
      if (beta == 0.0f) {
        for (std::int64_t i = 0; i < terms; ++i) {
          out[static_cast<std::size_t>(r * outLd + i)] = std::nanf("");
        }
      }
    }
    k.dotRows(x.data(), ld, terms, y0.data(), ld, rows, n, out.data(), 1, outLd, 1.5f, beta);
    std::vector<float> got;
    std::vector<double> want;
    bool guarded = true;
    for (std::int64_t r = 0; r < rows; ++r) {
      guarded = guarded && out[static_cast<std::size_t>(r * outLd + terms)] == guard &&
                out[static_cast<std::size_t>(r * outLd + terms + 1)] == guard;
      for (std::int64_t i = 0; i < terms; ++i) {
        double dot = 0;
        for (std::int64_t c = 0; c < n; ++c) {
          dot += double{x[static_cast<std::size_t>(i * ld + c)]} *
                 y0[static_cast<std::size_t>(r * ld + c)];
        }
        got.push_back(out[static_cast<std::size_t>(r * outLd + i)]);
        want.push_back(1.5 * dot + beta * double{out0[static_cast<std::size_t>(r * outLd + i)]});
      }
    }
    check(guarded, at + ": dotRows writes only its outputs", beta);
    check(worstRelative(got, want, 1.0) <= 1e-5, at + ": dotRows, beta " + std::to_string(beta),
          worstRelative(got, want, 1.0));
  }
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  cpu::SimdLevel widest = cpu::SimdLevel::Generic;
  for (cpu::SimdLevel level :
       {cpu::SimdLevel::Generic, cpu::SimdLevel::Avx2, cpu::SimdLevel::Avx512}) {
    const cpu::SimdKernels* k = cpu::simdKernels(level);
    if (k == nullptr) {
      std::printf("%s: not run (this build or CPU lacks it)\n", cpu::simdLevelName(level));
      continue;
    }
    check(k->level == level, "the table of a level says its level", static_cast<int>(k->level));
    widest = level;
    for (std::int64_t n = 1; n <= 67; ++n) {
      checkLevel(*k, n, rng);
    }
    checkLevel(*k, 1000, rng);
    for (const std::int64_t rows : {1, 3, 4, 7, 8}) {
      for (const std::int64_t terms : {1, 5, 16, 37}) {
        for (const std::int64_t n : {1, 15, 16, 33, 300}) {
          checkProducts(*k, rows, terms, n, rng);
        }
      }
    }
    std::printf("%s: checked\n", cpu::simdLevelName(level));
  }
  check(cpu::simdKernels(cpu::SimdLevel::Generic) != nullptr, "the generic level always exists", 0);
  if (std::getenv("LORASCOPE_CPU_SIMD") == nullptr) {
    check(cpu::simd().level == widest, "simd() picks the widest level the CPU runs",
          static_cast<int>(cpu::simd().level));
  }
  std::printf("simd() uses %s\n", cpu::simdLevelName(cpu::simd().level));
  if (gFailures > 0) {
    std::printf("%d failure(s)\n", gFailures);
    return 1;
  }
  std::printf("all passed\n");
  return 0;
}
