// cpu/simd_avx512.cpp — cpu/simd_kernels.h on 16-lane AVX-512F vectors (compiled with -mavx512f
// or /arch:AVX512 alone; run only where simd() found AVX-512F and the OS saves its registers:
// Note [one binary, three instruction sets] in cpu/simd.h).
// GCC 12's AVX-512 intrinsics start from a self-initialised "undefined" operand and then warn
// about it (GCC bug 105593), an error under -Werror: silenced for the header's code only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include "compute/cpu/simd.h"
#include "compute/cpu/simd_kernels.h"

namespace lorascope::compute::cpu {
namespace {

struct Avx512 {
  using F = __m512;
  using D = __m512d;
  static constexpr int kWidth = 16;

  static __mmask16 tailMask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F loadTail(const float* p, int n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), tailMask(n), p);
  }
  static void storeTail(float* p, F v, int n) { _mm512_mask_storeu_ps(p, tailMask(n), v); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnma(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F fms(F a, F b, F c) { return _mm512_fmsub_ps(a, b, c); }
  static F pow2(F t) {
    const __m512i bits = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(0x4B400000));
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(127)), 23));
  }
  static __m256 upperHalf(F v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  }
  static D low(F v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
  static D high(F v) { return _mm512_cvtps_pd(upperHalf(v)); }
  static D dzero() { return _mm512_setzero_pd(); }
  static D dadd(D a, D b) { return _mm512_add_pd(a, b); }
  static D dmul(D a, D b) { return _mm512_mul_pd(a, b); }
  static D dfma(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
  static double sum(D v) {
    const __m256d quads = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
    const __m128d pairs =
        _mm_add_pd(_mm256_castpd256_pd128(quads), _mm256_extractf128_pd(quads, 1));
    return _mm_cvtsd_f64(_mm_add_sd(pairs, _mm_unpackhi_pd(pairs, pairs)));
  }
  static float maxLanes(F v) {
    const __m256 halves =
        _mm256_max_ps(_mm512_castps512_ps256(v),
                      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(halves), _mm256_extractf128_ps(halves, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static double sqrt(double v) {
    return _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(v)));
  }
};

}  // namespace

extern const SimdKernels kSimdAvx512;
const SimdKernels kSimdAvx512 = VectorKernels<Avx512>::table(SimdLevel::Avx512);

}  // namespace lorascope::compute::cpu
