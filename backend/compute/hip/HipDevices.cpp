// hip/HipDevices.cpp — the GPU inventory as the HIP runtime reports it (hip-amd, hip-nvidia).
#include "compute/BuildInfo.h"
#include "gpu/hip_portability.h"  // defines: deviceArchitecture, runtimeVersionText

namespace lorascope::compute {

GpuInventory queryGpuInventory() {
  GpuInventory inventory;
  int runtimeVersion = 0;
  if (hipRuntimeGetVersion(&runtimeVersion) == hipSuccess) {
    inventory.runtime = gpu::runtimeVersionText(runtimeVersion);
  } else {
    inventory.runtime = gpu::kPlatformName;
  }
  int count = 0;
  const hipError_t error = hipGetDeviceCount(&count);
  if (error != hipSuccess) {
    inventory.unavailableReason = std::string("the GPU runtime reports ") + hipGetErrorName(error) +
                                  ": " + hipGetErrorString(error);
    (void)hipGetLastError();  // clear the non-sticky error so later calls start clean
    return inventory;
  }
  if (count == 0) {
    inventory.unavailableReason = "the GPU runtime found no device";
  }
  for (int i = 0; i < count; ++i) {
    hipDeviceProp_t prop{};
    if (hipGetDeviceProperties(&prop, i) != hipSuccess) {
      continue;
    }
    inventory.devices.push_back(GpuDeviceInfo{i, prop.name, gpu::deviceArchitecture(prop),
                                              static_cast<std::uint64_t>(prop.totalGlobalMem),
                                              prop.multiProcessorCount, prop.warpSize});
  }
  return inventory;
}

}  // namespace lorascope::compute
