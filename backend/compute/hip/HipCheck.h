// hip/HipCheck.h — checked HIP calls that report the call site, and the launch-error check.
#pragma once

#include <string>

#include "gpu/hip_portability.h"    // defines: hipError_t and the HIP runtime names
#include "runtime/hip/GpuLaunch.h"  // defines: LaunchStatus

namespace lorascope::compute::hip {

// Throws GpuError carrying the error's name and text, the call and file:line, unless ok.
void check(hipError_t error, const char* call, const char* file, int line);

// Throws GpuError for a failed phase of a launch, e.g. "rmsnorm_forward (launch)". Kernels reach
// it through launch.h; BLAS calls, which wrap themselves in beforeLaunch/afterLaunch, directly.
inline void checkLaunch(const runtime::gpu::LaunchStatus& status, const char* opName,
                        const char* file, int line) {
  if (status.error != hipSuccess) {
    check(status.error, (std::string(opName) + " (" + status.phase + ")").c_str(), file, line);
  }
}

}  // namespace lorascope::compute::hip

#define LORASCOPE_HIP_CHECK(call) \
  ::lorascope::compute::hip::check((call), #call, __FILE__, __LINE__)
