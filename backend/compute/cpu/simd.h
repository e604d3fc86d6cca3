// cpu/simd.h — the CPU backend's vector kernels (the loops around OpenBLAS' GEMMs: softmax,
// SwiGLU, RMSNorm, elementwise), in one table per instruction set, chosen once at run time.
//
// Note [one binary, three instruction sets]: the build targets baseline x86-64 (no -march), so
// that one binary runs on any x86-64 CPU. The kernels are written once (cpu/simd_kernels.h, a
// template over a vector type) and compiled twice more, in cpu/simd_avx2.cpp (AVX2 + FMA) and
// cpu/simd_avx512.cpp (AVX-512F), with per-file compile options; those files include nothing but
// <immintrin.h> and cpu/simd*.h, so no inline function of a shared header is ever compiled for an
// instruction set the CPU may lack. simd() is the one dispatch point: it checks the CPU once
// (CPUID with the OS's register-state support) and returns the widest table the CPU runs. Other
// processors (aarch64) and MSVC/mingw builds without the x86 files get the generic table: the
// same loops in plain C++ (fast_exp.cpp's four lanes).
//
// Each level rounds a little differently (FMA, lane count, summation order), so results are
// bit-identical run to run on one machine, not across machines with different vector units.
// LORASCOPE_CPU_SIMD=generic|avx2|avx512 caps the level (for comparisons; `lorascope-train bench`
// prints the level in use); a level the CPU lacks falls back to the best it has.
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

enum class SimdLevel : std::uint8_t { Generic, Avx2, Avx512 };

const char* simdLevelName(SimdLevel level);

struct SimdKernels {
  SimdLevel level;
  // y[i] = exp(x[i]·scale − shift) for i < count (fast_exp.h's accuracy); y may be x.
  void (*expArray)(const float* x, float* y, std::int64_t count, float scale, float shift);
  // Σ x[i], accumulated in double.
  double (*sumAsDouble)(const float* x, std::int64_t count);
  // max x[i]; count ≥ 1.
  float (*maxOf)(const float* x, std::int64_t count);
  // out[i] = silu(gate[i])·up[i].
  void (*swigluForward)(const float* gate, const float* up, std::int64_t count, float* out);
  // dgate, dup of SwiGLU for dout (cpu/swiglu.h).
  void (*swigluBackward)(const float* dout, const float* gate, const float* up, std::int64_t count,
                         float* dgate, float* dup);
  // One RMSNorm row: y = x·rstd·weight with rstd = 1/√(mean(x²) + eps) (Σx² in double); returns
  // rstd.
  float (*rmsnormRow)(const float* x, const float* weight, float eps, std::int64_t dim, float* y);
  // One RMSNorm backward row: dx = rstd·(weight·dy − x·c), c = rstd²·Σ(weight·dy·x)/dim (the sum
  // in double).
  void (*rmsnormBackwardRow)(const float* dy, const float* x, const float* weight, float rstd,
                             std::int64_t dim, float* dx);
  // One attention-backward row of visible keys: p ← exp(p − logsumexp), then
  // ds ← (ds − rowDot)·scale·p.
  void (*softmaxGradRow)(float* p, float* ds, std::int64_t count, float logsumexp, float rowDot,
                         float scale);
  void (*scaleArray)(float* x, std::int64_t count, float factor);       // x ·= factor
  void (*addArray)(float* x, const float* y, std::int64_t count);       // x += y
  void (*multiplyArray)(float* x, const float* y, std::int64_t count);  // x ·= y
  // The products of cpu/skinny_gemm.h (null in the generic table: OpenBLAS serves them there).
  // y_i[0, n) = beta·y_i + Σ_{j<terms} coef[i·ldCoef + j]·x_j[0, n) for i < rows, with
  // y_i = y + i·ldy and x_j = x + j·ldx; beta 0 does not read y. For few rows (they stay in
  // cache while the terms stream).
  void (*accumulateRows)(float* y, std::int64_t ldy, std::int64_t rows, const float* x,
                         std::int64_t ldx, std::int64_t terms, const float* coef,
                         std::int64_t ldCoef, std::int64_t n, float beta);
  // out[i·ldOutRow + j·ldOutCol] = alpha·Σ_{c<k} a_i[c]·b_j[c] + beta·out[…] for i < rows,
  // j < cols, with a_i = a + i·lda and b_j = b + j·ldb; beta 0 does not read out.
  void (*dotRows)(const float* a, std::int64_t lda, std::int64_t rows, const float* b,
                  std::int64_t ldb, std::int64_t cols, std::int64_t k, float* out,
                  std::int64_t ldOutRow, std::int64_t ldOutCol, float alpha, float beta);
};

// The table of the widest instruction set this CPU runs (capped by LORASCOPE_CPU_SIMD); chosen
// on the first call.
const SimdKernels& simd();

// The table of `level`, or nullptr when this build or this CPU lacks it (for tests).
const SimdKernels* simdKernels(SimdLevel level);

}  // namespace lorascope::compute::cpu
