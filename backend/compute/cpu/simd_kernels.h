// cpu/simd_kernels.h — the vector kernels of cpu/simd.h written once over a vector type V, for
// cpu/simd_avx2.cpp and cpu/simd_avx512.cpp only (Note [one binary, three instruction sets]):
// nothing here may call a function of the standard library or of another header, whose inline
// copies would then be compiled for AVX. V supplies (F: W floats, D: W/2 doubles):
//   load, store, loadTail(p, n, fill), storeTail(p, v, n)   (n < W; fill for the missing lanes)
//   set1, add, sub, mul, div, min, max, fma(a, b, c) = a·b + c, fnma(a, b, c) = c − a·b,
//   fms(a, b, c) = a·b − c
//   pow2(t): 2^(bits(t) − bits(1.5·2²³)) for t = n + 1.5·2²³ (the exponent trick of exp)
//   low, high: the doubles of the low and high halves of an F;  dzero, dadd, dmul, dfma
//   sum(D) (fixed order), maxLanes(F), sqrt(double)
// The exp is fast_exp.cpp's (Cephes' expf: the same range reduction, clamp and polynomial),
// evaluated with FMA, and x·scale − shift is one FMA (one rounding, where fast_exp.cpp has two).
#pragma once

#include <cstdint>

#include "compute/cpu/simd.h"

namespace lorascope::compute::cpu {
namespace {

template <typename V>
struct VectorKernels {
  using F = typename V::F;
  using D = typename V::D;
  static constexpr std::int64_t kW = V::kWidth;

  static F exp(F x) {
    x = V::min(V::max(x, V::set1(-87.3f)), V::set1(88.3f));
    const F t = V::fma(x, V::set1(1.44269504088896341f), V::set1(12582912.0f));
    const F n = V::sub(t, V::set1(12582912.0f));
    F r = V::fnma(n, V::set1(0.693359375f), x);
    r = V::fnma(n, V::set1(-2.12194440e-4f), r);
    F p = V::set1(1.9875691500e-4f);
    p = V::fma(p, r, V::set1(1.3981999507e-3f));
    p = V::fma(p, r, V::set1(8.3334519073e-3f));
    p = V::fma(p, r, V::set1(4.1665795894e-2f));
    p = V::fma(p, r, V::set1(1.6666665459e-1f));
    p = V::fma(p, r, V::set1(5.0000001201e-1f));
    const F y = V::add(V::fma(V::mul(p, r), r, r), V::set1(1.0f));
    return V::mul(y, V::pow2(t));
  }

  static F sigmoid(F x) {
    const F one = V::set1(1.0f);
    return V::div(one, V::add(one, exp(V::sub(V::set1(0.0f), x))));
  }

  static void expArray(const float* x, float* y, std::int64_t count, float scale, float shift) {
    const F s = V::set1(scale), sh = V::set1(shift);
    std::int64_t i = 0;
    for (; i + kW <= count; i += kW) {
      V::store(y + i, exp(V::fms(V::load(x + i), s, sh)));
    }
    if (i < count) {
      const int n = static_cast<int>(count - i);
      V::storeTail(y + i, exp(V::fms(V::loadTail(x + i, n, 0.0f), s, sh)), n);
    }
  }

  static double sumAsDouble(const float* x, std::int64_t count) {
    D lo = V::dzero(), hi = V::dzero();
    std::int64_t i = 0;
    for (; i + kW <= count; i += kW) {
      const F v = V::load(x + i);
      lo = V::dadd(lo, V::low(v));
      hi = V::dadd(hi, V::high(v));
    }
    if (i < count) {
      const F v = V::loadTail(x + i, static_cast<int>(count - i), 0.0f);
      lo = V::dadd(lo, V::low(v));
      hi = V::dadd(hi, V::high(v));
    }
    return V::sum(lo) + V::sum(hi);
  }

  static float maxOf(const float* x, std::int64_t count) {
    const float lowest = -3.402823466e38f;
    F m = V::set1(lowest);
    std::int64_t i = 0;
    for (; i + kW <= count; i += kW) {
      m = V::max(m, V::load(x + i));
    }
    if (i < count) {
      m = V::max(m, V::loadTail(x + i, static_cast<int>(count - i), lowest));
    }
    return V::maxLanes(m);
  }

  static F swiglu(F g, F u) { return V::mul(V::mul(g, sigmoid(g)), u); }

