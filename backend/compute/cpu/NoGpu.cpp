// cpu/NoGpu.cpp — the GPU entry points of the cpu flavour, which is built without a GPU runtime.
// Asking for a GPU here is answered, not faked: there is none, and the reason says why.
#include "compute/Backend.h"
#include "compute/BuildInfo.h"
#include "compute/Errors.h"

namespace lorascope::compute {

namespace {
constexpr const char* kNoGpuReason =
    "this is the cpu build; build the hip-amd or hip-nvidia preset for GPU support";
}

GpuInventory queryGpuInventory() {
  return GpuInventory{"", {}, kNoGpuReason};
}

std::unique_ptr<Backend> createGpuBackend(int /*deviceIndex*/) {
  throw NoGpuError(kNoGpuReason);
}

}  // namespace lorascope::compute
