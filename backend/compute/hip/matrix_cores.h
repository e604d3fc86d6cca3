// hip/matrix_cores.h — what the kernels built on gpu::mma (the matrix-core attention of
// hip/attention_mma.hip, the LoRA output products of hip/lora_products.hip) ask of the device
// before they launch: whether it has matrix cores and its wave size, and NVIDIA's consent to
// dynamic shared memory past 48 KiB.
// Include only from .hip translation units.
#pragma once

#include <cstddef>
#include <mutex>
#include <set>
#include <utility>

#include "compute/hip/HipCheck.h"  // defines: LORASCOPE_HIP_CHECK
#include "gpu/hip_portability.h"   // defines: hipFuncSetAttribute

namespace lorascope::compute::hip {

struct MatrixCores {
  bool available = false;
  int waveSize = 0;
};

// Whether the current device has matrix cores the kernels drive, and its wave size; asked once
// per device (hip/attention.hip).
MatrixCores currentMatrixCores();

// Past 48 KiB of dynamic shared memory NVIDIA wants the kernel's consent, per device (AMD's
// kernels stay within 64 KiB, which needs none). Asked once per kernel and device, so that a
// step captured as a graph later makes no such call.
template <typename... Params>
void allowSharedBytes(void (*kernel)(Params...), std::size_t bytes) {
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> allowed;
  int device = 0;
  LORASCOPE_HIP_CHECK(hipGetDevice(&device));
  const auto* function = reinterpret_cast<const void*>(kernel);
  const std::lock_guard<std::mutex> lock(mutex);
  if (allowed.count({function, device}) == 0) {
    LORASCOPE_HIP_CHECK(hipFuncSetAttribute(function, hipFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(bytes)));
    allowed.insert({function, device});
  }
}

}  // namespace lorascope::compute::hip