  static void swigluForward(const float* gate, const float* up, std::int64_t count, float* out) {
    std::int64_t i = 0;
    for (; i + kW <= count; i += kW) {
      V::store(out + i, swiglu(V::load(gate + i), V::load(up + i)));
    }
    if (i < count) {
      const int n = static_cast<int>(count - i);
      V::storeTail(out + i, swiglu(V::loadTail(gate + i, n, 0.0f), V::loadTail(up + i, n, 0.0f)),
                   n);
    }
  }

  // dup = d·g·σ,  dgate = d·u·σ·(1 + g·(1 − σ))
  static void swigluBackwardLanes(F d, F g, F u, F& dgate, F& dup) {
    const F s = sigmoid(g);
    const F one = V::set1(1.0f);
    dup = V::mul(V::mul(d, g), s);
    dgate = V::mul(V::mul(V::mul(d, u), s), V::fma(g, V::sub(one, s), one));
  }

  static void swigluBackward(const float* dout, const float* gate, const float* up,
                             std::int64_t count, float* dgate, float* dup) {
    std::int64_t i = 0;
    F dg, du;
    for (; i + kW <= count; i += kW) {
      swigluBackwardLanes(V::load(dout + i), V::load(gate + i), V::load(up + i), dg, du);
      V::store(dgate + i, dg);
      V::store(dup + i, du);
    }
    if (i < count) {
      const int n = static_cast<int>(count - i);
      swigluBackwardLanes(V::loadTail(dout + i, n, 0.0f), V::loadTail(gate + i, n, 0.0f),
                          V::loadTail(up + i, n, 0.0f), dg, du);
      V::storeTail(dgate + i, dg, n);
      V::storeTail(dup + i, du, n);
    }
  }

  static float rmsnormRow(const float* x, const float* weight, float eps, std::int64_t dim,
                          float* y) {
    D lo = V::dzero(), hi = V::dzero();
    std::int64_t i = 0;
    for (; i + kW <= dim; i += kW) {
      const F v = V::load(x + i);
      lo = V::dfma(V::low(v), V::low(v), lo);
      hi = V::dfma(V::high(v), V::high(v), hi);
    }
    if (i < dim) {
      const F v = V::loadTail(x + i, static_cast<int>(dim - i), 0.0f);
      lo = V::dfma(V::low(v), V::low(v), lo);
      hi = V::dfma(V::high(v), V::high(v), hi);
    }
    const double meanSquare = (V::sum(lo) + V::sum(hi)) / static_cast<double>(dim) + eps;
    const auto s = static_cast<float>(1.0 / V::sqrt(meanSquare));
    const F sv = V::set1(s);
    for (i = 0; i + kW <= dim; i += kW) {
      V::store(y + i, V::mul(V::mul(V::load(x + i), sv), V::load(weight + i)));
    }
    if (i < dim) {
      const int n = static_cast<int>(dim - i);
      V::storeTail(
          y + i, V::mul(V::mul(V::loadTail(x + i, n, 0.0f), sv), V::loadTail(weight + i, n, 0.0f)),
          n);
    }
    return s;
  }

  static void rmsnormBackwardRow(const float* dy, const float* x, const float* weight, float rstd,
                                 std::int64_t dim, float* dx) {
    D lo = V::dzero(), hi = V::dzero();
    std::int64_t i = 0;
    for (; i + kW <= dim; i += kW) {
      const F w = V::load(weight + i), g = V::load(dy + i), v = V::load(x + i);
      lo = V::dfma(V::dmul(V::low(w), V::low(g)), V::low(v), lo);
      hi = V::dfma(V::dmul(V::high(w), V::high(g)), V::high(v), hi);
    }
    if (i < dim) {
      const int n = static_cast<int>(dim - i);
      const F w = V::loadTail(weight + i, n, 0.0f), g = V::loadTail(dy + i, n, 0.0f);
      const F v = V::loadTail(x + i, n, 0.0f);
      lo = V::dfma(V::dmul(V::low(w), V::low(g)), V::low(v), lo);
      hi = V::dfma(V::dmul(V::high(w), V::high(g)), V::high(v), hi);
    }
    const float correction =
        static_cast<float>((V::sum(lo) + V::sum(hi)) / static_cast<double>(dim)) * rstd * rstd;
    const F s = V::set1(rstd), c = V::set1(correction);
    for (i = 0; i + kW <= dim; i += kW) {
      const F wg = V::mul(V::load(weight + i), V::load(dy + i));
      V::store(dx + i, V::mul(s, V::fnma(V::load(x + i), c, wg)));
    }
    if (i < dim) {
      const int n = static_cast<int>(dim - i);
      const F wg = V::mul(V::loadTail(weight + i, n, 0.0f), V::loadTail(dy + i, n, 0.0f));
      V::storeTail(dx + i, V::mul(s, V::fnma(V::loadTail(x + i, n, 0.0f), c, wg)), n);
    }
  }

