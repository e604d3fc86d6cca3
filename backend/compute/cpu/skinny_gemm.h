// cpu/skinny_gemm.h — sgemm's products whose m or n is at most kSkinnySide: the LoRA's (rank r, or
// a group's few ranks stacked), through the vector kernels of cpu/simd.h instead of OpenBLAS.
//
// Note [skinny products]: OpenBLAS packs both operands into panels before its kernel runs, and
// with one side of 8 the packing is as much work as the product: in a 1-thread tiny-Llama step
// (`lorascope-train bench --model tiny`, B4 × S256, r8; a Xeon with AVX-512, OpenBLAS 0.3.21
// SkylakeX) the LoRA's products ran at 15-40 GFLOP/s where the frozen projections ran at ~95, and
// took 14% of the step. Here the long operand streams once and the short side stays in
// registers or cache: uᵀ = A·xᵀ and g = s·Bᵀ·dyᵀ are dot products of contiguous rows (dotRows);
// dA = g·x and dB = s·dyᵀ·u are a few rows of the output updated by every row of the long operand
// in turn, 16 (AVX-512) or 8 (AVX2) at a time (accumulateRows). Timed per product shape over 11
// steps there, the shapes these serve took 171 ms against OpenBLAS's 281, and the step's GEMMs
// 2.75-2.93 s against 2.91-3.03 (4 runs each, interleaved). Products whose k is the short side
// (the term s·u·Bᵀ added onto y, the input gradient's g·A) stay with OpenBLAS: they read and
// write all of c for 8 products an element, and a vector kernel doing the same took 1.2-1.7× as
// long. Only the short operand is ever repacked, and only when its layout or alpha asks for it.
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

inline constexpr std::int64_t kSkinnySide = 32;

// c = alpha · op(a) · op(b) + beta · c with sgemm's arguments (cpu/matmul.h), on this thread, when
// m or n is at most kSkinnySide (and none of m, n, k is 0) and the CPU's vector table has the
// kernels (not the generic one); returns false, having done nothing, otherwise.
bool skinnySgemm(const float* a, bool transposeA, std::int64_t lda, const float* b, bool transposeB,
                 std::int64_t ldb, float* c, std::int64_t ldc, std::int64_t m, std::int64_t n,
                 std::int64_t k, float alpha, float beta);

}  // namespace lorascope::compute::cpu
