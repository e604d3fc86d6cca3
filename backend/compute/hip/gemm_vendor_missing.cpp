// hip/gemm_vendor_missing.cpp — the vendor GEMM of a build without a vendor BLAS (an AMD build
// whose ROCm install had no hipBLAS ≥ 2 at configure time: ROCm 5 has only hipBLAS 1).
// Selecting it fails with the reason and the way out; the built-in GEMM covers every shape.
#include "compute/Errors.h"
#include "compute/hip/gemm.h"

namespace lorascope::compute::hip {
namespace {

[[noreturn]] void throwNoVendorBlas() {
  throw UnsupportedOpError(
      "matmul: this build has no vendor BLAS (hipBLAS was not found when it was configured); "
      "use the built-in GEMM, or install hipBLAS and reconfigure");
}

}  // namespace

bool vendorGemmAvailable() {
  return false;
}

struct VendorBlas::Handle {};

VendorBlas::VendorBlas(hipStream_t) {
  throwNoVendorBlas();
}

VendorBlas::~VendorBlas() = default;

void VendorBlas::gemm(const char*, const GemmOperand&, const GemmOperand&, const GemmOutput&, float,
                      float) {
  throwNoVendorBlas();
}

}  // namespace lorascope::compute::hip
