// crashy_engine.cpp — a stand-in for `lorascope-train engine` that misbehaves on schedule, to test
// the supervisor without a GPU: the real engine loop and state mirror around a counting job.
//
// Run config: {"total_steps": N, "mirror": PATH, "fault_dir": DIR,
//              "kill_at": [steps], "sticky_at": [steps], "hang_at": [steps],
//              "resume_from_mirror": bool}
// Each fault fires once per step number (a marker file in fault_dir remembers it), before that
// step reaches the mirror — so the step is lost by the crash and must be redone after resume.
// The job's state is (step, sum of step numbers): any lost or repeated step changes the sum.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "engine/StateMirror.h"
#include "engine/StdioEngine.h"

using namespace lorascope::engine;
namespace fs = std::filesystem;

namespace {

class CrashyJob : public EngineJob {
 public:
  CrashyJob(const nlohmann::json& config, const EventSink& sink)
      : config_(config), mirror_(config.at("mirror").get<std::string>(), 4096) {
    if (config.value("resume_from_mirror", false)) {
      if (auto state = StateMirror::readLatest(config.at("mirror").get<std::string>())) {
        const auto json = nlohmann::json::parse(std::string(
            reinterpret_cast<const char*>(state->payload.data()), state->payload.size()));
        step_ = json.at("step");
        sum_ = json.at("sum");
      }
    }
    const char* serialize = std::getenv("AMD_SERIALIZE_KERNEL");
    sink(TimedEvent{0, LogEvent{LogLevel::Info, "resumed at step " + std::to_string(step_) +
                                                    "; AMD_SERIALIZE_KERNEL=" +
                                                    (serialize ? serialize : "unset")}});
  }

  std::optional<StepEvent> runStep(const CancelFlag& cancel) override {
    const std::int64_t next = step_ + 1;
    if (firstTime("kill_at", next))
      std::raise(SIGKILL);
    if (firstTime("sticky_at", next)) {
      throw StickyDeviceError(ErrorEvent{"blas", "gemm_lora_up", 15,
                                         "rocBLAS error: HIPBLAS_STATUS_INTERNAL_ERROR", "", true});
    }
    if (firstTime("hang_at", next)) {
      for (;;)
        std::this_thread::sleep_for(std::chrono::seconds(1));  // a hung queue
    }
    if (cancel.raised())
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    step_ = next;
    sum_ += next;
    const std::string payload = nlohmann::json{{"step", step_}, {"sum", sum_}}.dump();
    mirror_.write(std::as_bytes(std::span(payload.data(), payload.size())));
    return StepEvent{step_, static_cast<double>(sum_), 1e-3, 1.0, 100.0, microBatch_, 1};
  }
  bool finished() const override { return step_ >= config_.at("total_steps").get<std::int64_t>(); }
  std::int64_t completedSteps() const override { return step_; }
  std::string applyToggle(Toggle toggle, const nlohmann::json& value) override {
    if (toggle == Toggle::MicroBatch)
      microBatch_ = value.get<int>();
    return {};
  }
  // The checkpoint names the mirror file as this side sees it (test_engine_launcher checks that
  // it comes back translated to the host's side).
  CheckpointEvent checkpoint() override { return {config_.at("mirror").get<std::string>(), step_}; }
  std::optional<SnapshotEvent> snapshot() override { return std::nullopt; }
  std::optional<MemoryEvent> memory() override { return std::nullopt; }

 private:
  bool firstTime(const char* kind, std::int64_t step) {
    const auto list = config_.value(kind, nlohmann::json::array());
    if (std::find(list.begin(), list.end(), step) == list.end())
      return false;
    const fs::path marker = fs::path(config_.at("fault_dir").get<std::string>()) /
                            (std::string(kind) + "-" + std::to_string(step));
    if (fs::exists(marker))
      return false;
    std::ofstream(marker) << "fired\n";
    return true;
  }

  nlohmann::json config_;
  StateMirror mirror_;
  std::int64_t step_ = 0;
  std::int64_t sum_ = 0;
  int microBatch_ = 8;
};

}  // namespace

int main() {
  return serveEngineOverStreams(
      [](const nlohmann::json& config, const EventSink& sink) -> std::unique_ptr<EngineJob> {
        return std::make_unique<CrashyJob>(config, sink);
      },
      HelloEvent{kProtocolVersion, "test", "cpu", {}}, std::cin, std::cout);
}
