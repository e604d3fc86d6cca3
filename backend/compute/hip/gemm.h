// hip/gemm.h — the one GEMM entry point of the GPU backend, with two implementations chosen at
// run time: the vendor BLAS (cuBLAS/cuBLASLt under nvcc, hipBLAS/hipBLASLt on AMD where the ROCm
// install has them) and a built-in tiled kernel that needs nothing but the runtime (the escape
// hatch from HIPBLAS_STATUS_INTERNAL_ERROR). Plain C++ declarations, callable from host code.
#pragma once

#include <cstdint>

#include "compute/Tensor.h"               // defines: DType
#include "compute/hip/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

enum class GemmImpl : std::uint8_t { Vendor, BuiltIn };

// One operand of a row-major matrix product: `rows × cols` as stored, leading dimension `ld`
// (elements between consecutive rows, ≥ cols), read transposed when `transposed`.
struct GemmOperand {
  const void* data = nullptr;
  DType dtype = DType::BF16;  // bf16 or f32
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  bool transposed = false;
};

// c (m, n) = alpha · op(a) · op(b) + beta · c, row-major, fp32 accumulation; op(a) is (m, k) and
// op(b) is (k, n). c is bf16 or f32 with leading dimension ldc; it is read only when beta != 0.
// Every call goes through the runtime's launch policy under `opName`. Throws GpuError naming the
// op on a BLAS or launch failure, and UnsupportedOpError when `impl` is Vendor in a build without
// a vendor BLAS.
void gemm(GemmImpl impl, const char* opName, const GemmOperand& a, const GemmOperand& b, void* c,
          DType cType, std::int64_t ldc, float alpha, float beta, hipStream_t stream);

// Whether this build has a vendor BLAS (false on AMD builds whose ROCm install lacks hipBLAS).
bool vendorGemmAvailable();

}  // namespace lorascope::compute::hip
