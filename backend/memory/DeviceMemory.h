// DeviceMemory.h — where the caching allocator gets its segments from: the driver (hipMalloc /
// hipFree, hip flavours) or a simulated device with its own address space (tests, scenarios).
//
// The allocator calls these only under its own lock; implementations still guard their state so
// info() may be read from a telemetry thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace lorascope::memory {

// What the device (not our allocator) says about its memory, in bytes.
struct DeviceMemoryInfo {
  std::size_t totalBytes = 0;
  std::size_t freeBytes = 0;  // free on the device as a whole, including what others leave free
};

// A device call failed for a reason other than running out of memory (driver error, bad free).
class DeviceMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // A new segment of exactly `bytes`, or nullopt when the device has no room for it. Other
  // failures throw DeviceMemoryError.
  virtual std::optional<std::uintptr_t> allocate(std::size_t bytes) = 0;
  // Returns a segment obtained from allocate(); throws DeviceMemoryError for an unknown address.
  virtual void release(std::uintptr_t address, std::size_t bytes) = 0;
  virtual DeviceMemoryInfo info() const = 0;
  virtual std::string name() const = 0;  // "simulated 24.00 GiB", "hipMalloc on device 0"
};

// The driver's allocator (hipMalloc/hipFree) on `deviceIndex`. Throws DeviceMemoryError in the
// cpu flavour, where there is no GPU runtime.
std::unique_ptr<DeviceMemory> createHipDeviceMemory(int deviceIndex);

}  // namespace lorascope::memory
