// test_engine.cpp — the engine loop with a small job: lifecycle events, commands applied at step
// boundaries, pause/stop noticed within one op, refusals reported as error events; the sampler
// thread's readings arriving while a step is stuck, and its hang report published once.
// How far the job gets does not depend on wall time: where it matters the test hands the job its
// ops one by one (OpGate), so the checks hold on a fast machine, a loaded one, and under Wine
// (where sleeps shorter than the timer tick return at once).
#include "TestRunner.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/Engine.h"

using namespace lorascope::engine;

namespace {

// The ops a gated job may run: the test grants them; an op waiting for one gives up when the
// cancel flag is raised (the engine raises it on stop, pause and shutdown), as a real op's work
// ends at its next check of the flag.
class OpGate {
 public:
  void grant(long ops) {
    {
      const std::lock_guard lock(mutex_);
      credits_ += ops;
    }
    wake_.notify_all();
  }
  // True when an op may run (one credit taken), false when `cancel` was raised while waiting.
  bool take(const CancelFlag& cancel) {
    std::unique_lock lock(mutex_);
    while (credits_ == 0) {
      if (cancel.raised())
        return false;
      // CancelFlag does not notify: polled, which costs latency, never correctness.
      wake_.wait_for(lock, std::chrono::milliseconds(1));
    }
    --credits_;
    ++ran_;
    return true;
  }
  long ran() {
    const std::lock_guard lock(mutex_);
    return ran_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  long credits_ = 0;
  long ran_ = 0;
};

// Holds a job's first step until released; owned by the harness (it outlives every job), so that
// a case that fails before releasing it ends in the harness's destructor, not in a join that never
// returns.
class StuckStep {
 public:
  void hold() {
    const std::lock_guard lock(mutex_);
    stuck_ = true;
  }
  void release() {
    {
      const std::lock_guard lock(mutex_);
      stuck_ = false;
    }
    wake_.notify_all();
  }
  void waitWhileHeld() {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return !stuck_; });
  }
  bool held() {
    const std::lock_guard lock(mutex_);
    return stuck_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stuck_ = false;
};

// What the harness's job does: `totalSteps` steps of `opsPerStep` ops each, every op checking the
// cancel flag first; with `gated`, an op runs only on credit from the harness's OpGate (otherwise
// ops cost nothing); `stuck` makes the first step hang until released; `reportHang` makes the
// sampler's readings report a hang meanwhile.
struct JobSpec {
  int totalSteps = 3;
  int opsPerStep = 5;
  bool gated = false;
  bool stuck = false;
  bool reportHang = false;
};

class CountingJob : public EngineJob {
 public:
  CountingJob(const JobSpec& spec, OpGate& gate, StuckStep& stuck)
      : totalSteps_(spec.totalSteps),
        opsPerStep_(spec.opsPerStep),
        gate_(spec.gated ? &gate : nullptr),
        stuck_(stuck),
        reportHang_(spec.reportHang) {}

  std::optional<StepEvent> runStep(const CancelFlag& cancel) override {
    stuck_.waitWhileHeld();  // a step that hangs until the test lets it go
    for (int op = 0; op < opsPerStep_; ++op) {
      if (cancel.raised() || (gate_ != nullptr && !gate_->take(cancel))) {
        ++cancelledSteps;
        return std::nullopt;
      }
    }
    ++done_;
    return StepEvent{done_, 10.0 / static_cast<double>(done_), 1e-3, 1.0, 100.0, microBatch_, 1};
  }
  bool finished() const override { return done_ >= totalSteps_; }
  std::int64_t completedSteps() const override { return done_; }
  std::string applyToggle(Toggle toggle, const nlohmann::json& value) override {
    if (toggle == Toggle::GemmBackend)
      throw std::runtime_error("the CPU backend has no GEMM choice");
    if (toggle == Toggle::MicroBatch)
      microBatch_ = value.get<int>();
    return {};
  }
  CheckpointEvent checkpoint() override { return {"ckpt/step-" + std::to_string(done_), done_}; }
  std::optional<SnapshotEvent> snapshot() override { return std::nullopt; }
  std::optional<MemoryEvent> memory() override { return std::nullopt; }
  InstrumentEvents sampleInstruments() override {
    InstrumentEvents out;
    MemoryEvent memory;
    memory.allocatedBytes = static_cast<std::uint64_t>(++samples);
    out.memory = memory;
    if (reportHang_ && stuck_.held()) {
      out.hang = ErrorEvent{
          "hang", "attention_backward", 0, "hang in step 1: 'attention_backward'", "", false};
    }
    return out;
  }
  void pollInstruments() override { ++polls; }

