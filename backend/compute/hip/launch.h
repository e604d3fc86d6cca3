// hip/launch.h — the one function every kernel launch goes through.
//
// It knows the op's name, so a launch error is reported against the op that caused it; the
// runtime's launch policy (serialize, blocking) and queue tracking hook in here.
// Include only from .hip translation units (it uses the triple-chevron launch syntax).
#pragma once

#include "compute/hip/HipCheck.h"  // defines: LORASCOPE_HIP_CHECK
#include "compute/hip/hip_portability.h"

namespace lorascope::compute::hip {

// Launches kernel<<<grid, block, sharedBytes, stream>>>(args...) and checks the launch.
template <typename... Params, typename... Args>
void launch(const char* opName, void (*kernel)(Params...), dim3 grid, dim3 block,
            std::size_t sharedBytes, hipStream_t stream, Args&&... args) {
  kernel<<<grid, block, sharedBytes, stream>>>(static_cast<Params>(args)...);
  check(hipGetLastError(), opName, __FILE__, __LINE__);
}

}  // namespace lorascope::compute::hip
