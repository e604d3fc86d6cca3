// cpu/matmul.h — c = alpha · op(a) · op(b) + beta · c in fp32 through OpenBLAS (cblas_sgemm),
// split over the backend's threads.
#pragma once

#include <cstdint>
#include <span>
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

// One product of sgemmGroup, laid out as sgemm's arguments.
struct GemmTerm {
  const float* a = nullptr;
  bool transposeA = false;
  std::int64_t lda = 0;
  const float* b = nullptr;
  bool transposeB = false;
  std::int64_t ldb = 0;
  float* c = nullptr;
  std::int64_t ldc = 0;
  MatmulDims dims;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// The terms as if by sgemm one after another (Backend::matmulGroup), in one parallel launch:
// each distinct c is split into tiles, its share of the threads in proportion to its work
// (m·n·Σk), and a tile runs every term of its c in the given order, so sums into one c keep
// their order and their tile stays in cache. Terms with the same c must have its (m, n); no term
// may read another's c (ShapeError otherwise, as for sizes beyond OpenBLAS' int).
void sgemmGroup(std::span<const GemmTerm> terms);

void matmul(const float* a, bool transposeA, const void* b, DType bDtype, bool transposeB, float* c,
            MatmulDims dims, float alpha, float beta, std::vector<float>& scratch);

}  // namespace lorascope::compute::cpu
