// hip/gemm.h — the GPU backend's GEMM, in two implementations that HipBackend::matmul picks
// between at run time (compute::GemmImplementation): the vendor BLAS (cuBLAS under nvcc, hipBLAS
// on AMD where the ROCm install has it; gemm_vendor.cpp) and a built-in tiled kernel that needs
// nothing but the runtime (gemm_builtin.hip), the escape hatch from HIPBLAS_STATUS_INTERNAL_ERROR.
// Both compute c (m, n) = alpha · op(a) · op(b) + beta · c, row-major, with fp32 accumulation;
// op(a) is (m, k), op(b) is (k, n); c is read only when beta != 0. Every call goes through the
// runtime's launch policy under `opName`. Plain C++17 declarations, callable from host code.
#pragma once

#include <cstdint>
#include <memory>

#include "compute/Tensor.h"       // defines: DType
#include "gpu/hip_portability.h"  // defines: hipStream_t

namespace lorascope::compute::hip {

// One operand of a row-major matrix product: `rows × cols` as stored, leading dimension `ld`
// (elements between consecutive rows, ≥ cols), read transposed when `transposed`.
struct GemmOperand {
  const void* data = nullptr;
  DType dtype = DType::BF16;  // bf16 or f32
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  bool transposed = false;

  std::int64_t opRows() const { return transposed ? cols : rows; }
  std::int64_t opCols() const { return transposed ? rows : cols; }
};

// The product's destination: (m, n) row-major with leading dimension ld.
struct GemmOutput {
  void* data = nullptr;
  DType dtype = DType::BF16;  // bf16 or f32
  std::int64_t ld = 0;
};

// The built-in GEMM: any dtype mix of bf16/f32 operands and output, any transposes, any sizes
// (1 and non-multiples of the tile included). `workspace` holds builtinGemmWorkspaceFloats(a, b)
// fp32 elements of device scratch, or is null (the product then runs unsplit, just slower).
// Throws ShapeError naming `opName` for operands whose inner dimensions differ or an f16 dtype,
// GpuError on a launch failure.
void builtinGemm(const char* opName, const GemmOperand& a, const GemmOperand& b,
                 const GemmOutput& c, float alpha, float beta, hipStream_t stream,
                 float* workspace);
// Scratch the built-in GEMM wants for this product: > 0 where the output has too few tiles to
// fill the GPU and k is long (the LoRA gradients: m or n = rank, k = tokens), so k is split over
// blocks whose fp32 partial sums a second kernel adds in a fixed order (deterministic).
std::int64_t builtinGemmWorkspaceFloats(const GemmOperand& a, const GemmOperand& b);

// Whether this build has a vendor BLAS (false on AMD builds whose ROCm install lacks hipBLAS).
bool vendorGemmAvailable();

// The vendor BLAS bound to one stream: owns the library handle (one per HipBackend, created on
// the first vendor matmul because creating it reserves a device workspace). In a build without a
// vendor BLAS the constructor throws UnsupportedOpError saying so.
class VendorBlas {
 public:
  explicit VendorBlas(hipStream_t stream);
  ~VendorBlas();
  VendorBlas(const VendorBlas&) = delete;
  VendorBlas& operator=(const VendorBlas&) = delete;

  // a and b must share a dtype (the vendor GEMMs have no bf16 × f32 product; the caller casts
  // the f32 operand). bf16 operands give a bf16 or f32 c, f32 operands an f32 c. Throws
  // ShapeError for other mixes or dimensions beyond the BLAS' 32-bit int, GpuError carrying the
  // BLAS status name (e.g. CUBLAS_STATUS_INTERNAL_ERROR) when the library fails.
  void gemm(const char* opName, const GemmOperand& a, const GemmOperand& b, const GemmOutput& c,
            float alpha, float beta);

 private:
  struct Handle;  // the library handle and its stream; defined where the BLAS headers are
  std::unique_ptr<Handle> handle_;
};

}  // namespace lorascope::compute::hip
