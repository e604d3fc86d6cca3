// try_it_engine_fault.cpp — a fault in generation costs the engine, not its caller: the Try it
// page's engine (`lorascope-train engine` under a SupervisorHost, as the GUI runs it) generates on
// DEVICE (cpu, or gpu: label gpu, skipped without one) from a model that never stops by itself
// (the untrained demo model), and
//   1. LORASCOPE_FAULTS (the engine's environment) makes the 40th cached-attention launch an
//      illegal address, the GPU's sticky error: the engine reports it, ends the generation as
//      failed and exits; the supervisor restarts it and says "generate again";
//   2. a second generation on the new engine works: its answer (sampled with the same seed) is
//      the start of the text
//      the first one streamed before the fault (each engine counts launches afresh: asking for 4
//      tokens makes 16 of them, so the rule does not fire again);
//   3. the engine is killed by SIGSEGV while generating: the supervisor ends that generation as
//      failed, naming the signal, and a third generation on the next engine works;
//   4. LORASCOPE_FAULTS makes the 40th cached-attention launch hang (it never returns) and
//      LORASCOPE_WATCHDOG shortens the watchdog's budgets to seconds: the engine reports the hang
//      in 'attention_cached' (no step) and exits, the supervisor ends the generation as failed
//      naming the hang, restarts the engine and says "generate again", and the next generation
//      gives the same answer as before.
// This program (the window's stand-in) stays up throughout. Plain C++: it builds and runs on the
// GPU machine, which has no Qt (scripts/gpu-check.sh run: ctest -L gpu).
//
// Usage: try_it_engine_fault cpu|gpu [LORASCOPE_TRAIN]   (default: the build's,
// LORASCOPE_TEST_TRAIN)
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "GpuOrSkip.h"
#include "TempDir.h"
#include "TestPaths.h"
#include "engine/SupervisorHost.h"
#include "profiles/Builtins.h"
#include "train/DemoModel.h"  // defines: writeUntrainedDemoModel

using namespace lorascope;
using namespace lorascope::engine;