  static F softmaxGrad(F p, F ds, F lse, F rowDot, F scale, F& probability) {
    probability = exp(V::sub(p, lse));
    return V::mul(V::mul(V::sub(ds, rowDot), scale), probability);
  }

  static void softmaxGradRow(float* p, float* ds, std::int64_t count, float logsumexp, float rowDot,
                             float scale) {
    const F lse = V::set1(logsumexp), dot = V::set1(rowDot), sc = V::set1(scale);
    F prob;
    std::int64_t i = 0;
    for (; i + kW <= count; i += kW) {
      const F g = softmaxGrad(V::load(p + i), V::load(ds + i), lse, dot, sc, prob);
      V::store(ds + i, g);
      V::store(p + i, prob);
    }
    if (i < count) {
      const int n = static_cast<int>(count - i);
      const F g = softmaxGrad(V::loadTail(p + i, n, 0.0f), V::loadTail(ds + i, n, 0.0f), lse, dot,
                              sc, prob);
      V::storeTail(ds + i, g, n);
      V::storeTail(p + i, prob, n);
    }
  }

  // x[i] = op(x[i], y[i]) over the array, the tail through the same lanes.
  template <typename Op>
  static void combineInPlace(float* x, const float* y, std::int64_t count, Op op) {
    std::int64_t i = 0;
    for (; i + kW <= count; i += kW) {
      V::store(x + i, op(V::load(x + i), V::load(y + i)));
    }
    if (i < count) {
      const int n = static_cast<int>(count - i);
      V::storeTail(x + i, op(V::loadTail(x + i, n, 0.0f), V::loadTail(y + i, n, 0.0f)), n);
    }
  }

  static void scaleArray(float* x, std::int64_t count, float factor) {
    const F f = V::set1(factor);
    combineInPlace(x, x, count, [f](F a, F) { return V::mul(a, f); });
  }

  static void addArray(float* x, const float* y, std::int64_t count) {
    combineInPlace(x, y, count, [](F a, F b) { return V::add(a, b); });
  }

  static void multiplyArray(float* x, const float* y, std::int64_t count) {
    combineInPlace(x, y, count, [](F a, F b) { return V::mul(a, b); });
  }

  // fn(0), fn(1), …, fn(N − 1), each index a constant once inlined: a block's accumulators
  // stay in registers where a loop (not unrolled at -O2) would keep them in memory.
  template <int I, int N, typename Fn>
  static void unrolled(const Fn& fn) {
    if constexpr (I < N) {
      fn(I);
      unrolled<I + 1, N>(fn);
    }
  }

  // The columns [c, c + lanes) of accumulateRows for the terms [j, j + J) (lanes = kW, or fewer
  // with Tail): the J rows of x loaded once, then each row of y read, updated and written once.
  template <int J, bool Tail>
  static void accumulateChunk(float* y, std::int64_t ldy, std::int64_t rows, const float* x,
                              std::int64_t ldx, const float* coef, std::int64_t ldCoef,
                              std::int64_t c, int lanes) {
    const auto loadAt = [&](const float* p) {
      if constexpr (Tail) {
        return V::loadTail(p, lanes, 0.0f);
      } else {
        return V::load(p);
      }
    };
    F xv[J];
    unrolled<0, J>([&](int q) { xv[q] = loadAt(x + q * ldx + c); });
    for (std::int64_t r = 0; r < rows; ++r) {
      float* yr = y + r * ldy + c;
      F acc = loadAt(yr);
      unrolled<0, J>([&](int q) { acc = V::fma(V::set1(coef[r * ldCoef + q]), xv[q], acc); });
      if constexpr (Tail) {
        V::storeTail(yr, acc, lanes);
      } else {
        V::store(yr, acc);
      }
    }
  }

  template <int J>
  static void accumulateTerms(float* y, std::int64_t ldy, std::int64_t rows, const float* x,
                              std::int64_t ldx, const float* coef, std::int64_t ldCoef,
                              std::int64_t n) {
    std::int64_t c = 0;
    for (; c + kW <= n; c += kW) {
      accumulateChunk<J, false>(y, ldy, rows, x, ldx, coef, ldCoef, c, static_cast<int>(kW));
    }
    if (c < n) {
      accumulateChunk<J, true>(y, ldy, rows, x, ldx, coef, ldCoef, c, static_cast<int>(n - c));
    }
  }

