// cpu/matmul.h — c = alpha · op(a) · op(b) + beta · c in fp32 through OpenBLAS (cblas_sgemm),
// split over the backend's threads.
#pragma once

#include <cstdint>
#include <vector>

#include "compute/Tensor.h"  // defines: DType

namespace lorascope::compute::cpu {

struct MatmulDims {
  std::int64_t m = 0;  // rows of op(a) and c
  std::int64_t n = 0;  // columns of op(b) and c
  std::int64_t k = 0;  // columns of op(a), rows of op(b)
};

// a (m, k) or (k, m) when transposeA, f32; b (k, n) or (n, k) when transposeB, stored as
// `bDtype`; c (m, n) f32. A bf16/f16 b is widened block by block into `scratch` (reused across
// calls), so a frozen 16-bit weight never exists in fp32 as a whole.
// c (m, n) = alpha · op(a) · op(b) + beta · c, all f32 and row-major with leading dimensions
// lda/ldb/ldc (so that a head's slice of a (tokens, heads, headDim) tensor is a matrix). Large
// products are split into tiles of c over the CPU threads (cpu/parallel.h); the reduction over k
// is never split. Throws ShapeError when a size does not fit OpenBLAS' int.
void sgemm(const float* a, bool transposeA, std::int64_t lda, const float* b, bool transposeB,
           std::int64_t ldb, float* c, std::int64_t ldc, MatmulDims dims, float alpha, float beta);

void matmul(const float* a, bool transposeA, const void* b, DType bDtype, bool transposeB, float* c,
            MatmulDims dims, float alpha, float beta, std::vector<float>& scratch);

}  // namespace lorascope::compute::cpu
