// hip/launch.h — the one function every kernel launch goes through.
//
// It knows the op's name, so a launch error is reported against the op that caused it, and it
// passes every launch through the runtime (runtime/hip/GpuLaunch.h): the launch policy (serialize,
// blocking), queue tracking, the watchdog's view of the host and fault injection. An injected
// fault arrives as runtime::InjectedFault; a real failure as GpuError naming the op and the phase.
// Include only from .hip translation units (it uses the triple-chevron launch syntax).
#pragma once

#include "compute/hip/HipCheck.h"  // defines: checkLaunch
#include "gpu/hip_portability.h"
#include "runtime/hip/GpuLaunch.h"  // defines: beforeLaunch, afterLaunch

namespace lorascope::compute::hip {

// Launches kernel<<<grid, block, sharedBytes, stream>>>(args...) under the runtime's policy and
// checks the launch.
template <typename... Params, typename... Args>
void launch(const char* opName, void (*kernel)(Params...), dim3 grid, dim3 block,
            std::size_t sharedBytes, hipStream_t stream, Args&&... args) {
  checkLaunch(runtime::gpu::beforeLaunch(opName, stream), opName, __FILE__, __LINE__);
  kernel<<<grid, block, sharedBytes, stream>>>(static_cast<Params>(args)...);
  checkLaunch(runtime::gpu::afterLaunch(opName, stream, hipGetLastError()), opName, __FILE__,
              __LINE__);
}

}  // namespace lorascope::compute::hip
