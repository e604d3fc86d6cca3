// job/DevicePlacement.cpp — the run's device, its weights there, moves and the allocator's mode.
#include "job/DevicePlacement.h"

#include <algorithm>

#include "compute/BuildInfo.h"  // defines: queryGpuInventory
#include "compute/Errors.h"
#include "job/AutoBatch.h"  // defines: setAllocatorPolicy
#include "memory/DeviceAllocator.h"
#include "train/TrainGraph.h"  // defines: loraFoldFor

namespace lorascope::job {

namespace {

std::string gpuUnavailableReason() {
  const compute::GpuInventory inventory = compute::queryGpuInventory();
  if (!inventory.devices.empty()) {
    return {};
  }
  return "no usable GPU (" +
         (inventory.unavailableReason.empty() ? std::string("none found")
                                              : inventory.unavailableReason) +
         ")";
}

}  // namespace

DevicePlacement::DevicePlacement(std::unique_ptr<compute::Backend> backend,
                                 const model::ModelFolder& folder, const TrainRunSettings& settings,
                                 DeviceLog log)
    : backend_(std::move(backend)),
      folder_(folder),
      settings_(settings),
      log_(std::move(log)),
      gpuUnavailable_(gpuUnavailableReason()) {}

void DevicePlacement::placeWeights() {
  weights_ = placeWeightsLogged(*backend_, folder_.weights(), log_, settings_.train.quantization,
                                train::loraFoldFor(settings_.train.lora));
}

void DevicePlacement::readBackend(const std::function<void(compute::Backend&)>& read) const {
  const std::lock_guard backendLock(backendMutex_);
  read(*backend_);
}

bool DevicePlacement::onGpu() const {
  return backend_->capabilities().device == compute::Device::Gpu;
}

std::string DevicePlacement::moveTo(compute::Device target, train::TrainLoop& loop) {
  if (backend_->capabilities().device == target) {
    return {};
  }
  const std::optional<compute::DeviceMemoryUse> heldBefore = backend_->deviceMemoryUse();
  std::unique_ptr<compute::Backend> other;
  try {
    other =
        target == compute::Device::Gpu ? compute::createGpuBackend(0) : compute::createCpuBackend();
  } catch (const compute::NoGpuError& e) {
    throw std::runtime_error(std::string("no usable GPU to move the run to: ") + e.what());
  }
  other->setGemmImplementation(backend_->gemmImplementation());
  if (memory::DeviceAllocator* allocator = other->deviceAllocator()) {
    applyAllocatorMode(*allocator, loop);
  }
  // The loop's graph keeps a reference to weights_, so the new device's weights go into that
  // member (a local would dangle once this returns: the first device run hung in the CPU step
  // after the move, reading freed weights).
  model::ModelWeights placed =
      placeWeightsLogged(*other, folder_.weights(), log_, settings_.train.quantization,
                         train::loraFoldFor(settings_.train.lora));
  std::swap(weights_, placed);
  try {
    loop.moveTo(*other, weights_);
  } catch (...) {
    std::swap(weights_, placed);  // the run stays where it was, on its own weights
    throw;
  }
  {
    const std::lock_guard backendLock(backendMutex_);
    std::swap(backend_, other);
  }
  const std::string from = other->capabilities().name;
  placed = {};  // the old device's weights, freed before its cache goes back
  std::string released;
  if (heldBefore) {
    other->releaseCachedMemory();
    const std::uint64_t before = heldBefore->reservedBytes;
    const std::uint64_t left = std::min(other->deviceMemoryUse()->reservedBytes, before);
    released = "; " + std::to_string((before - left) >> 20) + " MiB of device memory released";
  }
  return "moved the run from " + from + " to " + backend_->capabilities().name + " at step " +
         std::to_string(loop.completedSteps()) + released;
}

std::string DevicePlacement::setArenaMode(bool arena, const train::TrainLoop& loop) {
  arenaMode_ = arena;
  if (memory::DeviceAllocator* allocator = backend_->deviceAllocator()) {
    return applyAllocatorMode(*allocator, loop);
  }
  return {};
}

std::string DevicePlacement::applyAllocatorMode(memory::DeviceAllocator& allocator,
                                                const train::TrainLoop& loop) const {
  return setAllocatorPolicy(allocator, arenaMode_, folder_.config(), settings_.train,
                            loop.microBatchSize(), loop.completedSteps() + 1);
}

bool DevicePlacement::emptyCache() {
  memory::DeviceAllocator* allocator = backend_->deviceAllocator();
  if (allocator != nullptr)
    allocator->emptyCache();
  return allocator != nullptr;
}

// On a CPU run the settings the registry marks GPU-only (Setting::cpuNote: launch settings, GEMM
// choice, allocator), kept for when it moves to a GPU; the CPU fallback where there is no GPU to
// come back to.
std::string DevicePlacement::notApplicable(const engine::Toggle& toggle) const {
  if (toggle == engine::Toggle::CpuFallback && !gpuUnavailable_.empty()) {
    return "the run can only compute on the CPU here: " + gpuUnavailable_;
  }
  const settings::Setting* setting = settings::registry().findToggle(toggle);
  if (onGpu() || setting == nullptr || setting->cpuNote.empty()) {
    return {};
  }
  return "this run computes on the CPU, " + setting->cpuNote +
         "; the value is kept for when the run is on a GPU";
}

std::string recoverFromOutOfMemory(int attempt, DevicePlacement& placement, train::TrainLoop& loop,
                                   AutoMicroBatch* autoBatch, const DeviceLog& log,
                                   const std::string& what) {
  if (attempt == 1) {
    return std::string(placement.emptyCache() ? "freed the allocator's cached blocks"
                                              : "nothing cached") +
           "; the step is retried as it was";
  }
  if (autoBatch != nullptr && autoBatch->stepDown(loop, log)) {
    // --batch-size auto: the planner's next smaller micro-batch (logged with its numbers).
    return "micro-batch stepped down to " + std::to_string(loop.microBatchSize()) +
           " with accumulation " + std::to_string(loop.accumulation()) +
           " (batch-size auto, same effective batch); the step is retried";
  }
  if (loop.microBatchSize() > 1) {
    const std::int64_t smaller = loop.microBatchSize() / 2;
    loop.setMicroBatchSize(smaller, "oom");
    return "micro-batch lowered to " + std::to_string(smaller) + " with accumulation " +
           std::to_string(loop.accumulation()) + " (same effective batch); the step is retried";
  }
  throw std::runtime_error("out of memory at micro-batch 1 after freeing the cache: " + what +
                           " — lower max-seq-len or lora-r, or close what else uses the memory");
}

}  // namespace lorascope::job
