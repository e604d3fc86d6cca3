// cpu/simd.cpp — the generic kernels of cpu/simd.h (plain C++, fast_exp.cpp's four lanes) and the
// one dispatch point, simd() (Note [one binary, three instruction sets] in cpu/simd.h).
#include "compute/cpu/simd.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "compute/CpuControl.h"    // defines: simdLevelInUse
#include "compute/cpu/fast_exp.h"  // defines: expArray, sigmoidArray, sumAsDouble

#if defined(LORASCOPE_CPU_X86_KERNELS) && defined(_MSC_VER)
#include <intrin.h>  // defines: __cpuid, __cpuidex, _xgetbv
#endif

namespace lorascope::compute::cpu {

#if defined(LORASCOPE_CPU_X86_KERNELS)
extern const SimdKernels kSimdAvx2;    // cpu/simd_avx2.cpp
extern const SimdKernels kSimdAvx512;  // cpu/simd_avx512.cpp
#endif

namespace {

float maxOfGeneric(const float* x, std::int64_t count) {
  return *std::max_element(x, x + count);
}

void swigluForwardGeneric(const float* gate, const float* up, std::int64_t count, float* out) {
  sigmoidArray(gate, out, count);
  for (std::int64_t i = 0; i < count; ++i) {
    out[i] = gate[i] * out[i] * up[i];
  }
}

void swigluBackwardGeneric(const float* dout, const float* gate, const float* up,
                           std::int64_t count, float* dgate, float* dup) {
  sigmoidArray(gate, dgate, count);
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    const float sigmoid = dgate[i];
    const float d = dout[i];
    const float u = up[i];
    dup[i] = d * g * sigmoid;
    dgate[i] = d * u * sigmoid * (1.0f + g * (1.0f - sigmoid));
  }
}

float rmsnormRowGeneric(const float* x, const float* weight, float eps, std::int64_t dim,
                        float* y) {
  double sumSquares = 0.0;
  for (std::int64_t i = 0; i < dim; ++i) {
    sumSquares += static_cast<double>(x[i]) * x[i];
  }
  const auto s = static_cast<float>(1.0 / std::sqrt(sumSquares / static_cast<double>(dim) + eps));
  for (std::int64_t i = 0; i < dim; ++i) {
    y[i] = x[i] * s * weight[i];
  }
  return s;
}

void rmsnormBackwardRowGeneric(const float* dy, const float* x, const float* weight, float rstd,
                               std::int64_t dim, float* dx) {
  double dotGx = 0.0;
  for (std::int64_t i = 0; i < dim; ++i) {
    dotGx += static_cast<double>(weight[i]) * dy[i] * x[i];
  }
  const float correction = static_cast<float>(dotGx / static_cast<double>(dim)) * rstd * rstd;
  for (std::int64_t i = 0; i < dim; ++i) {
    dx[i] = rstd * (weight[i] * dy[i] - x[i] * correction);
  }
}

void softmaxGradRowGeneric(float* p, float* ds, std::int64_t count, float logsumexp, float rowDot,
                           float scale) {
  for (std::int64_t j = 0; j < count; ++j) {
    ds[j] = (ds[j] - rowDot) * scale;
  }
  expArray(p, p, count, 1.0f, logsumexp);
  for (std::int64_t j = 0; j < count; ++j) {
    ds[j] *= p[j];
  }
}

void scaleArrayGeneric(float* x, std::int64_t count, float factor) {
  for (std::int64_t i = 0; i < count; ++i) {
    x[i] *= factor;
  }
}

void addArrayGeneric(float* x, const float* y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    x[i] += y[i];
  }
}

void multiplyArrayGeneric(float* x, const float* y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    x[i] *= y[i];
  }
}

constexpr SimdKernels kSimdGeneric = {SimdLevel::Generic,
                                      &expArray,
                                      &sumAsDouble,
                                      &maxOfGeneric,
                                      &swigluForwardGeneric,
                                      &swigluBackwardGeneric,
                                      &rmsnormRowGeneric,
                                      &rmsnormBackwardRowGeneric,
                                      &softmaxGradRowGeneric,
                                      &scaleArrayGeneric,
                                      &addArrayGeneric,
                                      &multiplyArrayGeneric,
                                      nullptr,
                                      nullptr};

// The widest level this CPU runs (the OS saving the wider registers included).
SimdLevel cpuLevel() {
#if defined(LORASCOPE_CPU_X86_KERNELS) && defined(_MSC_VER)
  int info[4] = {};
  __cpuid(info, 0);
  if (info[0] < 7) {
    return SimdLevel::Generic;
  }
  __cpuid(info, 1);
  const bool fma = (info[2] & (1 << 12)) != 0;
  const bool osxsave = (info[2] & (1 << 27)) != 0;
  const bool avx = (info[2] & (1 << 28)) != 0;
  if (!fma || !osxsave || !avx) {
    return SimdLevel::Generic;
  }
  const unsigned long long xcr0 = _xgetbv(0);
  __cpuidex(info, 7, 0);
  const bool avx2 = (info[1] & (1 << 5)) != 0;
  const bool avx512f = (info[1] & (1 << 16)) != 0;
  if (avx512f && (xcr0 & 0xE6) == 0xE6) {  // SSE, AVX, opmask, ZMM0-15 upper, ZMM16-31
    return SimdLevel::Avx512;
  }
  return avx2 && (xcr0 & 0x6) == 0x6 ? SimdLevel::Avx2 : SimdLevel::Generic;
#elif defined(LORASCOPE_CPU_X86_KERNELS)
  __builtin_cpu_init();  // GCC and clang: CPUID plus the OS's XCR0, as above
  if (__builtin_cpu_supports("avx512f")) {
    return SimdLevel::Avx512;
  }
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? SimdLevel::Avx2
                                                                         : SimdLevel::Generic;
#else
  return SimdLevel::Generic;
#endif
}

const SimdKernels& choose() {
  SimdLevel level = cpuLevel();
  if (const char* cap = std::getenv("LORASCOPE_CPU_SIMD"); cap != nullptr && *cap != '\0') {
    const std::string_view name(cap);
    if (name == "generic") {
      level = SimdLevel::Generic;
    } else if (name == "avx2") {
      level = std::min(level, SimdLevel::Avx2);
    } else if (name != "avx512") {
      std::fprintf(stderr,
                   "lorascope: LORASCOPE_CPU_SIMD=%s is not generic, avx2 or avx512; using %s\n",
                   cap, simdLevelName(level));
    }
  }
  return *simdKernels(level);
}

}  // namespace

const char* simdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::Generic:
      return "generic";
    case SimdLevel::Avx2:
      return "avx2";
    case SimdLevel::Avx512:
      return "avx512";
  }
  return "generic";
}

const SimdKernels* simdKernels(SimdLevel level) {
  if (level > cpuLevel()) {
    return nullptr;
  }
#if defined(LORASCOPE_CPU_X86_KERNELS)
  if (level == SimdLevel::Avx512) {
    return &kSimdAvx512;
  }
  if (level == SimdLevel::Avx2) {
    return &kSimdAvx2;
  }
#endif
  return &kSimdGeneric;
}

const SimdKernels& simd() {
  static const SimdKernels& chosen = choose();
  return chosen;
}

const char* simdLevelInUse() {
  return simdLevelName(simd().level);
}

}  // namespace lorascope::compute::cpu
