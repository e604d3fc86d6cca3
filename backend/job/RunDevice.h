// job/RunDevice.h — where a run computes: `--device cpu|gpu|auto` resolved to a backend, and
// the model's frozen weights placed on it (model/DeviceWeights.h: bf16 kept as stored, f32/f16
// rounded to bf16 on a GPU, the tied lm_head shared). `train` and the engine job both use it, the
// engine also for the CPU-fallback toggle, which moves a run from one backend to another.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "compute/Backend.h"
#include "job/TrainRunConfig.h"   // defines: TrainRunSettings
#include "model/DeviceWeights.h"  // defines: LoraFold
#include "model/ModelFolder.h"    // defines: ModelWeights

namespace lorascope::job {

// One log line (progress of a big upload, the reason auto chose the CPU).
using DeviceLog = std::function<void(const std::string& line)>;

// Throws UsageError unless `device` is cpu, gpu or auto.
void checkDeviceOption(const std::string& device);

// The backend for the option's word: "cpu"; "gpu" (GPU 0; throws std::runtime_error saying why
// none is usable, with the remedy); "auto" (GPU 0 when one is usable, else the CPU, the reason
// going to `log`). Throws UsageError for any other word. Callers open it before they create a
// run folder, so that a run that cannot start leaves nothing behind.
std::unique_ptr<compute::Backend> openBackend(const std::string& device, const DeviceLog& log);

// The launch options a run starts with: serialize-kernels and blocking-launches (process-wide,
// runtime/LaunchControl.h) and gemm-backend builtin on `backend`, as their live toggles set them.
void applyLaunchOptions(const TrainRunSettings& settings, compute::Backend& backend);

// The model's weights on `backend` (model::placeWeights, the projections quantised as
// `quantization` says). A model of 256 MiB or more logs its progress every quarter. Throws what
// the backend throws (out of memory, a failed copy).
// `fold`: the LoRA rows and columns kept beside the stacked weights (train::loraFoldFor).
model::ModelWeights placeWeightsLogged(compute::Backend& backend,
                                       const model::ModelWeights& weights, const DeviceLog& log,
                                       model::WeightQuantization quantization,
                                       model::LoraFold fold = {});

}  // namespace lorascope::job