  int cancelledSteps = 0;
  std::atomic<int> samples{0};
  std::atomic<int> polls{0};

 private:
  int totalSteps_;
  int opsPerStep_;
  OpGate* gate_;
  StuckStep& stuck_;
  bool reportHang_;
  std::int64_t done_ = 0;
  int microBatch_ = 1;
};

// Runs an Engine on its own thread and records its events.
class Harness {
 public:
  explicit Harness(JobSpec spec, EngineOptions options = {})
      : engine_(
            [spec, this](const nlohmann::json& config,
                         const EventSink&) -> std::unique_ptr<EngineJob> {
              if (config.contains("fail"))
                throw std::runtime_error("model folder not found");
              if (spec.stuck) {
                stuck_.hold();
              }
              auto job = std::make_unique<CountingJob>(spec, gate_, stuck_);
              job_ = job.get();
              return job;
            },
            [this](const TimedEvent& e) {
              const std::lock_guard lock(mutex_);
              events_.push_back(e);
            },
            HelloEvent{kProtocolVersion, "test", "cpu", {}}, std::move(options)),
        thread_([this] { engine_.run(); }) {}
  ~Harness() {
    stuck_.release();
    engine_.shutdown();
    thread_.join();
  }
  Engine& engine() { return engine_; }
  CountingJob* job() { return job_; }
  OpGate& gate() { return gate_; }
  StuckStep& stuck() { return stuck_; }

