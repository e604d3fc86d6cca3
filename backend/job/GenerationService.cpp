// job/GenerationService.cpp — one loaded generator, two answers, device errors sorted.
#include "job/GenerationService.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "compute/Errors.h"         // defines: GpuError
#include "job/Generation.h"         // defines: TextGenerator
#include "job/RunInstruments.h"     // defines: hangErrorEvent
#include "memory/AllocatorStats.h"  // defines: OutOfMemoryError
#include "runtime/ErrorClassifier.h"
#include "runtime/FaultInjection.h"  // defines: InjectedFault
#include "runtime/LaunchControl.h"

namespace lorascope::job {
namespace {

using engine::Answer;

// An answer is being generated, watched by the runtime's watchdog (set once launchControl() has
// been opened on the engine thread, so that the sampler never opens it first).
std::atomic<bool> watching{false};

// The watchdog checks from construction to destruction (runtime::LaunchControl::beginGeneration).
class WatchedGeneration {
 public:
  WatchedGeneration() {
    runtime::launchControl().beginGeneration();
    watching = true;
  }
  ~WatchedGeneration() {
    watching = false;
    runtime::launchControl().endStep();
  }
  WatchedGeneration(const WatchedGeneration&) = delete;
  WatchedGeneration& operator=(const WatchedGeneration&) = delete;
};

struct LoadedGenerator {
  std::string key;  // model, adapter, device and base weights it was loaded for
  std::unique_ptr<TextGenerator> generator;
};

engine::GenerationEndEvent generate(LoadedGenerator& loaded, const engine::GenerateCommand& c,
                                    const engine::EventSink& sink,
                                    const std::atomic<bool>& cancel) {
  const auto status = [&](std::string text) {
    sink({0, engine::GenerationStatusEvent{c.id, std::move(text)}});
  };
  const std::string key = c.model + '\n' + c.adapter + '\n' + c.device + '\n' + c.baseWeights;
  if (!loaded.generator || loaded.key != key) {
    loaded = {};  // the previous model's memory goes before the next one's is taken
    status("Loading the model…");
    // The protocol admits only names parseQuantization knows.
    const model::WeightQuantization quantization =
        model::parseQuantization(c.baseWeights).value_or(model::WeightQuantization::None);
    loaded.generator = std::make_unique<TextGenerator>(
        c.model, c.adapter, c.device, [&](const std::string& line) { status(line); }, quantization);
    loaded.key = key;
  }
  TextGenerator& g = *loaded.generator;
  const std::vector<std::int32_t> ids = g.promptIds(c.prompt, c.system, true);
  status(g.describe() + ", " + std::to_string(ids.size()) + " prompt tokens");
  SamplingOptions sampling;
  sampling.maxNewTokens = c.maxNewTokens;
  sampling.temperature = c.temperature;
  sampling.topP = c.topP;
  sampling.seed = c.seed;
  for (const Answer answer : {Answer::Base, Answer::Adapter}) {
    if (answer == Answer::Adapter && !g.hasAdapter())
      break;
    g.setAdapterEnabled(answer == Answer::Adapter);
    const WatchedGeneration watched;
    const GenerationResult result = g.generate(
        ids, sampling,
        [&](const std::string& piece) {
          sink({0, engine::TokenEvent{c.id, answer, piece}});
          return true;
        },
        {}, &cancel);
    sink({0, engine::AnswerEndEvent{c.id, answer, static_cast<std::int64_t>(result.ids.size()),
                                    result.stopReason, result.tokensPerS}});
    if (result.stopReason == "stopped")
      return {c.id, engine::GenerationOutcome::Stopped, "stopped"};
  }
  return {c.id, engine::GenerationOutcome::Done, ""};
}

// A device error that leaves the context unusable, as the engine reports it.
engine::StickyDeviceError stickyError(const std::string& category, const std::string& op,
                                      const std::string& message) {
  return engine::StickyDeviceError(engine::ErrorEvent{
      category, op, 0, message,
      "the engine restarts with a fresh GPU context; generate again (Help → Check this GPU "
      "tests the device)",
      true});
}

}  // namespace

engine::GenerationRunner createGenerationRunner() {
  auto loaded = std::make_shared<LoadedGenerator>();
  return [loaded](const engine::GenerateCommand& command, const engine::EventSink& sink,
                  const std::atomic<bool>& cancel) {
    try {
      return generate(*loaded, command, sink, cancel);
    } catch (const runtime::InjectedFault& fault) {
      *loaded = {};
      if (fault.kind() == runtime::FaultKind::OutOfMemory)
        throw;
      throw stickyError(runtime::faultKindName(fault.kind()), fault.op(), fault.what());
    } catch (const compute::GpuError& e) {
      *loaded = {};
      const runtime::ErrorClass error = runtime::classifyError(e.errorName(), e.what());
      if (!error.sticky)
        throw;
      throw stickyError(runtime::categoryName(error.category), e.call(), e.what());
    } catch (const memory::OutOfMemoryError&) {
      *loaded = {};  // a smaller model, the CPU or the NF4 base may fit
      throw;
    }
  };
}

engine::GenerationHangCheck generationHangCheck() {
  return []() -> std::optional<engine::ErrorEvent> {
    if (!watching)
      return std::nullopt;
    const std::optional<runtime::HangReport> hang = runtime::launchControl().checkHang();
    if (!hang)
      return std::nullopt;
    return hangErrorEvent(*hang, "the engine restarts; generate again");
  };
}

}  // namespace lorascope::job