namespace {

constexpr auto kTimeout = std::chrono::minutes(5);  // a loaded machine; a GPU's first start

// Every event the host reported, waited on by the checks.
class Events {
 public:
  HostListener listener() {
    return {[this](const TimedEvent& e) {
              const std::lock_guard lock(mutex_);
              events_.push_back(e);
              changed_.notify_all();
            },
            {}};
  }
  // The first event from `from` on that `match` accepts; nullptr after the timeout.
  template <typename T>
  std::optional<T> waitFor(std::size_t& from, const std::function<bool(const T&)>& match) {
    std::unique_lock lock(mutex_);
    std::optional<T> found;
    changed_.wait_for(lock, kTimeout, [&] {
      for (; from < events_.size(); ++from) {
        if (const T* e = std::get_if<T>(&events_[from].event); e != nullptr && match(*e)) {
          found = *e;
          ++from;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  // The text of `id`'s base answer among the events so far.
  std::string baseText(std::int64_t id) {
    const std::lock_guard lock(mutex_);
    std::string text;
    for (const TimedEvent& e : events_) {
      if (const auto* token = std::get_if<TokenEvent>(&e.event);
          token != nullptr && token->id == id && token->answer == Answer::Base) {
        text += token->text;
      }
    }
    return text;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<TimedEvent> events_;
};

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  failures += ok ? 0 : 1;
}

GenerateCommand generation(std::int64_t id, const std::filesystem::path& model,
                           const std::string& device, std::int64_t tokens) {
  GenerateCommand c;
  c.id = id;
  c.model = model.string();
  c.device = device;
  c.prompt = "Tell a long story.";
  c.maxNewTokens = tokens;
  c.temperature = 1.0;  // sampled with a fixed seed: varied text, the same on every engine
  c.seed = 7;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string device = argc > 1 ? argv[1] : "cpu";
  const std::string engineProgram = argc > 2 ? argv[2] : lstest::trainProgram();
  const std::string program = device == "gpu" ? "gpu_try_it_fault" : "try_it_engine_fault";
  if (device == "gpu" && test::gpuOrSkip(program) == nullptr)
    return test::kSkipExitCode;
  lstest::TempDir dir;
  const std::filesystem::path model = dir.path() / "untrained";
  train::writeUntrainedDemoModel(model);

  // 1. The injected illegal address.
  profiles::Profile faulty = profiles::defaultProfile();
  faulty.environment["LORASCOPE_FAULTS"] = "illegal_address@attention_cached#40";
  Events events;
  auto host = std::make_unique<SupervisorHost>(engineProgram, faulty, SupervisorPolicy{},
                                               events.listener());
  std::size_t at = 0;
  const auto ended = [&](std::int64_t id) {
    return events.waitFor<GenerationEndEvent>(
        at, [id](const GenerationEndEvent& e) { return e.id == id; });
  };
  const auto incident = [&] {
    return events.waitFor<IncidentEvent>(at, [](const IncidentEvent&) { return true; });
  };
  const auto engineStarted = [&] {
    return events.waitFor<HelloEvent>(at, [](const HelloEvent&) { return true; }).has_value();
  };
  check(engineStarted(), "the engine started");
  host->send(generation(1, model, device, 30));
  const std::optional<GenerationEndEvent> first = ended(1);
  check(first && first->outcome == GenerationOutcome::Failed &&
            first->message.find("illegal memory access") != std::string::npos,
        "the faulted generation ends as failed, naming the illegal address: " +
            (first ? first->message : std::string("no end")));
  const std::optional<IncidentEvent> restart = incident();
  check(restart && restart->what.find("while generating") != std::string::npos &&
            restart->action.find("generate again") != std::string::npos,
        "the supervisor restarts the engine and says so: " +
            (restart ? restart->what + " -> " + restart->action : std::string("no incident")));
  const std::string partial = events.baseText(1);
  check(!partial.empty(), "the first generation streamed text before the fault");

  // 2. A second generation on the new engine.
  check(engineStarted(), "a new engine started");
  host->send(generation(2, model, device, 4));
  const std::optional<GenerationEndEvent> second = ended(2);
  const std::string again = events.baseText(2);
  check(second && second->outcome == GenerationOutcome::Done,
        "the second generation is done: " + (second ? second->message : std::string("no end")));
  check(!again.empty() && partial.starts_with(again),
        "its answer \"" + again + "\" begins the first one's \"" + partial + "\"");
  host.reset();

  // 3. SIGSEGV while generating, on an engine without fault rules (the rule above would fire in
  // it too, at its own 40th launch).
  // Under AddressSanitizer (the sanitize build) the engine's SIGSEGV would be caught by ASan's
  // own handler, which reports it and exits with code 1; a user's engine dies by the signal.
  profiles::Profile plain = profiles::defaultProfile();
  const char* asan = std::getenv("ASAN_OPTIONS");
  plain.environment["ASAN_OPTIONS"] =
      (asan != nullptr && *asan != '\0' ? std::string(asan) + ":" : std::string()) +
      "handle_segv=0";
  host =
      std::make_unique<SupervisorHost>(engineProgram, plain, SupervisorPolicy{}, events.listener());
  check(engineStarted(), "an engine without fault rules started");
  const std::int64_t pid = host->engineProcessId();
  host->send(generation(3, model, device, 8000));
  std::size_t tokenAt = at;
  events.waitFor<TokenEvent>(tokenAt, [](const TokenEvent& e) { return e.id == 3; });
  check(pid > 0 && ::kill(static_cast<pid_t>(pid), SIGSEGV) == 0, "SIGSEGV sent to the engine");
  const std::optional<GenerationEndEvent> crashed = ended(3);
  check(crashed && crashed->outcome == GenerationOutcome::Failed &&
            crashed->message.find("SIGSEGV") != std::string::npos,
        "the crashed generation ends as failed, naming the signal: " +
            (crashed ? crashed->message : std::string("no end")));
  check(incident().has_value() && engineStarted(), "the engine was restarted");
  host->send(generation(4, model, device, 4));
  const std::optional<GenerationEndEvent> fourth = ended(4);
  check(fourth && fourth->outcome == GenerationOutcome::Done && events.baseText(4) == again,
        "a generation after the crash gives the same answer");
  host.reset();

  // 4. An op that never returns while generating.
  profiles::Profile hanging = profiles::defaultProfile();
  hanging.environment["LORASCOPE_FAULTS"] = "hang@attention_cached#40";
  // Grace 2 s, 5 s for an engine's first generations on the CPU; a GPU's first generations load
  // their kernels inside the watched generation, so they get a minute there.
  hanging.environment["LORASCOPE_WATCHDOG"] = device == "gpu" ? "10,60" : "2,5";
  host = std::make_unique<SupervisorHost>(engineProgram, hanging, SupervisorPolicy{},
                                          events.listener());
  check(engineStarted(), "an engine with a hang rule started");
  host->send(generation(5, model, device, 30));
  const std::optional<ErrorEvent> hang =
      events.waitFor<ErrorEvent>(at, [](const ErrorEvent& e) { return e.sticky; });
  check(hang && hang->category == "hang" && hang->op == "attention_cached" && hang->step == 0 &&
            hang->message.find("'attention_cached'") != std::string::npos,
        "the engine reports the hang in the op, in no step: " +
            (hang ? hang->category + " in '" + hang->op + "': " + hang->message
                  : std::string("no error")));
  const std::optional<GenerationEndEvent> hung = ended(5);
  check(hung && hung->outcome == GenerationOutcome::Failed &&
            hung->message.find("while generating: hang") != std::string::npos,
        "the hung generation ends as failed, naming the hang: " +
            (hung ? hung->message : std::string("no end")));
  const std::optional<IncidentEvent> hangRestart = incident();
  check(hangRestart && hangRestart->what.find("while generating (hang)") != std::string::npos &&
            hangRestart->action.find("generate again") != std::string::npos,
        "the supervisor restarts the hung engine and says so: " +
            (hangRestart ? hangRestart->what + " -> " + hangRestart->action
                         : std::string("no incident")));
  check(engineStarted(), "a new engine started after the hang");
  host->send(generation(6, model, device, 4));
  const std::optional<GenerationEndEvent> sixth = ended(6);
  check(sixth && sixth->outcome == GenerationOutcome::Done && events.baseText(6) == again,
        "a generation after the hang gives the same answer: \"" + events.baseText(6) + "\"");
  std::printf("%s: %d failed\n", program.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