  // Few rows of y (they stay in cache), many terms: the terms go kW at a time, each group's rows
  // of x streamed once, in order.
  static void accumulateRows(float* y, std::int64_t ldy, std::int64_t rows, const float* x,
                             std::int64_t ldx, std::int64_t terms, const float* coef,
                             std::int64_t ldCoef, std::int64_t n, float beta) {
    if (beta != 1.0f) {
      for (std::int64_t r = 0; r < rows; ++r) {
        float* yr = y + r * ldy;
        if (beta == 0.0f) {
          for (std::int64_t i = 0; i < n; ++i) {
            yr[i] = 0.0f;
          }
        } else {
          scaleArray(yr, n, beta);
        }
      }
    }
    std::int64_t j = 0;
    // kW terms a group: AVX-512's 32 registers hold 16 rows of x, AVX2's 16 hold 8.
    constexpr int kTerms = static_cast<int>(kW);
    for (; j + kTerms <= terms; j += kTerms) {
      accumulateTerms<kTerms>(y, ldy, rows, x + j * ldx, ldx, coef + j, ldCoef, n);
    }
    for (; j < terms; ++j) {
      accumulateTerms<1>(y, ldy, rows, x + j * ldx, ldx, coef + j, ldCoef, n);
    }
  }

  // The R × C dot products of dotRows from a's and b's first rows (each lane's partial sums over
  // k, then the lanes summed in double).
  template <int R, int C>
  static void dotBlock(const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                       std::int64_t k, float* out, std::int64_t ldOutRow, std::int64_t ldOutCol,
                       float alpha, float beta) {
    F acc[R * C];
    unrolled<0, R * C>([&](int e) { acc[e] = V::set1(0.0f); });
    const auto step = [&](std::int64_t c, auto load) {
      F bv[C];
      unrolled<0, C>([&](int s) { bv[s] = load(b + s * ldb + c); });
      unrolled<0, R>([&](int r) {
        const F av = load(a + r * lda + c);
        unrolled<0, C>([&](int s) { acc[r * C + s] = V::fma(av, bv[s], acc[r * C + s]); });
      });
    };
    std::int64_t c = 0;
    for (; c + kW <= k; c += kW) {
      step(c, [](const float* p) { return V::load(p); });
    }
    if (c < k) {
      const int lanes = static_cast<int>(k - c);
      step(c, [lanes](const float* p) { return V::loadTail(p, lanes, 0.0f); });
    }
    unrolled<0, R * C>([&](int e) {
      const F v = acc[e];
      const auto dot = static_cast<float>(V::sum(V::dadd(V::low(v), V::high(v))));
      float& o = out[e / C * ldOutRow + e % C * ldOutCol];
      o = beta == 0.0f ? alpha * dot : alpha * dot + beta * o;
    });
  }

  template <int R>
  static void dotRowBlock(const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                          std::int64_t cols, std::int64_t k, float* out, std::int64_t ldOutRow,
                          std::int64_t ldOutCol, float alpha, float beta) {
    std::int64_t j = 0;
    for (; j + 4 <= cols; j += 4) {
      dotBlock<R, 4>(a, lda, b + j * ldb, ldb, k, out + j * ldOutCol, ldOutRow, ldOutCol, alpha,
                     beta);
    }
    for (; j < cols; ++j) {
      dotBlock<R, 1>(a, lda, b + j * ldb, ldb, k, out + j * ldOutCol, ldOutRow, ldOutCol, alpha,
                     beta);
    }
  }

  static void dotRows(const float* a, std::int64_t lda, std::int64_t rows, const float* b,
                      std::int64_t ldb, std::int64_t cols, std::int64_t k, float* out,
                      std::int64_t ldOutRow, std::int64_t ldOutCol, float alpha, float beta) {
    std::int64_t i = 0;
    for (; i + 4 <= rows; i += 4) {
      dotRowBlock<4>(a + i * lda, lda, b, ldb, cols, k, out + i * ldOutRow, ldOutRow, ldOutCol,
                     alpha, beta);
    }
    for (; i < rows; ++i) {
      dotRowBlock<1>(a + i * lda, lda, b, ldb, cols, k, out + i * ldOutRow, ldOutRow, ldOutCol,
                     alpha, beta);
    }
  }

  static constexpr SimdKernels table(SimdLevel level) {
    return {level,           &expArray,      &sumAsDouble,        &maxOf,          &swigluForward,
            &swigluBackward, &rmsnormRow,    &rmsnormBackwardRow, &softmaxGradRow, &scaleArray,
            &addArray,       &multiplyArray, &accumulateRows,     &dotRows};
  }
};

}  // namespace
}  // namespace lorascope::compute::cpu
