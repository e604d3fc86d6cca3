// cpu/matmul.cpp — fp32 GEMM through OpenBLAS, with 16-bit weights widened on the fly.
//
// Note [widen per matmul, not at load]: frozen weights stay mmapped in their stored dtype. A 7B
// model is 14 GB in bf16 but 28 GB in fp32, so widening at load would double the resident memory
// of exactly the machines that fall back to the CPU. Instead each matmul widens its 16-bit operand
// in row blocks of at most kScratchFloats into one reused scratch buffer, and runs one sgemm per
// block. The widening is O(n·k) against the O(m·n·k) product, so for the token counts of training
// batches it costs a few percent; f32 weights are passed to sgemm straight from the mapping.
#include "compute/cpu/matmul.h"

#include <algorithm>
#include <limits>

#include <cblas.h>

#include "compute/Errors.h"
#include "compute/cpu/convert.h"  // defines: widenToFloat

namespace lorascope::compute::cpu {
namespace {

constexpr std::int64_t kScratchFloats = std::int64_t{4} << 20;  // 16 MiB of fp32 per block

blasint toBlasInt(std::int64_t v) {
  if (v < 0 || v > std::numeric_limits<blasint>::max()) {
    throw ShapeError("matmul: dimension " + std::to_string(v) + " does not fit OpenBLAS' int");
  }
  return static_cast<blasint>(v);
}

void sgemm(const float* a, bool transposeA, blasint lda, const float* b, bool transposeB,
           blasint ldb, float* c, blasint ldc, std::int64_t m, std::int64_t n, std::int64_t k,
           float alpha, float beta) {
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, toBlasInt(m), toBlasInt(n), toBlasInt(k),
              alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void matmul(const float* a, bool transposeA, const void* b, DType bDtype, bool transposeB, float* c,
            MatmulDims dims, float alpha, float beta, std::vector<float>& scratch) {
  const auto [m, n, k] = dims;
  if (m == 0 || n == 0) {
    return;
  }
  const blasint lda = toBlasInt(transposeA ? m : k);
  const blasint ldb = toBlasInt(transposeB ? k : n);
  const blasint ldc = toBlasInt(n);
  if (k == 0) {  // empty product: c = beta · c
    for (std::int64_t i = 0; i < m * n; ++i) {
      c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    }
    return;
  }
  if (bDtype == DType::F32) {
    sgemm(a, transposeA, lda, static_cast<const float*>(b), transposeB, ldb, c, ldc, m, n, k, alpha,
          beta);
    return;
  }
  // b is stored as rows of length `rowLength`: (n, k) when transposed, else (k, n).
  const std::int64_t rows = transposeB ? n : k;
  const std::int64_t rowLength = transposeB ? k : n;
  const std::int64_t blockRows = std::max<std::int64_t>(1, kScratchFloats / rowLength);
  scratch.resize(static_cast<std::size_t>(std::min(rows, blockRows) * rowLength));
  for (std::int64_t r0 = 0; r0 < rows; r0 += blockRows) {
    const std::int64_t count = std::min(blockRows, rows - r0);
    widenToFloat(b, bDtype, r0 * rowLength, count * rowLength, scratch.data());
    if (transposeB) {
      // Rows r0.. of b are columns r0.. of c: c[:, r0:r0+count] = op(a) · blockᵀ.
      sgemm(a, transposeA, lda, scratch.data(), true, ldb, c + r0, ldc, m, count, k, alpha, beta);
    } else {
      // Rows r0.. of b pair with columns r0.. of op(a): accumulate the partial product.
      const float* aBlock = transposeA ? a + r0 * m : a + r0;
      sgemm(aBlock, transposeA, lda, scratch.data(), false, ldb, c, ldc, m, n, count, alpha,
            r0 == 0 ? beta : 1.0f);
    }
  }
}

}  // namespace lorascope::compute::cpu