  template <typename T>
  std::vector<T> all() {
    const std::lock_guard lock(mutex_);
    std::vector<T> out;
    for (const TimedEvent& e : events_) {
      if (auto* t = std::get_if<T>(&e.event))
        out.push_back(*t);
    }
    return out;
  }
  bool sawState(RunState state) {
    for (const StateEvent& s : all<StateEvent>()) {
      if (s.state == state)
        return true;
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<TimedEvent> events_;
  CountingJob* job_ = nullptr;
  OpGate gate_;
  StuckStep stuck_;
  Engine engine_;
  std::thread thread_;
};

}  // namespace

TEST_CASE(runsToTheEndAndCheckpoints) {
  Harness h({.totalSteps = 5});
  h.engine().post(StartCommand{{{"steps", 5}}});
  TRY_VERIFY(h.sawState(RunState::Finished));
  COMPARE(h.all<HelloEvent>().size(), std::size_t{1});
  const auto steps = h.all<StepEvent>();
  COMPARE(steps.size(), std::size_t{5});
  COMPARE(steps.back().step, std::int64_t{5});
  COMPARE(h.all<CheckpointEvent>().back().step, std::int64_t{5});
}

// Two steps' ops granted: the job waits in the third step's first op when pause arrives (or is
// between steps), gives that step up, and the engine pauses; ops granted meanwhile stay unused
// until resume.
TEST_CASE(pauseHoldsAndResumeContinues) {
  Harness h({.totalSteps = 1000, .gated = true});
  h.engine().post(StartCommand{nlohmann::json::object()});
  h.gate().grant(2 * 5);
  TRY_VERIFY(h.all<StepEvent>().size() == 2 && h.gate().ran() == 2 * 5);
  h.engine().post(PauseCommand{});
  TRY_VERIFY(h.sawState(RunState::Paused));
  h.gate().grant(5);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a paused engine runs no op
  COMPARE(h.gate().ran(), 2L * 5);
  COMPARE(h.all<StepEvent>().size(), std::size_t{2});
  h.engine().post(ResumeCommand{});
  TRY_VERIFY(h.all<StepEvent>().size() == 3);
  COMPARE(h.all<StepEvent>().back().step, std::int64_t{3});
  h.engine().post(StopCommand{});
  TRY_VERIFY(h.sawState(RunState::Finished));
  COMPARE(h.all<CheckpointEvent>().back().step, std::int64_t{3});
}

// A step of 10 000 ops is interrupted by stop within one op, then checkpointed: 100 ops granted,
// the job waits for the 101st when stop arrives and runs no op after it.
TEST_CASE(stopIsNoticedWithinOneOp) {
  Harness h({.totalSteps = 3, .opsPerStep = 10000, .gated = true});
  h.engine().post(StartCommand{nlohmann::json::object()});
  h.gate().grant(100);
  TRY_VERIFY(h.sawState(RunState::Running) && h.gate().ran() == 100);
  h.engine().post(StopCommand{});
  TRY_VERIFY(h.sawState(RunState::Finished));
  COMPARE(h.gate().ran(), 100L);
  VERIFY(h.all<StepEvent>().empty());
  COMPARE(h.all<CheckpointEvent>().back().step, std::int64_t{0});
}

// The toggles are handled with the start or at the first step's end (one step's ops granted).
TEST_CASE(togglesAreConfirmedOrRefused) {
  Harness h({.totalSteps = 1000, .gated = true});
  h.engine().post(StartCommand{nlohmann::json::object()});
  h.engine().post(SetToggleCommand{Toggle::MicroBatch, 4});
  h.engine().post(SetToggleCommand{Toggle::GemmBackend, "builtin"});
  h.gate().grant(5);
  TRY_VERIFY(!h.all<ToggleAppliedEvent>().empty());
  TRY_VERIFY(!h.all<ToggleRefusedEvent>().empty());
  COMPARE(h.all<ToggleAppliedEvent>()[0].value.get<int>(), 4);
  const ToggleRefusedEvent refused = h.all<ToggleRefusedEvent>()[0];
  COMPARE(refused.toggle, Toggle::GemmBackend);
  COMPARE(refused.value.get<std::string>(), std::string("builtin"));
  VERIFY(refused.reason.find("no GEMM choice") != std::string::npos);
  VERIFY(h.all<ErrorEvent>().empty());  // a declined request is not an error
  h.gate().grant(5);                    // one more step, which runs at the toggled micro-batch
  TRY_VERIFY(!h.all<StepEvent>().empty() && h.all<StepEvent>().back().microBatch == 4);
  h.engine().post(StopCommand{});
  TRY_VERIFY(h.sawState(RunState::Finished));
}

TEST_CASE(aFailingStartIsReportedNotFatal) {
  Harness h({.totalSteps = 3});
  h.engine().post(StartCommand{{{"fail", true}}});
  TRY_VERIFY(h.sawState(RunState::Failed));
  COMPARE(h.all<ErrorEvent>()[0].category, std::string("input"));
  h.engine().post(StartCommand{nlohmann::json::object()});  // the engine still serves
  TRY_VERIFY(h.sawState(RunState::Finished));
}

TEST_CASE(closingTheInputStopsWithACheckpointAndEndsTheLoop) {
  Harness h({.totalSteps = 100000, .gated = true});
  h.engine().post(StartCommand{nlohmann::json::object()});
  h.gate().grant(5);
  TRY_VERIFY(h.all<StepEvent>().size() == 1);
  h.engine().closeInput();
  TRY_VERIFY(h.sawState(RunState::Finished));
  COMPARE(h.all<CheckpointEvent>().size(), std::size_t{1});
  COMPARE(h.all<CheckpointEvent>().back().step, std::int64_t{1});
}

// The sampler reads the job while its step is stuck: the charts keep moving during a hang.
TEST_CASE(readingsArriveWhileAStepIsStuck) {
  EngineOptions options;
  options.samplePeriodMs = 10;
  Harness h({.totalSteps = 3, .stuck = true}, options);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_VERIFY(h.all<MemoryEvent>().size() >= 5);
  VERIFY(h.all<StepEvent>().empty());  // all of them during the first step
  h.stuck().release();
  TRY_VERIFY(h.sawState(RunState::Finished));
}

// Between two readings the sampler polls the job every pollPeriodMs (the queue tracker's
// completions and peak), so that a step shorter than the reading period is seen.
TEST_CASE(theSamplerPollsBetweenReadings) {
  EngineOptions options;
  options.samplePeriodMs = 200;
  options.pollPeriodMs = 2;
  Harness h({.totalSteps = 3, .stuck = true}, options);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_VERIFY(h.job() != nullptr && h.job()->samples >= 2);
  // ~100 polls fit in a reading period; a loaded machine wakes the sampler late (CI's 2 cores with
  // builds beside it gave fewer than 10 per reading), so ask for more polls than readings.
  VERIFY(h.job()->polls >= 2 * h.job()->samples);
  h.stuck().release();
  TRY_VERIFY(h.sawState(RunState::Finished));
}

TEST_CASE(aHangIsPublishedOnceAsStickyAndOnHangRuns) {
  std::atomic<int> onHangCalls{0};
  EngineOptions options;
  options.samplePeriodMs = 10;
  options.onHang = [&] { ++onHangCalls; };
  Harness h({.totalSteps = 3, .stuck = true, .reportHang = true}, options);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_COMPARE(onHangCalls.load(), 1);
  const int samplesAtHang = h.job()->samples;
  TRY_VERIFY(h.job()->samples > samplesAtHang + 3);  // sampled on, reported no more
  const auto errors = h.all<ErrorEvent>();
  COMPARE(errors.size(), std::size_t{1});
  COMPARE(errors[0].category, std::string("hang"));
  COMPARE(errors[0].op, std::string("attention_backward"));
  VERIFY(errors[0].sticky);
  COMPARE(onHangCalls.load(), 1);
  h.stuck().release();
  TRY_VERIFY(h.sawState(RunState::Finished));
}

TEST_CASE(commandsWithoutARunAreRefused) {
  Harness h({.totalSteps = 3});
  h.engine().post(CheckpointNowCommand{});
  TRY_VERIFY(!h.all<ErrorEvent>().empty());
  VERIFY(h.all<ErrorEvent>()[0].message.find("no run is in progress") != std::string::npos);
}

namespace {

// A stand-in generation runner: a token every millisecond until cancelled (or `throws`).
EngineOptions generating(std::function<void()> throws = {}) {
  EngineOptions options;
  options.generate = [throws](const GenerateCommand& command, const EventSink& sink,
                              const std::atomic<bool>& cancel) {
    for (int i = 0;; ++i) {
      if (throws && i == 3)
        throws();
      if (cancel.load())
        return GenerationEndEvent{command.id, GenerationOutcome::Stopped, "stopped"};
      sink({0, TokenEvent{command.id, Answer::Base, "x"}});
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  return options;
}

GenerateCommand generateCommand(std::int64_t id) {
  GenerateCommand command;
  command.id = id;
  command.model = "/models/demo";
  return command;
}

}  // namespace

// Tokens stream as they come; cancel_generation ends the generation at its next token.
TEST_CASE(aGenerationStreamsUntilCancelled) {
  Harness h({.totalSteps = 3}, generating());
  h.engine().post(generateCommand(4));
  TRY_VERIFY(h.all<TokenEvent>().size() >= 3);
  h.engine().post(CancelGenerationCommand{3});  // another generation's: ignored
  h.engine().post(CancelGenerationCommand{4});
  TRY_VERIFY(!h.all<GenerationEndEvent>().empty());
  const GenerationEndEvent end = h.all<GenerationEndEvent>().front();
  COMPARE(end.id, std::int64_t{4});
  COMPARE(end.outcome, GenerationOutcome::Stopped);
  VERIFY(h.all<ErrorEvent>().empty());  // a cancel after the end needs no answer either
  for (const TokenEvent& token : h.all<TokenEvent>())
    COMPARE(token.id, std::int64_t{4});
}

// A cancel posted before its generation runs stops it before its first token (and a later cancel
// of another generation does not undo it).
TEST_CASE(aGenerationCancelledBeforeItRunsMakesNoToken) {
  Harness h({.totalSteps = 3}, generating());
  h.engine().post(generateCommand(8));  // keeps the engine thread busy until cancelled
  TRY_VERIFY(!h.all<TokenEvent>().empty());
  h.engine().post(generateCommand(9));
  h.engine().post(CancelGenerationCommand{9});
  h.engine().post(CancelGenerationCommand{8});
  TRY_VERIFY(h.all<GenerationEndEvent>().size() == 2);
  for (const GenerationEndEvent& end : h.all<GenerationEndEvent>())
    COMPARE(end.outcome, GenerationOutcome::Stopped);
  for (const TokenEvent& token : h.all<TokenEvent>())
    COMPARE(token.id, std::int64_t{8});
}

// The engine generates while no run is in progress, and only with a runner.
TEST_CASE(aGenerationIsRefusedDuringARunOrWithoutARunner) {
  {
    Harness h({.totalSteps = 1000, .gated = true}, generating());
    h.engine().post(StartCommand{nlohmann::json::object()});
    TRY_VERIFY(h.sawState(RunState::Running));
    h.engine().post(generateCommand(1));
    h.gate().grant(5);  // a step ends: the engine takes its commands
    TRY_VERIFY(!h.all<GenerationEndEvent>().empty());
    const GenerationEndEvent end = h.all<GenerationEndEvent>().front();
    COMPARE(end.outcome, GenerationOutcome::Failed);
    VERIFY2(end.message.find("a training run is in progress") != std::string::npos,
            end.message.c_str());
    h.engine().post(StopCommand{});
    h.gate().grant(1000);
  }
  Harness bare({.totalSteps = 3});
  bare.engine().post(generateCommand(2));
  TRY_VERIFY(!bare.all<GenerationEndEvent>().empty());
  VERIFY(bare.all<GenerationEndEvent>().front().message.find("does not generate") !=
         std::string::npos);
}

// A sticky device error while generating: reported as sticky, the generation failed, and run()
// returns kExitStickyError (the process exits; its supervisor starts another).
TEST_CASE(aStickyErrorInGenerationEndsTheEngine) {
  std::atomic<int> code{-1};
  std::vector<TimedEvent> events;
  std::mutex mutex;
  Engine engine(
      [](const nlohmann::json&, const EventSink&) -> std::unique_ptr<EngineJob> { return nullptr; },
      [&](const TimedEvent& e) {
        const std::lock_guard lock(mutex);
        events.push_back(e);
      },
      HelloEvent{}, generating([] {
        throw StickyDeviceError(ErrorEvent{"illegal_address", "attention_cached", 0,
                                           "an illegal memory access was encountered", "", false});
      }));
  std::thread thread([&] { code = engine.run(); });
  engine.post(generateCommand(5));
  thread.join();
  COMPARE(code.load(), kExitStickyError);
  const std::lock_guard lock(mutex);
  bool sticky = false;
  bool failed = false;
  for (const TimedEvent& e : events) {
    if (const auto* error = std::get_if<ErrorEvent>(&e.event))
      sticky = sticky || (error->sticky && error->op == "attention_cached");
    if (const auto* end = std::get_if<GenerationEndEvent>(&e.event))
      failed = end->outcome == GenerationOutcome::Failed &&
               end->message == "an illegal memory access was encountered";
  }
  VERIFY(sticky);
  VERIFY(failed);
}

// The sampler watches a generation as it watches a step: the hang check's report (asked only
// while a generation runs) is published once, sticky, and onHang runs; a generation that ends
// before its check reports one is not a hang.
TEST_CASE(aHangInGenerationIsPublishedOnceAsStickyAndOnHangRuns) {
  std::atomic<int> checks{0};
  std::atomic<int> onHangCalls{0};
  std::atomic<bool> hung{false};
  EngineOptions options = generating();
  options.samplePeriodMs = 10;
  options.onHang = [&] { ++onHangCalls; };
  options.generationHang = [&]() -> std::optional<ErrorEvent> {
    ++checks;
    if (!hung)
      return std::nullopt;
    return ErrorEvent{"hang", "attention_cached", 0, "hang: no progress for 10.0 s", "", false};
  };
  Harness h({.totalSteps = 3}, std::move(options));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  COMPARE(checks.load(), 0);  // nothing generates: nothing is checked
  h.engine().post(generateCommand(6));
  TRY_VERIFY(checks.load() >= 3);
  VERIFY(h.all<ErrorEvent>().empty());
  hung = true;
  TRY_COMPARE(onHangCalls.load(), 1);
  const int checksAtHang = checks.load();
  TRY_VERIFY(checks.load() > checksAtHang + 3);  // checked on, reported no more
  const auto errors = h.all<ErrorEvent>();
  COMPARE(errors.size(), std::size_t{1});
  COMPARE(errors[0].category, std::string("hang"));
  COMPARE(errors[0].op, std::string("attention_cached"));
  VERIFY(errors[0].sticky);
  COMPARE(onHangCalls.load(), 1);
  h.engine().post(CancelGenerationCommand{6});
  TRY_VERIFY(!h.all<GenerationEndEvent>().empty());
}
