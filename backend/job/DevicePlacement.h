// job/DevicePlacement.h — the run job's placement stage: where the run computes and the model's
// weights there. The backend comes opened with the run's settings; the CPU-fallback toggle moves
// the run between devices at a step boundary with everything it carries (TrainLoop::moveTo), the
// old device's blocks freed and its cache handed back to the driver; the allocator-policy toggle
// sets the device allocator's mode, kept across moves; out of memory frees the allocator's cache.
// It also says which GPU settings do nothing where the run computes now.
//
// The engine's sampler thread reads the backend (memory readings) while the engine thread may
// swap it: readBackend() holds the lock the swap takes.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "compute/Backend.h"
#include "engine/Protocol.h"  // defines: Toggle
#include "job/RunDevice.h"    // defines: DeviceLog
#include "job/TrainRunConfig.h"
#include "model/ModelFolder.h"
#include "train/TrainLoop.h"

namespace lorascope::job {

class DevicePlacement {
 public:
  // The run on `backend`, the weights of `folder` not yet placed. `folder` and `settings` (the
  // run's, as its toggles change them) must outlive this.
  DevicePlacement(std::unique_ptr<compute::Backend> backend, const model::ModelFolder& folder,
                  const TrainRunSettings& settings, DeviceLog log);

  compute::Backend& backend() { return *backend_; }
  const compute::Backend& backend() const { return *backend_; }
  // The model's weights on the backend (placeWeights first). A loop keeps a reference to them:
  // a move replaces them in place.
  model::ModelWeights& weights() { return weights_; }
  void placeWeights();
  // `read` on the backend, under the lock a move takes (from the sampler thread).
  void readBackend(const std::function<void(compute::Backend&)>& read) const;

  bool onGpu() const;
  // Why no GPU can take the run ("" when one can): asked once, when the run starts.
  const std::string& gpuUnavailable() const { return gpuUnavailable_; }

  // Moves the run, at this step boundary, to `target`, and says what happened ("" when it is there
  // already). When the new device cannot take the run (no GPU, out of memory), the run stays where
  // it is and this throws (the toggle is refused).
  std::string moveTo(compute::Device target, train::TrainLoop& loop);
  // The allocator-policy toggle: arena or caching, applied to the device allocator now (a CPU run
  // has none: kept for when the run moves to a GPU). Says what changed.
  std::string setArenaMode(bool arena, const train::TrainLoop& loop);
  bool arenaMode() const { return arenaMode_; }
  // Frees the allocator's cached blocks; false when the backend has no allocator.
  bool emptyCache();

  // What does nothing where the run computes now, and why ("" when it applies).
  std::string notApplicable(const engine::Toggle& toggle) const;

 private:
  std::string applyAllocatorMode(memory::DeviceAllocator& allocator,
                                 const train::TrainLoop& loop) const;

  std::unique_ptr<compute::Backend> backend_;
  mutable std::mutex backendMutex_;  // the swap of backend_ against readBackend
  const model::ModelFolder& folder_;
  const TrainRunSettings& settings_;
  DeviceLog log_;
  model::ModelWeights weights_;
  bool arenaMode_ = false;  // the allocator-policy toggle, kept across device moves
  std::string gpuUnavailable_;
};

class AutoMicroBatch;

// Out of memory in a step, the `attempt`th time in a row: what is done so that the step can be
// retried. The first time the allocator's cache is freed and the step runs again as it was: bit
// for bit the run it would have been. When that is not enough, the micro-batch steps down (with
// --batch-size auto, `autoBatch`'s next smaller plan; else halved): the effective batch stays, its
// sums are then split differently, so later steps agree with an unshrunk run to rounding, not bit
// for bit. At micro-batch 1 there is nothing left to shrink: throws, with `what` and a remedy.
std::string recoverFromOutOfMemory(int attempt, DevicePlacement& placement, train::TrainLoop& loop,
                                   AutoMicroBatch* autoBatch, const DeviceLog& log,
                                   const std::string& what);

}  // namespace lorascope::job
