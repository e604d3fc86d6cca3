// hip/HipBackendOpsGemm.cpp — matmul through hip::gemm (vendor BLAS or the built-in GEMM).
#include "compute/Errors.h"
#include "compute/hip/HipBackend.h"

namespace lorascope::compute::hip {
namespace {

[[noreturn]] void throwNoGpuKernelYet(const char* op) {
  throw UnsupportedOpError(std::string(op) +
                           " has no GPU kernel yet; run this step on the CPU backend");
}

}  // namespace

void HipBackend::matmul(const Tensor&, bool, const Tensor&, bool, Tensor&, float, float) {
  throwNoGpuKernelYet("matmul");
}

}  // namespace lorascope::compute::hip
