// hip/GpuLaunch.h — the runtime's hooks around every GPU launch (hip flavours). Called by
// compute/hip/launch.h for kernels; a BLAS call wraps itself the same way:
//   check(beforeLaunch("matmul", s)); status = hipblasLtMatmul(...); check(afterLaunch(..., err));
// Kept C++17 and free of runtime types because nvcc compiles the .hip files that include it.
#pragma once

#include "gpu/hip_portability.h"  // defines: hipError_t, hipStream_t

namespace lorascope::runtime::gpu {

struct LaunchStatus {
  hipError_t error;
  const char* phase;  // what failed: "launch", "serialize: device sync after launch", ...
};

// Notes the op for the watchdog, lets fault injection act (throws runtime::InjectedFault, or
// blocks in an injected hang), and under `serialize` synchronises the device first.
LaunchStatus beforeLaunch(const char* op, hipStream_t stream);
// Reports `launchError` if set; else records a queue event for the op, then waits as the policy
// says: `serialize` synchronises the device, `blocking` the stream.
LaunchStatus afterLaunch(const char* op, hipStream_t stream, hipError_t launchError);

// Per-op timing (runtime/OpTiming.h), called by the two hooks above only while it is on: the
// start event just before the launch, the end event just after a successful one (a failed launch
// leaves an open bracket that takeOpTimes() drops).
hipError_t recordOpStart(const char* op, hipStream_t stream);
hipError_t recordOpEnd(hipStream_t stream);

}  // namespace lorascope::runtime::gpu
