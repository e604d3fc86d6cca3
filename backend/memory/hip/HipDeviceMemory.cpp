// hip/HipDeviceMemory.cpp — DeviceMemory over hipMalloc/hipFree (hip-amd and hip-nvidia flavours).
#include "common/Format.h"
#include "gpu/hip_portability.h"  // defines: hipMalloc, hipFree, hipMemGetInfo, ...
#include "memory/DeviceMemory.h"

namespace lorascope::memory {
using common::formatBytes;
namespace {

std::string errorText(hipError_t error) {
  return std::string(hipGetErrorName(error)) + ": " + hipGetErrorString(error);
}

class HipDeviceMemory final : public DeviceMemory {
 public:
  explicit HipDeviceMemory(int deviceIndex) : deviceIndex_(deviceIndex) { select(); }

  std::optional<std::uintptr_t> allocate(std::size_t bytes) override {
    select();
    void* pointer = nullptr;
    const hipError_t error = hipMalloc(&pointer, bytes);
    if (error == hipErrorOutOfMemory) {
      (void)hipGetLastError();  // out of memory is not sticky: clear it so later calls start clean
      return std::nullopt;
    }
    if (error != hipSuccess) {
      throw DeviceMemoryError("hipMalloc(" + formatBytes(bytes) + ") failed: " + errorText(error));
    }
    return reinterpret_cast<std::uintptr_t>(pointer);
  }

  void release(std::uintptr_t address, std::size_t bytes) override {
    select();
    const hipError_t error = hipFree(reinterpret_cast<void*>(address));
    if (error != hipSuccess) {
      throw DeviceMemoryError("hipFree of a " + formatBytes(bytes) +
                              " segment failed: " + errorText(error));
    }
  }

  DeviceMemoryInfo info() const override {
    select();
    std::size_t freeBytes = 0;
    std::size_t totalBytes = 0;
    const hipError_t error = hipMemGetInfo(&freeBytes, &totalBytes);
    if (error != hipSuccess) {
      throw DeviceMemoryError("hipMemGetInfo failed: " + errorText(error));
    }
    return {totalBytes, freeBytes};
  }

  std::string name() const override {
    return "hipMalloc on device " + std::to_string(deviceIndex_);
  }

 private:
  // The allocator may be used from any thread; HIP's current device is per thread.
  void select() const {
    const hipError_t error = hipSetDevice(deviceIndex_);
    if (error != hipSuccess) {
      throw DeviceMemoryError("hipSetDevice(" + std::to_string(deviceIndex_) +
                              ") failed: " + errorText(error));
    }
  }

  const int deviceIndex_;
};

}  // namespace

std::unique_ptr<DeviceMemory> createHipDeviceMemory(int deviceIndex) {
  return std::make_unique<HipDeviceMemory>(deviceIndex);
}

}  // namespace lorascope::memory
