// job/RunToggles.cpp — a run's toggles applied and confirmed.
#include "job/RunToggles.h"

#include "runtime/LaunchControl.h"
#include "settings/Ladder.h"  // defines: gemmName, parseGemm

namespace lorascope::job {

using engine::Toggle;
using nlohmann::json;

RunToggles::RunToggles(train::TrainLoop& loop, DevicePlacement& placement,
                       TrainRunSettings& settings, engine::EventSink sink)
    : loop_(loop), placement_(placement), settings_(settings), sink_(std::move(sink)) {}

std::string RunToggles::apply(const Toggle& toggle, const json& value) {
  if (toggle == Toggle::MicroBatch) {
    loop_.setMicroBatchSize(value.get<int>(), "user");
    return {};
  }
  if (toggle == Toggle::CpuFallback) {
    if (!value.get<bool>() && !placement_.gpuUnavailable().empty()) {
      throw std::runtime_error(placement_.gpuUnavailable());
    }
    const std::string moved =
        placement_.moveTo(value.get<bool>() ? compute::Device::Cpu : compute::Device::Gpu, loop_);
    if (!moved.empty())
      reportDevice();  // what applies on the new device
    return moved;
  }
  if (toggle == Toggle::Serialize || toggle == Toggle::Blocking) {
    // Process-wide and live: the next launch sees it (runtime/LaunchControl.h). On the CPU
    // it is kept for when the run is on the GPU (notApplicable() says so).
    runtime::LaunchPolicy policy = runtime::launchControl().policy();
    (toggle == Toggle::Serialize ? policy.serialize : policy.blocking) = value.get<bool>();
    runtime::launchControl().setPolicy(policy);
    return {};
  }
  if (toggle == Toggle::GemmBackend) {
    // Throws UnsupportedOpError (the toggle is refused) for vendor in a build without one.
    placement_.backend().setGemmImplementation(*settings::parseGemm(value.get<std::string>()));
    return {};
  }
  if (toggle == Toggle::AllocatorPolicy) {
    return placement_.setArenaMode(value.get<std::string>() == "arena", loop_);
  }
  if (toggle == Toggle::Graph) {
    // At this step boundary (train/StepGraphs.h): off drops the graphs and their memory; on
    // captures the next step's shape after one warm-up step. On the CPU the steps stay eager.
    const bool on = value.get<bool>();
    if (on == (loop_.stepMode() == train::StepMode::Graph)) {
      return {};
    }
    loop_.setStepMode(on ? train::StepMode::Graph : train::StepMode::Eager);
    settings_.graph = on;
    return std::string(on ? "graph mode" : "eager steps") + " from step " +
           std::to_string(loop_.completedSteps() + 1);
  }
  if (toggle == Toggle::ActivationCheckpointing) {
    // At this step boundary: the graph is rebuilt with the option, the adapter and the
    // optimizer state carry over, and the next step stores (or recomputes) activations.
    const bool on = value.get<bool>();
    if (on == settings_.train.activationCheckpointing) {
      return {};
    }
    loop_.setActivationCheckpointing(on, placement_.weights());
    settings_.train.activationCheckpointing = on;
    return std::string(on ? "activations recomputed in backward" : "activations stored") +
           " from step " + std::to_string(loop_.completedSteps() + 1);
  }
  // A toggle of the registry with no effect here: refused (the run stays as it was).
  throw std::runtime_error("this engine has no effect for the toggle " + toggle.name());
}

void RunToggles::confirm(const Toggle& toggle, json value) const {
  engine::ToggleAppliedEvent event;
  event.toggle = toggle;
  event.value = std::move(value);
  event.step = loop_.completedSteps();
  event.notApplicable = notApplicable(toggle);
  sink_(engine::TimedEvent{0, std::move(event)});
}

void RunToggles::reportStart() const {
  confirm(Toggle::MicroBatch, loop_.microBatchSize());
  confirm(Toggle::ActivationCheckpointing, settings_.train.activationCheckpointing);
  confirm(Toggle::CpuFallback, !placement_.onGpu());
  reportDevice();
}

void RunToggles::reportDevice() const {
  const runtime::LaunchPolicy launch = runtime::launchControl().policy();
  confirm(Toggle::Serialize, launch.serialize);
  confirm(Toggle::Blocking, launch.blocking);
  confirm(Toggle::GemmBackend, settings::gemmName(placement_.backend().gemmImplementation()));
  confirm(Toggle::AllocatorPolicy, placement_.arenaMode() ? "arena" : "caching");
  confirm(Toggle::Graph, loop_.stepMode() == train::StepMode::Graph);
}

void RunToggles::leaveGraphMode(const train::StepMetrics& step) {
  settings_.graph = false;
  sink_(engine::TimedEvent{
      0, engine::IncidentEvent{step.graphFallback, "graph mode off; the run continues eagerly",
                               step.step}});
  confirm(Toggle::Graph, false);
}

}  // namespace lorascope::job
