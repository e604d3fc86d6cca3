// hip/HipCheck.cpp — turns a failed HIP call into a GpuError with the call site.
#include "compute/hip/HipCheck.h"

#include <string>

#include "compute/Errors.h"

namespace lorascope::compute::hip {

void check(hipError_t error, const char* call, const char* file, int line) {
  if (error == hipSuccess) {
    return;
  }
  throw GpuError(static_cast<int>(error), hipGetErrorName(error), call,
                 std::string(file) + ":" + std::to_string(line), hipGetErrorString(error));
}

}  // namespace lorascope::compute::hip
