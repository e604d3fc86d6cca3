// job/RunDevice.cpp — --device resolution and weight placement with progress lines.
#include "job/RunDevice.h"

#include <stdexcept>

#include "compute/Errors.h"
#include "job/CliArgs.h"  // defines: UsageError
#include "model/DeviceWeights.h"
#include "runtime/LaunchControl.h"

namespace lorascope::job {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kLogProgressFromBytes = 256 * kMiB;  // smaller models place in a blink
constexpr std::uint64_t kProgressSteps = 4;                  // a line every quarter

}  // namespace

void checkDeviceOption(const std::string& device) {
  if (device != "cpu" && device != "gpu" && device != "auto") {
    throw UsageError("--device must be cpu, gpu or auto, got '" + device + "'");
  }
}

std::unique_ptr<compute::Backend> openBackend(const std::string& device, const DeviceLog& log) {
  checkDeviceOption(device);
  if (device == "cpu") {
    return compute::createCpuBackend();
  }
  // Usable means a backend can be made: the runtime loads and the device answers.
  try {
    return compute::createGpuBackend(0);
  } catch (const compute::NoGpuError& e) {
    if (device == "gpu") {
      throw std::runtime_error(std::string("--device gpu: no usable GPU: ") + e.what() +
                               " (use --device cpu or auto to compute on the CPU)");
    }
    log(std::string("--device auto: no usable GPU (") + e.what() + "); computing on the CPU");
    return compute::createCpuBackend();
  }
}

void applyLaunchOptions(const TrainRunSettings& settings, compute::Backend& backend) {
  runtime::LaunchPolicy policy = runtime::launchControl().policy();
  policy.serialize = settings.serializeKernels;
  policy.blocking = settings.blockingLaunches;
  runtime::launchControl().setPolicy(policy);
  // The backend's own default is vendor where the build has one; only a change is applied.
  if (settings.gemmBackend == "builtin") {
    backend.setGemmImplementation(compute::GemmImplementation::BuiltIn);
  }
}

model::ModelWeights placeWeightsLogged(compute::Backend& backend,
                                       const model::ModelWeights& weights, const DeviceLog& log,
                                       model::WeightQuantization quantization,
                                       model::LoraFold fold) {
  const std::string name = backend.capabilities().name;
  std::uint64_t quartersLogged = 0;
  return model::placeWeights(
      backend, weights,
      [&](std::uint64_t doneBytes, std::uint64_t totalBytes) {
        if (totalBytes < kLogProgressFromBytes ||
            doneBytes * kProgressSteps < totalBytes * (quartersLogged + 1)) {
          return;
        }
        quartersLogged = doneBytes * kProgressSteps / totalBytes;
        log("weights to " + name + ": " + std::to_string(doneBytes / kMiB) + " / " +
            std::to_string(totalBytes / kMiB) + " MiB");
      },
      quantization, fold);
}

}  // namespace lorascope::job
