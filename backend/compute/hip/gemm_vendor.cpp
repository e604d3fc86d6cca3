// hip/gemm_vendor.cpp — the vendor GEMM: hipBLAS' GemmEx (cuBLAS' under nvcc, through
// hip_portability.h) with fp32 compute. Built only where a vendor BLAS was found at configure
// time; gemm_vendor_missing.cpp stands in otherwise.
//
// The BLAS is column-major and our tensors are row-major. A row-major (r, c) matrix is its own
// transpose when read column-major, so c = op(a)·op(b) is computed as the column-major product
// cᵀ = op(b)ᵀ·op(a)ᵀ: b goes first, a second, and m and n swap places.
//
// Note [the default algorithm]: GemmEx takes the library's default algorithm for each shape. On
// an H200 (a probe outside the project, 2026-12-02: each of Llama-3.2-1B's B8 × S512 products as
// this file issues them, against the eight candidates of cuBLASLt's heuristic, each timed in
// place), the best candidate was at most 4.7% faster on the frozen products (gate/up forward, down
// input gradient; 0-2% on the attention projections) and 8.7% slower on the stacked gate/up input
// gradient, and 15-39% faster on the LoRA's skinny products of inner dimension 2048 (~10 µs a
// call against 12-18): about 0.7 ms of a 45 ms step if each shape took its fastest. Not taken:
// picking by timing would give two runs of one seed different roundings when the timings differ,
// and some candidates split k with a reduction of their own.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "compute/Errors.h"
#include "compute/hip/HipCheck.h"  // defines: check
#include "compute/hip/gemm.h"
#include "runtime/hip/GpuLaunch.h"  // defines: beforeLaunch, afterLaunch

namespace lorascope::compute::hip {
namespace {

// Throws GpuError with the BLAS status name, so the error classifier sees e.g.
// HIPBLAS_STATUS_INTERNAL_ERROR, and the advice names the escape hatch.
void checkBlas(hipblasStatus_t status, const char* opName, const char* call) {
  if (status == HIPBLAS_STATUS_SUCCESS) {
    return;
  }
  throw GpuError(static_cast<int>(status), hipblasStatusToString(status), call, opName,
                 "the vendor BLAS failed; switch the GEMM to the built-in implementation "
                 "(GemmImplementation::BuiltIn) to run without it");
}

int toBlasInt(const char* opName, const char* what, std::int64_t value) {
  if (value > std::numeric_limits<int>::max()) {
    throw ShapeError(std::string(opName) + ": " + what + " " + std::to_string(value) +
                     " exceeds the vendor BLAS' 32-bit int; use the built-in GEMM");
  }
  return static_cast<int>(value);
}

hipDataType blasType(DType dtype) {
  return dtype == DType::F32 ? HIP_R_32F : HIP_R_16BF;
}

}  // namespace

bool vendorGemmAvailable() {
  return true;
}

struct VendorBlas::Handle {
  hipblasHandle_t blas = nullptr;
  hipStream_t stream = nullptr;

  explicit Handle(hipStream_t s) : stream(s) {
    checkBlas(hipblasCreate(&blas), "matmul", "hipblasCreate");
    // The handle issues its kernels on the backend's stream, in order with our own kernels, and
    // keeps every sum in fp32.
    const std::pair<hipblasStatus_t, const char*> setup[] = {
        {hipblasSetStream(blas, stream), "hipblasSetStream"},
        {gpu::requireFullPrecisionReduction(blas), "requireFullPrecisionReduction"}};
    for (const auto& [status, call] : setup) {
      if (status != HIPBLAS_STATUS_SUCCESS) {
        (void)hipblasDestroy(blas);
        checkBlas(status, "matmul", call);
      }
    }
  }
  ~Handle() { (void)hipblasDestroy(blas); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

VendorBlas::VendorBlas(hipStream_t stream) : handle_(std::make_unique<Handle>(stream)) {}

VendorBlas::~VendorBlas() = default;

void VendorBlas::gemm(const char* opName, const GemmOperand& a, const GemmOperand& b,
                      const GemmOutput& c, float alpha, float beta) {
  if (a.opCols() != b.opRows()) {
    throw ShapeError(std::string(opName) + ": op(a) has " + std::to_string(a.opCols()) +
                     " columns but op(b) has " + std::to_string(b.opRows()) + " rows");
  }
  if (a.dtype != b.dtype || (a.dtype != DType::BF16 && a.dtype != DType::F32) ||
      (a.dtype == DType::F32 && c.dtype != DType::F32)) {
    throw ShapeError(std::string(opName) + ": the vendor GEMM takes bf16 × bf16 → bf16/f32 or " +
                     "f32 × f32 → f32, got " + dtypeName(a.dtype) + " × " + dtypeName(b.dtype) +
                     " → " + dtypeName(c.dtype));
  }
  const std::int64_t m = a.opRows();
  const std::int64_t n = b.opCols();
  if (m == 0 || n == 0) {
    return;
  }
  // The BLAS wants every leading dimension ≥ 1, also for the empty k of a pure c = beta·c.
  const auto leading = [&](const char* what, std::int64_t ld) {
    return toBlasInt(opName, what, std::max<std::int64_t>(ld, 1));
  };
  const int blasM = toBlasInt(opName, "n", n);
  const int blasN = toBlasInt(opName, "m", m);
  const int blasK = toBlasInt(opName, "k", a.opCols());
  const int ldb = leading("ldb", b.ld);
  const int lda = leading("lda", a.ld);
  const int ldc = leading("ldc", c.ld);
  checkLaunch(runtime::gpu::beforeLaunch(opName, handle_->stream), opName, __FILE__, __LINE__);
  checkBlas(
      hipblasGemmEx(handle_->blas, b.transposed ? HIPBLAS_OP_T : HIPBLAS_OP_N,
                    a.transposed ? HIPBLAS_OP_T : HIPBLAS_OP_N, blasM, blasN, blasK, &alpha, b.data,
                    blasType(b.dtype), ldb, a.data, blasType(a.dtype), lda, &beta, c.data,
                    blasType(c.dtype), ldc, HIPBLAS_COMPUTE_32F, HIPBLAS_GEMM_DEFAULT),
      opName, "hipblasGemmEx");
  checkLaunch(runtime::gpu::afterLaunch(opName, handle_->stream, hipGetLastError()), opName,
              __FILE__, __LINE__);
}

}  // namespace lorascope::compute::hip
