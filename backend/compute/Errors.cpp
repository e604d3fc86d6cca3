// Errors.cpp — message formatting for the compute layer's typed errors.
#include "compute/Errors.h"

#include <utility>

namespace lorascope::compute {

GpuError::GpuError(int code, std::string name, std::string call, std::string where,
                   std::string message)
    : std::runtime_error(where + ": " + call + " failed with " + name + " (" +
                         std::to_string(code) + "): " + message),
      code_(code),
      name_(std::move(name)),
      call_(std::move(call)),
      where_(std::move(where)) {}

}  // namespace lorascope::compute
