// SimulatedDevice.cpp — first-fit placement over a coalesced free-range map.
#include "memory/SimulatedDevice.h"

#include <stdexcept>

#include "common/Format.h"

namespace lorascope::memory {
using common::formatBytes;

SimulatedDevice::SimulatedDevice(std::size_t capacityBytes, Placement placement,
                                 std::size_t pageBytes)
    : capacityBytes_(capacityBytes), placement_(placement), pageBytes_(pageBytes) {
  if (pageBytes == 0 || capacityBytes == 0 || capacityBytes % pageBytes != 0) {
    throw std::invalid_argument("SimulatedDevice: capacity " + std::to_string(capacityBytes) +
                                " bytes must be a non-zero multiple of the page (" +
                                std::to_string(pageBytes) + " bytes)");
  }
  freeRanges_.emplace(kBaseAddress, capacityBytes);
  freeBytes_ = capacityBytes;
}

std::size_t SimulatedDevice::pageRounded(std::size_t bytes) const {
  return (bytes + pageBytes_ - 1) / pageBytes_ * pageBytes_;
}

std::optional<std::uintptr_t> SimulatedDevice::allocate(std::size_t bytes) {
  const std::size_t rounded = pageRounded(bytes == 0 ? 1 : bytes);
  const std::lock_guard lock(mutex_);
  if (placement_ == Placement::Paged) {
    if (rounded > freeBytes_) {
      return std::nullopt;
    }
    const std::uintptr_t address = nextVirtualAddress_;
    nextVirtualAddress_ += rounded;
    liveSegments_.emplace(address, rounded);
    freeBytes_ -= rounded;
    return address;
  }
  for (auto it = freeRanges_.begin(); it != freeRanges_.end(); ++it) {
    if (it->second < rounded) {
      continue;
    }
    const std::uintptr_t address = it->first;
    const std::size_t left = it->second - rounded;
    freeRanges_.erase(it);
    if (left > 0) {
      freeRanges_.emplace(address + rounded, left);
    }
    liveSegments_.emplace(address, rounded);
    freeBytes_ -= rounded;
    return address;
  }
  return std::nullopt;
}

void SimulatedDevice::release(std::uintptr_t address, std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  const auto live = liveSegments_.find(address);
  if (live == liveSegments_.end() || live->second != pageRounded(bytes == 0 ? 1 : bytes)) {
    throw DeviceMemoryError("SimulatedDevice: release of " + std::to_string(bytes) +
                            " bytes at an address that holds no such segment");
  }
  std::uintptr_t start = address;
  std::size_t length = live->second;
  liveSegments_.erase(live);
  freeBytes_ += length;
  if (placement_ == Placement::Paged) {
    return;
  }
  // Coalesce with the free neighbours on both sides.
  auto next = freeRanges_.lower_bound(start);
  if (next != freeRanges_.end() && next->first == start + length) {
    length += next->second;
    next = freeRanges_.erase(next);
  }
  if (next != freeRanges_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      length += prev->second;
      freeRanges_.erase(prev);
    }
  }
  freeRanges_.emplace(start, length);
}

DeviceMemoryInfo SimulatedDevice::info() const {
  const std::lock_guard lock(mutex_);
  return {capacityBytes_, freeBytes_};
}

std::string SimulatedDevice::name() const {
  return std::string("simulated ") + (placement_ == Placement::Paged ? "paged" : "contiguous") +
         " device of " + formatBytes(capacityBytes_);
}

std::size_t SimulatedDevice::largestFreeRangeBytes() const {
  const std::lock_guard lock(mutex_);
  if (placement_ == Placement::Paged) {
    return freeBytes_;
  }
  std::size_t largest = 0;
  for (const auto& [address, bytes] : freeRanges_) {
    largest = std::max(largest, bytes);
  }
  return largest;
}

std::size_t SimulatedDevice::liveSegmentCount() const {
  const std::lock_guard lock(mutex_);
  return liveSegments_.size();
}

}  // namespace lorascope::memory
