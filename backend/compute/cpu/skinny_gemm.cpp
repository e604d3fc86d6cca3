// cpu/skinny_gemm.cpp — Note [skinny products] in cpu/skinny_gemm.h.
#include "compute/cpu/skinny_gemm.h"

#include "compute/cpu/parallel.h"  // defines: threadScratch
#include "compute/cpu/simd.h"      // defines: simd, SimdKernels

namespace lorascope::compute::cpu {
namespace {

// An operand as rows of contiguous floats: base[r·ld + i].
struct Rows {
  const float* base;
  std::int64_t ld;
};

// The (rows, cols) matrix whose element (r, i) is scale·src[r·ld + i], or src[i·ld + r] when
// transposed, as contiguous rows: src itself where no copy is needed, else a copy in this
// thread's scratch `slot`.
Rows asRows(const float* src, std::int64_t ld, bool transposed, std::int64_t rows,
            std::int64_t cols, float scale, ScratchSlot slot) {
  if (!transposed && scale == 1.0f) {
    return {src, ld};
  }
  float* out = threadScratch(slot, rows * cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < cols; ++i) {
      out[r * cols + i] = scale * (transposed ? src[i * ld + r] : src[r * ld + i]);
    }
  }
  return {out, cols};
}

}  // namespace

bool skinnySgemm(const float* a, bool transposeA, std::int64_t lda, const float* b, bool transposeB,
                 std::int64_t ldb, float* c, std::int64_t ldc, std::int64_t m, std::int64_t n,
                 std::int64_t k, float alpha, float beta) {
  const SimdKernels& kernels = simd();
  if (kernels.accumulateRows == nullptr || m == 0 || n == 0 || k == 0) {
    return false;
  }
  if (m <= kSkinnySide) {
    if (!transposeB) {
      // op(b)'s k rows are contiguous: row i of c += Σ_j alpha·op(a)[i][j] · b[j].
      const Rows coef = asRows(a, lda, transposeA, m, k, alpha, ScratchSlot::SkinnyLeft);
      kernels.accumulateRows(c, ldc, m, b, ldb, k, coef.base, coef.ld, n, beta);
    } else {
      // c[i][t] = alpha · op(a)[i] · b[t], b's n rows contiguous along k.
      const Rows left = asRows(a, lda, transposeA, m, k, 1.0f, ScratchSlot::SkinnyLeft);
      kernels.dotRows(b, ldb, n, left.base, left.ld, m, k, c, 1, ldc, alpha, beta);
    }
    return true;
  }
  if (n > kSkinnySide) {
    return false;
  }
  if (!transposeA) {
    // c[i][j] = alpha · a[i] · op(b)ᵀ[j], a's m rows contiguous along k.
    const Rows right = asRows(b, ldb, !transposeB, n, k, 1.0f, ScratchSlot::SkinnyRight);
    kernels.dotRows(a, lda, m, right.base, right.ld, n, k, c, ldc, 1, alpha, beta);
    return true;
  }
  // a is stored (k, m), its rows contiguous along m: cᵀ's row j = Σ_t alpha·op(b)[t][j] · a[t],
  // built in a buffer and then added into c's column j.
  const Rows coef = asRows(b, ldb, !transposeB, n, k, alpha, ScratchSlot::SkinnyRight);
  float* cT = threadScratch(ScratchSlot::SkinnyTransposedOutput, n * m);
  kernels.accumulateRows(cT, m, n, a, lda, k, coef.base, coef.ld, m, 0.0f);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float& out = c[i * ldc + j];
      out = beta == 0.0f ? cT[j * m + i] : cT[j * m + i] + beta * out;
    }
  }
  return true;
}

}  // namespace lorascope::compute::cpu
