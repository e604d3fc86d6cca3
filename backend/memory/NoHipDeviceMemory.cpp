// NoHipDeviceMemory.cpp — the cpu flavour has no GPU runtime, so there is no hipMalloc to wrap.
#include "memory/DeviceMemory.h"

namespace lorascope::memory {

std::unique_ptr<DeviceMemory> createHipDeviceMemory(int deviceIndex) {
  throw DeviceMemoryError("hipMalloc device memory for device " + std::to_string(deviceIndex) +
                          " is not available: this is the cpu build (use a hip-amd or hip-nvidia "
                          "build, or a SimulatedDevice for tests)");
}

}  // namespace lorascope::memory
