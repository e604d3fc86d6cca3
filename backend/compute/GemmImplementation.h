// GemmImplementation.h — which GEMM a backend's matmul runs on: the one GEMM choice of the
// settings registry (settings/Ladder.h), which is C++17-clean because the GPU GEMM's headers, which
// nvcc compiles, name it too.
#pragma once

#include "settings/Ladder.h"  // defines: Gemm

namespace lorascope::compute {

// Vendor: the platform BLAS (cuBLAS under nvcc, hipBLAS on AMD where the ROCm install has it).
// BuiltIn: the project's tiled GEMM kernel, which needs nothing but the runtime; it is the rung of
// the recovery ladder after a vendor BLAS failure such as HIPBLAS_STATUS_INTERNAL_ERROR.
// The CPU backend has only OpenBLAS and records the choice without acting on it.
using GemmImplementation = settings::Gemm;

// "vendor" or "built-in", for logs and the UI.
inline const char* gemmImplementationName(GemmImplementation impl) {
  return impl == GemmImplementation::Vendor ? "vendor" : "built-in";
}

}  // namespace lorascope::compute
