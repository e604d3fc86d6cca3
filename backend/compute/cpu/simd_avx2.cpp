// cpu/simd_avx2.cpp — cpu/simd_kernels.h on 8-lane AVX2 + FMA vectors (compiled with -mavx2 -mfma
// or /arch:AVX2 alone; run only where simd() found AVX2 and FMA: Note [one binary, three
// instruction sets] in cpu/simd.h).
#include <immintrin.h>

#include "compute/cpu/simd.h"
#include "compute/cpu/simd_kernels.h"

namespace lorascope::compute::cpu {
namespace {

struct Avx2 {
  using F = __m256;
  using D = __m256d;
  static constexpr int kWidth = 8;

  static __m256i tailMask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F loadTail(const float* p, int n, float fill) {
    const __m256i mask = tailMask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, mask),
                            _mm256_castsi256_ps(mask));
  }
  static void storeTail(float* p, F v, int n) { _mm256_maskstore_ps(p, tailMask(n), v); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fnma(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F fms(F a, F b, F c) { return _mm256_fmsub_ps(a, b, c); }
  static F pow2(F t) {
    const __m256i bits = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000));
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(127)), 23));
  }
  static D low(F v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
  static D high(F v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
  static D dzero() { return _mm256_setzero_pd(); }
  static D dadd(D a, D b) { return _mm256_add_pd(a, b); }
  static D dmul(D a, D b) { return _mm256_mul_pd(a, b); }
  static D dfma(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
  static double sum(D v) {
    const __m128d pairs = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(pairs, _mm_unpackhi_pd(pairs, pairs)));
  }
  static float maxLanes(F v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static double sqrt(double v) {
    return _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(v)));
  }
};

}  // namespace

extern const SimdKernels kSimdAvx2;
const SimdKernels kSimdAvx2 = VectorKernels<Avx2>::table(SimdLevel::Avx2);

}  // namespace lorascope::compute::cpu
