// cpu/matmul.h — c = alpha · op(a) · op(b) + beta · c in fp32 through OpenBLAS (cblas_sgemm).
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
void matmul(const float* a, bool transposeA, const void* b, DType bDtype, bool transposeB, float* c,
            MatmulDims dims, float alpha, float beta, std::vector<float>& scratch);

}  // namespace lorascope::compute::cpu
