// hip/HipCheck.h — checked HIP calls that report the call site, and the launch-error check.
#pragma once

#include "compute/hip/hip_portability.h"  // defines: hipError_t and the HIP runtime names

namespace lorascope::compute::hip {

// Throws GpuError carrying the error's name and text, the call and file:line, unless ok.
void check(hipError_t error, const char* call, const char* file, int line);

}  // namespace lorascope::compute::hip

#define LORASCOPE_HIP_CHECK(call) \
  ::lorascope::compute::hip::check((call), #call, __FILE__, __LINE__)
